#!/usr/bin/env bash
# make bench-zero: the ZeRO demo on 2 testbed nodes of 2 ranks behind a 1 Gbit/s link, ZeRO-3
# against ZeRO++ on an MLP of about 30 M parameters in bfloat16 with a small batch (modulus 7:
# it learns within the 80 steps), so that
# ZeRO-3's step is dominated by communication. Every step's loss and wall-clock time go to
# OUT (bench/zero); then the table and the loss-against-time plot.
#   scripts/testbed/bench-zero.sh BUILD_DIR [OUT] [STEPS]
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
      --log "$OUT/mlp_1gbit.csv" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
}
export -f run
export BUILD=$build OUT=$out STEPS=$steps
"$here/testbed.sh" --nodes 2 --rate 1gbit -- bash -c run
# The distribution's Python: python3-matplotlib is installed for it.
/usr/bin/python3 "$here/report.py" zero "$out"
