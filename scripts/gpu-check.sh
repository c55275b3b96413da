#!/usr/bin/env bash
# One command on a GPU machine: configure with CUDA, build, run every GPU test and print a
# summary. GoogleTest comes from .carry/googletest where the machine has none (make carry
# copies Debian's sources there; the device tool sends it with `carry: [".carry"]`).
#   scripts/gpu-check.sh [BUILD_DIR]
# Each step after the build is stopped after GPU_CHECK_STEP_LIMIT seconds (default 300) and
# reads FAIL (exit 124): a hang costs one step, not the machine's whole lease. Where
# GPU_CHECK_BUDGET is set, the steps that would start after that many seconds of the script
# read SKIP (out of time), so that the summary is printed inside a lease.
set -uo pipefail
limit=${GPU_CHECK_STEP_LIMIT:-300}
budget=${GPU_CHECK_BUDGET:-0}
started=$SECONDS

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
cd "$root" || exit
declare -a results=()
record() { results+=("$(printf '%-44s %s' "$1" "$2")"); }
# begin NAME ARGS...: announces a step with the seconds spent so far; false (recorded) once the
# budget is spent.
begin() {
  local name=$1 elapsed=$((SECONDS - started))
  shift
  if [ "$budget" -gt 0 ] && [ "$elapsed" -ge "$budget" ]; then
    record "$name" "SKIP (out of time)"
    return 1
  fi
  echo "=== [${elapsed}s] $name: $*"
}
step() {  # step NAME COMMAND...: runs it, records PASS / FAIL / SKIP (exit 77)
  local name=$1
  shift
  begin "$name" "$@" || return 0
  timeout -k 10 "$limit" "$@"
  local status=$?
  case $status in
    0) record "$name" PASS ;;
    77) record "$name" SKIP ;;
    *) record "$name" "FAIL (exit $status)" ;;
  esac
  return 0
}
# ctest_step NAME CTEST_ARGS...: ctest exits 0 when its tests skip (exit 77), so the summary
# reads its report: PASS when a test passed (naming those that skipped), SKIP when all
# skipped, FAIL when one failed or none matched.
ctest_step() {
  local name=$1
  shift
  begin "$name" ctest "$@" || return 0
  local log status passed skipped
  log=$(ctest --test-dir "$build" --output-on-failure --timeout "$limit" "$@" 2>&1)
  status=$?
  echo "$log"
  passed=$(grep -c "Test *#.* Passed" <<<"$log")
  skipped=$(grep -c "Test *#.*Skipped" <<<"$log")
  if [ "$status" -ne 0 ]; then
    record "$name" "FAIL (exit $status)"
  elif [ "$passed" -gt 0 ]; then
    record "$name" "PASS ($passed passed, $skipped skipped)"
  elif [ "$skipped" -gt 0 ]; then
    record "$name" "SKIP"
  else
    record "$name" "FAIL (no test ran)"
  fi
}

# gtest_step NAME COMMAND...: a GoogleTest run whose tests skipped reads SKIP.
gtest_step() {
  local name=$1
  shift
  begin "$name" "$@" || return 0
  local log status
  log=$(timeout -k 10 "$limit" "$@" 2>&1)
  status=$?
  echo "$log"
  if [ "$status" -ne 0 ]; then
    record "$name" "FAIL (exit $status)"
  elif grep -q "^\[  SKIPPED \]" <<<"$log"; then
    record "$name" "SKIP"
  else
    record "$name" PASS
  fi
}

nvidia-smi -L || echo "gpu-check: nvidia-smi found no GPU; the GPU tests will skip"
echo "=== tools: $(nvcc --version 2>&1 | tail -1); $(c++ --version | head -1);" \
  "ucx $(pkg-config --modversion ucx 2>&1); hwloc $(pkg-config --modversion hwloc 2>&1);" \
  "torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"
# UCX's development files where the machine has only its libraries (make carry brings them).
if ! pkg-config --exists ucx && [ -d "$root/.carry/ucx" ]; then
  export PKG_CONFIG_PATH=$root/.carry/ucx/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  echo "=== UCX's headers from .carry/ucx over the machine's libraries"
