"""torch.distributed's "nccl" backend with zccl's NCCL drop-in preloaded (1 rank, device
memory): the results must be right and the shim must be the NCCL that torch called."""
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    failures = []
    x = torch.arange(4096, device="cuda", dtype=torch.float32)
    want = x.clone()
    dist.all_reduce(x)
    if not torch.equal(x, want):
        failures.append("all_reduce")
    gathered = torch.empty(4096, device="cuda")
    dist.all_gather_into_tensor(gathered, x)
    if not torch.equal(gathered, want):
        failures.append("all_gather_into_tensor")
    scattered = torch.empty(4096, device="cuda")
    dist.reduce_scatter_tensor(scattered, x)
    if not torch.equal(scattered, want):
        failures.append("reduce_scatter_tensor")
    torch.cuda.synchronize()
    with open("/proc/self/maps") as maps:
        shim_loaded = "libzccl_nccl" in maps.read()
    if not shim_loaded:
        failures.append("libzccl_nccl.so is not mapped: the drop-in was not used")
    dist.destroy_process_group()
    print("torch nccl + zccl drop-in:", "FAILED " + ", ".join(failures) if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
