#!/usr/bin/env bash
# One command on a GPU machine: configure with CUDA, build, run every GPU test and print a
# summary. GoogleTest comes from .carry/googletest where the machine has none (make carry
# copies Debian's sources there; the device tool sends it with `carry: [".carry"]`).
#   scripts/gpu-check.sh [BUILD_DIR]
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
cd "$root"
declare -a results=()
record() { results+=("$(printf '%-44s %s' "$1" "$2")"); }
step() {  # step NAME COMMAND...: runs it, records PASS / FAIL / SKIP (exit 77)
  local name=$1
  shift
  echo "=== $name: $*"
  "$@"
  local status=$?
  case $status in
    0) record "$name" PASS ;;
    77) record "$name" SKIP ;;
    *) record "$name" "FAIL (exit $status)" ;;
  esac
  return 0
}

nvidia-smi -L || echo "gpu-check: nvidia-smi found no GPU; the GPU tests will skip"
gtest_flags=()
[ -d "$root/.carry/googletest" ] && gtest_flags=(-DZCCL_GTEST_SOURCE_DIR="$root/.carry/googletest")
step configure cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DZCCL_WITH_CUDA=ON \
  -DZCCL_BUILD_PERF=OFF "${gtest_flags[@]}"
step build cmake --build "$build" -j "$(nproc)"

# The CUDA quantization kernels against the CPU's, byte for byte.
step "quant_cuda (kernels = CPU bytes)" ctest --test-dir "$build" -R '^quant_cuda$' \
  --output-on-failure
# The NCCL drop-in on host memory, as in CI, and its unit tests (the real-NCCL loader).
step "NCCL drop-in, host memory" ctest --test-dir "$build" -R '^nccl_' --output-on-failure
# PyTorch's ProcessGroupNCCL with the drop-in preloaded, 1 rank on the GPU: device memory
# goes through the shim to the real NCCL.
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  step "torch nccl backend, LD_PRELOAD drop-in" env LD_PRELOAD="$build/libzccl_nccl.so" \
    ZCCL_DEBUG=INFO python3 tests/gpu/torch_nccl_preload.py
else
  record "torch nccl backend, LD_PRELOAD drop-in" "SKIP (no torch with CUDA)"
fi

echo
echo "=== gpu-check summary ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
printf '%s\n' "${results[@]}"
printf '%s\n' "${results[@]}" | grep -q FAIL && exit 1
exit 0