fi
# The real NCCL where the loader's path lacks it: the copy PyTorch's wheels bring.
if [ -z "${ZCCL_NCCL_LIB:-}" ] && ! ldconfig -p | grep -q 'libnccl\.so\.2 '; then
  nccl=$(find /usr/local/cuda/lib64 /usr/lib /opt "$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)" \
    -name libnccl.so.2 2>/dev/null | head -1)
  [ -n "$nccl" ] && export ZCCL_NCCL_LIB=$nccl
  echo "=== the real NCCL: ${ZCCL_NCCL_LIB:-not found}"
fi
gtest_flags=()
[ -d "$root/.carry/googletest" ] && gtest_flags=(-DZCCL_GTEST_SOURCE_DIR="$root/.carry/googletest")
# Warnings stay warnings: this machine's compiler is not the one zccl is checked with.
generator=()
[ -n "${GPU_CHECK_NINJA:-}" ] && generator=(-G Ninja)
step configure cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DZCCL_WITH_CUDA=ON -DZCCL_WERROR=OFF "${gtest_flags[@]}"
# What the steps below run, not the host-only tests (GPU_CHECK_TARGETS=all builds everything).
targets=(zccl zccl_nccl zcclrun zccl-topo zccl_quant_cuda_tests zccl_reduce_cuda_tests
  kernels_cuda_bench staged_test nccl_compat_unit_test nccl_client_mpi nccl_client
  nccl_client_real nccl_policy_test all_gather_perf reduce_scatter_perf all_reduce_perf
  zero_device_test zero_demo)
[ "${GPU_CHECK_TARGETS:-}" = all ] && targets=(all)
limit=0 step build cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

# The CUDA quantization kernels against the CPU's, byte for byte.
ctest_step "quant_cuda (kernels = CPU bytes)" -R '^quant_cuda$'
# The CUDA reductions against the CPU's, byte for byte.
ctest_step "reduce_cuda (reductions = CPU bytes)" -R '^reduce_cuda$'
# The kernels' speed: GB/s of input beside a device-to-device copy, 16 and 256 MiB.
step "CUDA kernels against a copy (GB/s)" "$build/perf/kernels_cuda_bench"
# Every collective on device memory through the staged transport, 3 ranks sharing the GPU
# (and as 2 nodes x 2): byte-identical to the host path.
gtest_step "staged collectives, 3 ranks on one GPU" "$build/zcclrun" -n 3 \
  "$build/tests/staged_test" --gtest_filter='*/cuda_*'
gtest_step "staged collectives, 2 nodes x 2 on one GPU" env ZCCL_RANKS_PER_NODE=2 \
  "$build/zcclrun" -n 4 "$build/tests/staged_test" --gtest_filter='*/cuda_*'
# The NCCL device backend: one rank (NCCL refuses two on one GPU), and where the machine has
# several GPUs one rank on each, every collective through NCCL against the host path.
gtest_step "NCCL device backend, 1 rank" env ZCCL_DEVICE_BACKEND=nccl "$build/zcclrun" -n 1 \
  "$build/tests/staged_test" --gtest_filter='*/cuda_api'
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${gpus:-0}" -ge 2 ]; then
  gtest_step "NCCL device backend, $((gpus > 4 ? 4 : gpus)) ranks, a GPU each" \
    env ZCCL_DEVICE_BACKEND=nccl ZCCL_TEST_GPU_PER_RANK=1 "$build/zcclrun" \
    -n $((gpus > 4 ? 4 : gpus)) "$build/tests/staged_test" --gtest_filter='*/cuda_api'
else
  record "NCCL device backend, a GPU per rank" "SKIP (one GPU)"
fi
# The NCCL drop-in on host memory, as in CI, and its unit tests (the real-NCCL loader); its
# client program on device buffers: ranks sharing the GPU (zccl's staged backend), and one
# rank over the real NCCL.
ctest_step "NCCL drop-in, host memory" -R '^nccl_' -E device
step "NCCL client on device buffers, 3 ranks on one GPU" "$build/zcclrun" -n 3 \
  "$build/tests/nccl_client" --device
step "NCCL client on device buffers, 1 rank over NCCL" env ZCCL_DEVICE_BACKEND=nccl \
  "$build/zcclrun" -n 1 "$build/tests/nccl_client" --device
