#!/usr/bin/env bash
# ZeRO-3 and ZeRO++ steps simulated by zccl-sim at the ZeRO++ paper's scales: 64 to 384 GPUs
# on a low-bandwidth cluster (nodes of 16 V100-class GPUs, one 100 Gbit/s NIC each) and a
# high-bandwidth one (nodes of 8 A100-class GPUs, eight 100 Gbit/s NICs), an 18 B-parameter
# model, 2048 tokens per GPU per step; each without overlap and with the ZeRO layer's prefetch
# of one module (gathers ahead, gradient reduce-scatters behind). Prints a markdown table
# (docs/figures/sim_zeropp.md) and writes the JSON of every run under OUT.
# usage: sim-zeropp-scaling.sh ZCCL_SIM [OUT]
set -euo pipefail
sim=$1
out=${2:-bench/sim}
mkdir -p "$out"
declare -A machine=(
  [low]="gpus-per-node=16,intra-gbps=150,nics=1,nic-gbps=100"
  [high]="gpus-per-node=8,intra-gbps=300,nics=8,nic-gbps=100"
)
declare -A tflops=([low]=50 [high]=150)
declare -A label=([low]="16 x V100-class, 100 Gbit/s" [high]="8 x A100-class, 8 x 100 Gbit/s")
echo "| cluster | GPUs | ZeRO-3 tokens/s | ZeRO++ tokens/s | ZeRO++ / ZeRO-3 | prefetch 1: ZeRO-3 tokens/s | ZeRO++ tokens/s | ZeRO++ / ZeRO-3 | cross-node bytes ZeRO-3 / ZeRO++ |"
echo "|---|---|---|---|---|---|---|---|---|"
for cluster in low high; do
  for ranks in 64 128 256 384; do
    for prefetch in 0 1; do
      "$sim" --ranks "$ranks" --zero both --params 18e9 --layers 10 --tokens 2048 \
        --tflops "${tflops[$cluster]}" --machine "${machine[$cluster]}" --prefetch "$prefetch" \
        --json "$out/zeropp_${cluster}_${ranks}_prefetch$prefetch.json" \
        >"$out/zeropp_${cluster}_${ranks}_prefetch$prefetch.txt" 2>/dev/null
    done
    python3 - "$out/zeropp_${cluster}_${ranks}" "${label[$cluster]}" "$ranks" <<'PY'
import json, sys
cells = []
for prefetch in (0, 1):
    run = json.load(open(f"{sys.argv[1]}_prefetch{prefetch}.json"))
    z3, zpp = run["steps"]["ZeRO-3"], run["steps"]["ZeRO++"]
    cells += [f"{z3['tokens_per_second']:.0f}", f"{zpp['tokens_per_second']:.0f}",
              f"{zpp['tokens_per_second'] / z3['tokens_per_second']:.2f}"]
cells.append(f"{z3['cross_node_bytes_per_rank'] / zpp['cross_node_bytes_per_rank']:.2f}")
print(f"| {sys.argv[2]} | {sys.argv[3]} | " + " | ".join(cells) + " |")
PY
  done
done
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  /usr/bin/python3 "$(dirname "$0")/sim-zeropp-plot.py" "$out" docs/figures/sim_zeropp.png
fi
