#!/usr/bin/env python3
"""Throughput against GPUs from sim-zeropp-scaling.sh's runs: ZeRO-3 and ZeRO++ on each
cluster, without overlap and with prefetch 1, one PNG. usage: sim-zeropp-plot.py RUN_DIR OUT.png"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CLUSTERS = {"low": "16 x V100-class, 100 Gbit/s", "high": "8 x A100-class, 8 x 100 Gbit/s"}


def main() -> None:
    runs, out = Path(sys.argv[1]), sys.argv[2]
    figure, axes = plt.subplots(1, 2, figsize=(10, 4))
    for axis, (cluster, title) in zip(axes, CLUSTERS.items()):
        for prefetch, style in ((0, "-"), (1, "--")):
            points = []
            for path in runs.glob(f"zeropp_{cluster}_*_prefetch{prefetch}.json"):
                run = json.loads(path.read_text())
                points.append((run["ranks"], run["steps"]["ZeRO-3"]["tokens_per_second"],
                               run["steps"]["ZeRO++"]["tokens_per_second"]))
            points.sort()
            gpus = [p[0] for p in points]
            overlap = f", prefetch {prefetch}" if prefetch else ", no overlap"
            axis.plot(gpus, [p[1] for p in points], "o" + style, color="C0",
                      label="ZeRO-3" + overlap)
            axis.plot(gpus, [p[2] for p in points], "s" + style, color="C1",
                      label="ZeRO++" + overlap)
        axis.set_title(title)
        axis.set_xlabel("GPUs")
        axis.set_ylabel("tokens/s (simulated)")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("zccl-sim: 18 B parameters, 2048 tokens per GPU per step")
    figure.tight_layout()
    figure.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