# The perf binaries on device memory (-M device), results checked: 2 ranks sharing the GPU
# through the staged backend, plain and quantized; one rank over NCCL beside NCCL's own
# collective (-B, under mpiexec).
mpiexec=$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
mpiflags=$(sed -n 's/^MPIEXEC_PREFLAGS:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null | tr ';' ' ')
perf_sizes=(-b 1M -e 64M -f 4 -n 5 -w 2 -d bfloat16 -M device)
for run in "all_gather:none" "all_gather:int8" "reduce_scatter:none" "reduce_scatter:int4" \
  "all_reduce:none"; do
  step "${run%%:*}_perf -M device -q ${run#*:}, 2 ranks on one GPU" "$build/zcclrun" -n 2 \
    "$build/perf/${run%%:*}_perf" "${perf_sizes[@]}" -q "${run#*:}"
done
# shellcheck disable=SC2086
step "all_reduce_perf -M device -B, 1 rank over NCCL" env ZCCL_DEVICE_BACKEND=nccl \
  "${mpiexec:-mpiexec}" -n 1 $mpiflags "$build/perf/all_reduce_perf" "${perf_sizes[@]}" -B
# The ZeRO optimizer with its state in GPU memory: CUDA's conversions and Adam update give
# the host's bits, every stage and ZeRO++ (2 ranks sharing the GPU); then the demo's table
# on 2 emulated nodes of 2 ranks with the state on the GPU.
gtest_step "ZeRO state on the GPU = on the host, 2 ranks" "$build/zcclrun" -n 2 \
  "$build/tests/zero_device_test" --gtest_filter='*Gpu*'
step "zero_demo --device cuda, 2 nodes x 2 on one GPU" env ZCCL_RANKS_PER_NODE=2 \
  "$build/zcclrun" -n 4 "$build/examples/zero_demo" --device cuda --model mlp --steps 100
# PyTorch's ProcessGroupNCCL with the drop-in preloaded, 1 rank on the GPU: device memory
# goes through the shim to the real NCCL.
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  step "torch nccl backend, LD_PRELOAD drop-in (zccl's device path)" \
    env LD_PRELOAD="$build/libzccl_nccl.so" ZCCL_DEBUG=INFO python3 tests/gpu/torch_nccl_preload.py
  step "torch nccl backend, LD_PRELOAD drop-in (ZCCL_NCCL_DEVICE=nccl)" \
    env LD_PRELOAD="$build/libzccl_nccl.so" ZCCL_NCCL_DEVICE=nccl ZCCL_DEBUG=INFO \
    python3 tests/gpu/torch_nccl_preload.py
else
  record "torch nccl backend, LD_PRELOAD drop-in" "SKIP (no torch with CUDA)"
fi

# zccl's own torch backend on CUDA tensors (the device path, staged: 2 processes share the
# GPU), every operation against gloo on the CPU; zccl_torch built against this machine's torch.
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  step "zccl_torch build" env ZCCL_BUILD_DIR="$build" python3 -m pip install --no-deps \
    --no-build-isolation --target "$build/python" ./python
  step "zccl_torch on CUDA tensors, 2 processes" env PYTHONPATH="$build/python" \
    ZCCL_TORCH_TEST_DEVICE=cuda tests/torch/run.sh python3 2 tests/torch/ops_vs_gloo.py
  # FSDP2 with the model and its collectives on the GPU, 2 emulated nodes x 2 processes:
  # lossless against gloo on the CPU, ZeRO++ and ZeRO++ 4-bit within 3% with their cuts.
  step "FSDP2 on CUDA over zccl, 2 nodes x 2" env PYTHONPATH="$build/python" \
    ZCCL_RANKS_PER_NODE=2 FSDP_TEST_DEVICE=cuda FSDP_TEST_STEPS=60 \
    tests/torch/run.sh python3 4 tests/torch/fsdp_test.py
else
  record "zccl_torch on CUDA tensors" "SKIP (no torch with CUDA)"
fi

echo
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "=== gpu-check summary (${gpu:-no GPU visible}; ${mpiexec:-mpiexec}:" \
  "$("${mpiexec:-mpiexec}" --version 2>&1 | head -1))"
printf '%s\n' "${results[@]}"
printf '%s\n' "${results[@]}" | grep -q FAIL && exit 1
exit 0
