#!/usr/bin/env bash
# make bench-fidelity: training loss of ZeRO-3, ZeRO++ and ZeRO++ 4-bit over the same steps on
# 2 emulated nodes of 2 ranks (the loss does not depend on the link): the ZeRO demo's MLP and
# transformer (zero_demo), and the FSDP2 example where `make torch` has made its environment.
# Every step's loss goes to OUT as CSV; then fidelity.md and one PNG per model.
#   scripts/bench-fidelity.sh BUILD_DIR [OUT] [STEPS]
set -euo pipefail
build=$(cd "$1" && pwd)
out=$(mkdir -p "${2:-bench/fidelity}" && cd "${2:-bench/fidelity}" && pwd)
steps=${3:-400}
root=$(cd "$(dirname "$0")/.." && pwd)
ZCCL_RANKS_PER_NODE=2 "$build/zcclrun" -n 4 "$build/examples/zero_demo" --steps "$steps" \
  --print-every 100 --log "$out/demo.csv" | tee "$out/demo.log"
# Ablations, as SDP4Bit and LoCo report them: weight differences without error feedback, both
# with smoothing, and error feedback's residuals kept in bfloat16 and in int8 (LoCo's).
for flags in "--qwz-diff --hpz --qgz" "--qwz-diff --hpz --qgz-ef --smoothing" \
  "--qwz-diff --hpz --qgz-ef --ef-precision bf16" \
  "--qwz-diff --hpz --qgz-ef --ef-precision int8"; do
  name=$(echo "$flags" | tr -d ' -')
  ZCCL_RANKS_PER_NODE=2 "$build/zcclrun" -n 4 "$build/examples/zero_demo" --steps "$steps" \
    --print-every 100 --stage 3 $flags --log "$out/demo_$name.csv" | tail -4
done
python=${TORCH_PYTHON:-$root/.venv-torch/bin/python}
if "$python" -c 'import zccl_torch' 2>/dev/null; then
  ZCCL_RANKS_PER_NODE=2 "$python" -m torch.distributed.run --standalone --nproc-per-node 4 \
    "$root/examples/torch/fsdp_train.py" --steps "$steps" --csv "$out/fsdp.csv" \
    2>&1 | grep -v "^W[0-9]" | tee "$out/fsdp.log"
  for kept in bf16 int8; do
    ZCCL_RANKS_PER_NODE=2 "$python" -m torch.distributed.run --standalone --nproc-per-node 4 \
      "$root/examples/torch/fsdp_train.py" --steps "$steps" --config zeropp4 \
      --feedback-precision "$kept" --csv "$out/fsdp_ef_$kept.csv" 2>&1 | grep -v "^W[0-9]" | tail -4
  done
else
  echo "bench-fidelity: no zccl_torch in $python (make torch): the FSDP2 run is left out"
fi
/usr/bin/python3 "$root/scripts/testbed/report.py" fidelity "$out"
