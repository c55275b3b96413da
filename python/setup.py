# Builds zccl_torch against the torch of the running interpreter and a zccl build tree
# (ZCCL_BUILD_DIR, default ../build): `pip install --no-build-isolation ./python`.
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
build_dir = os.path.abspath(os.environ.get("ZCCL_BUILD_DIR", os.path.join(root, "build")))
if not os.path.exists(os.path.join(build_dir, "libzccl.so")):
    raise SystemExit(f"zccl_torch: no libzccl.so in ZCCL_BUILD_DIR={build_dir}; build zccl first")

setup(
    name="zccl_torch",
    version="0.1.0",
    description="torch.distributed backend 'zccl': ZeRO++'s collectives for DDP and FSDP2",
    packages=["zccl_torch"],
    ext_modules=[
        CppExtension(
            "zccl_torch._zccl",
            # Longest to compile first (torch's pybind11 headers, then c10d's), so that the
            # compilers' jobs end together.
            sources=[f"zccl_torch/csrc/{name}.cc"
                     for name in ("module", "backend", "work", "store", "call_states")],
            include_dirs=[os.path.join(root, "include")],
            library_dirs=[build_dir],
            libraries=["zccl"],
            runtime_library_dirs=[build_dir],
            # Without debug information (Python's own flags ask for it): it is 40% of this
            # build's time, spent on torch's headers.
            extra_compile_args=["-O2", "-g0", "-Wall"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
    # init_process_group("zccl") finds the backend without an import.
    entry_points={"torch.distributed.backends": ["zccl = zccl_torch:register"]},
)
