#!/usr/bin/env python3
"""The simulated testbed against the measured one: every row of make bench-link's table in
docs/testbed.md (2 nodes x 1 or 2 ranks, 1 and 10 Gbit/s, bfloat16, plain / INT8 / INT4) run
again by zccl-sim on the same shape, busbw side by side, and the share of rows within 15%.

usage: sim-validate.py ZCCL_SIM [KERNEL_GBPS] > table.md
KERNEL_GBPS: the rate this host's kernels run at (GB/s of data touched; default 4)."""
import re
import subprocess
import sys
from pathlib import Path

ROW = re.compile(r"^\| (\d+)gbit \| 2 x (\d) \| ([a-z-]+) \| (\d+) MiB \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|")
COLLECTIVES = {"all-gather": "all_gather", "reduce-scatter": "reduce_scatter",
               "all-reduce": "all_reduce"}


def simulate(tool: str, gbit: int, per_node: int, collective: str, mib: int, wire: str,
             kernel_gbps: str) -> float:
    machine = (f"gpus-per-node={per_node},nics=1,nic-gbps={gbit},intra-gbps=10,"
               f"inter-latency-us=50,kernel-gbps={kernel_gbps}")
    out = subprocess.run([tool, "--ranks", str(2 * per_node), "--collective", collective,
                          "--bytes", f"{mib}M", "--dtype", "bfloat16", "--wire", wire,
                          "--machine", machine], capture_output=True, text=True, check=True)
    row = [line for line in out.stdout.splitlines() if line and not line.startswith("#")][0]
    return float(row.split()[5])  # busbw


def main() -> None:
    tool = sys.argv[1]
    kernel_gbps = sys.argv[2] if len(sys.argv) > 2 else "4"
    table = Path(__file__).resolve().parent.parent / "docs" / "testbed.md"
    print(f"kernels at {kernel_gbps} GB/s; busbw GB/s, measured (make bench-link) / simulated\n")
    print("| link | nodes x ranks | collective | size | plain | int8 | int4 |")
    print("|---|---|---|---|---|---|---|")
    within = total = 0
    for line in table.read_text().splitlines():
        m = ROW.match(line)
        if not m:
            continue
        gbit, per_node, name, mib = int(m[1]), int(m[2]), m[3], int(m[4])
        cells = []
        for wire, measured in zip(("none", "int8", "int4"), (m[5], m[6], m[7])):
            simulated = simulate(tool, gbit, per_node, COLLECTIVES[name], mib, wire, kernel_gbps)
            ratio = simulated / float(measured)
            total += 1
            within += abs(ratio - 1) <= 0.15
            cells.append(f"{measured} / {simulated:.3f} ({ratio - 1:+.0%})")
        print(f"| {gbit} Gbit/s | 2 x {per_node} | {name} | {mib} MiB | " + " | ".join(cells) + " |")
    print(f"\n{within} of {total} figures within 15% of the measured ones")


if __name__ == "__main__":
    main()
