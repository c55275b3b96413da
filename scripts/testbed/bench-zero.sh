#!/usr/bin/env bash
# make bench-zero: the ZeRO demo on 2 testbed nodes of 2 ranks behind a 1 Gbit/s link, ZeRO-3
# against ZeRO++ on an MLP of about 30 M parameters in bfloat16 with a small batch (modulus 7:
# it learns within the 80 steps), so that
# ZeRO-3's step is dominated by communication. Every step's loss and wall-clock time go to
# OUT (bench/zero), rank 0's report to OUT/mlp_1gbit.node0.log (make sim-validate reads its
# compute and collective times); then the table and the loss-against-time plot.
#   scripts/testbed/bench-zero.sh BUILD_DIR [OUT] [STEPS]   (BENCH_ZERO_PARTS="demo fsdp")
set -euo pipefail
build=$(cd "$1" && pwd)
out=$(mkdir -p "${2:-bench/zero}" && cd "${2:-bench/zero}" && pwd)
steps=${3:-80}
here=$(cd "$(dirname "$0")" && pwd)

run() {
  set -euo pipefail
  read -r -a addrs <<<"$TESTBED_ADDRS"
  pids=()
  for i in 0 1; do
    "$TESTBED_EXEC" "$i" env ZCCL_INTER_NODE_GBPS=0.125 "$BUILD/zcclrun" -n 2 --nnodes 2 \
      --node-rank "$i" --root "${addrs[0]}:29600" --timeout 3600 "$BUILD/examples/zero_demo" \
      --model mlp --hidden 2048 --layers 7 --batch 16 --modulus 7 --lr 5e-4 --steps "$STEPS" --print-every 10 \
      --log "$OUT/mlp_1gbit.csv" >"$OUT/mlp_1gbit.node$i.log" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  cat "$OUT/mlp_1gbit.node0.log"
}
# The FSDP2 example over the torch backend, where `make torch` has made its environment:
# torchrun on each node, ZeRO-3 against ZeRO++ on a decoder of about 20 M parameters over zccl,
# then ZeRO-3 over gloo.
run_fsdp() {
  set -euo pipefail
  read -r -a addrs <<<"$TESTBED_ADDRS"
  : >"$OUT/fsdp.md"
  for backend in zccl gloo; do
    pids=()
    for i in 0 1; do
      "$TESTBED_EXEC" "$i" env ZCCL_INTER_NODE_GBPS=0.125 ZCCL_TIMEOUT_S=600 \
        GLOO_SOCKET_IFNAME="$TESTBED_IFACE" \
        "$TORCH_PYTHON" -m torch.distributed.run --nnodes 2 --node-rank "$i" --nproc-per-node 2 \
        --master-addr "${addrs[0]}" --master-port 29650 "$ROOT/examples/torch/fsdp_train.py" \
        --backend "$backend" --dim 512 --layers 6 --heads 8 --batch 8 --lr 1e-3 \
        --steps "$STEPS" --warmup 3 --csv "$OUT/fsdp_1gbit_$backend.steps" \
        >"$OUT/fsdp_1gbit_$backend.node$i.log" 2>&1 &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    grep -v "^W[0-9]" "$OUT/fsdp_1gbit_$backend.node0.log" | tee -a "$OUT/fsdp.md"
  done
}
export -f run run_fsdp
export BUILD=$build OUT=$out STEPS=$steps ROOT=$(cd "$here/../.." && pwd)
parts=${BENCH_ZERO_PARTS:-demo fsdp}  # either or both
[[ " $parts " == *" demo "* ]] && "$here/testbed.sh" --nodes 2 --rate 1gbit -- bash -c run
TORCH_PYTHON=${TORCH_PYTHON:-$ROOT/.venv-torch/bin/python}
if [[ " $parts " != *" fsdp "* ]]; then
  :
elif "$TORCH_PYTHON" -c 'import zccl_torch' 2>/dev/null; then
  export TORCH_PYTHON STEPS=${FSDP_STEPS:-40}
  "$here/testbed.sh" --nodes 2 --rate 1gbit -- bash -c run_fsdp
else
  echo "bench-zero: no zccl_torch in $TORCH_PYTHON (make torch): the FSDP2 run is left out"
fi
# The distribution's Python: python3-matplotlib is installed for it.
/usr/bin/python3 "$here/report.py" zero "$out"
