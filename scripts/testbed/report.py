#!/usr/bin/env python3
"""Tables and plots of the testbed benchmarks.

  report.py link DIR   the perf binaries' JSON (bench-link.sh): DIR/link.md, DIR/link.png
  report.py zero DIR   zero_demo's step logs (bench-zero.sh): DIR/zero.md, DIR/zero.png
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

PATHS = ["plain", "int8", "int4", "planner"]


def load_link(directory):
    """{(rate, ppn, collective): {path: {size: busbw}}}, MPI's collective as path "mpi": the
    median of the runs (bench-link.sh's _rN files) of each figure. Path "paired" is the
    planner's busbw over the faster of the exact and the allowed format forced, timed in the
    same run (perf -P), the median of the runs' ratios."""
    samples = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        match = re.match(r"(\w+)_(\d)ppn_(\w+?)_(plain|int8|int4|planner)(?:_r\d+)?\.json$",
                         os.path.basename(path))
        if not match:
            continue
        rate, ppn, collective, name = match.groups()
        with open(path) as f:
            data = json.load(f)
        series = samples.setdefault((rate, int(ppn), collective), {})
        for row in data["results"]:
            series.setdefault(name, {}).setdefault(row["size"], []).append(
                row["out_of_place"]["busbw"])
            if "native" in row:
                series.setdefault("mpi", {}).setdefault(row["size"], []).append(
                    row["native"]["busbw"])
            if "forced_exact" in row and "forced_format" in row:
                best = max(row["forced_exact"]["busbw"], row["forced_format"]["busbw"])
                series.setdefault("paired", {}).setdefault(row["size"], []).append(
                    row["out_of_place"]["busbw"] / best)
    return {key: {path: {size: statistics.median(values) for size, values in sizes.items()}
                  for path, sizes in series.items()}
            for key, series in samples.items()}


def size_name(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def link_report(directory):
    runs = load_link(directory)
    lines = ["| link | nodes x ranks | collective | size | plain | int8 | int4 | planner | "
             "MPI | int8/plain | int4/plain | planner/best allowed | same run |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (rate, ppn, collective), series in sorted(runs.items()):
        for size in sorted(series.get("plain", {})):
            value = {p: series.get(p, {}).get(size, float("nan")) for p in PATHS + ["mpi"]}
            # The planner may choose between exact and the one format it is allowed.
            allowed = "int8" if collective == "all_gather" else "int4"
            best = max(value["plain"], value[allowed])
            lines.append(
                f"| {rate} | 2 x {ppn} | {collective.replace('_', '-')} | {size_name(size)} | "
                + " | ".join(f"{value[p]:.3f}" for p in PATHS + ["mpi"])
                + f" | {value['int8'] / value['plain']:.2f} | {value['int4'] / value['plain']:.2f}"
                + f" | {value['planner'] / best:.2f}"
                + f" | {series.get('paired', {}).get(size, float('nan')):.2f} |")
    table = "\n".join(lines) + "\n\nbusbw in GB/s (nccl-tests' bus bandwidth of the logical "\
        "bfloat16 bytes, the median of the runs); planner: ZCCL_QUANT=allow-int8 (all-gather) "\
        "or allow-int4, the link's rate in ZCCL_INTER_NODE_GBPS; planner/best allowed: against "\
        "the faster of plain and the allowed format in their own runs; same run: against the "\
        "faster of the exact and the allowed format forced in the planner's own run, on the "\
        "same buffers (perf -P), the median of the runs' ratios.\n"
    with open(os.path.join(directory, "link.md"), "w") as f:
        f.write(table)
    print(table)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = sorted(runs)
    figure, axes = plt.subplots(len(keys) // 3, 3, figsize=(15, 4 * (len(keys) // 3)),
                                squeeze=False)
    for index, key in enumerate(keys):
        axis = axes[index // 3][index % 3]
        for path in PATHS + ["mpi"]:  # busbw only: "paired" is a ratio
            points = sorted(runs[key].get(path, {}).items())
            if points:
                axis.plot([s / 2**20 for s, _ in points], [b for _, b in points], marker="o",
                          label=path)
        rate, ppn, collective = key
        axis.set_title(f"{collective.replace('_', '-')}, {rate}, 2 nodes x {ppn}")
        axis.set_xscale("log", base=2)
        axis.set_xlabel("size (MiB of bfloat16)")
        axis.set_ylabel("busbw (GB/s)")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(os.path.join(directory, "link.png"), dpi=90)


def zero_report(directory):
    rows = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        with open(path) as f:
            for row in csv.DictReader(f):
                rows.setdefault((os.path.basename(path)[:-4], row["configuration"]), []).append(row)
    lines = ["| run | configuration | steps | s/step | steps/s | cross-node MB/step | "
             "final loss |", "|---|---|---|---|---|---|---|"]
    for (run, configuration), steps in sorted(rows.items()):
        seconds = float(steps[-1]["seconds"]) / len(steps)
        tail = steps[-max(1, len(steps) // 5):]
        loss = sum(float(s["loss"]) for s in tail) / len(tail)
        lines.append(f"| {run} | {configuration} | {len(steps)} | {seconds:.3f} | "
                     f"{1 / seconds:.2f} | {float(steps[-1]['inter_node_bytes']) / 1e6:.1f} | "
                     f"{loss:.4f} |")
    table = "\n".join(lines) + "\n\nfinal loss: mean of the last fifth of the steps.\n"
    with open(os.path.join(directory, "zero.md"), "w") as f:
        f.write(table)
    print(table)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axis = plt.subplots(figsize=(8, 5))
    for (run, configuration), steps in sorted(rows.items()):
        axis.plot([float(s["seconds"]) for s in steps], [float(s["loss"]) for s in steps],
                  label=f"{configuration} ({run})")
    axis.set_xlabel("wall-clock seconds")
    axis.set_ylabel("training loss")
    axis.grid(True, alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(os.path.join(directory, "zero.png"), dpi=90)


def fidelity_curves(directory):
    """{(run, model): {configuration: [loss per step]}} from zero_demo's and the FSDP2
    example's CSV files."""
    curves = {}
    for demo in sorted(glob.glob(os.path.join(directory, "demo*.csv"))):
        with open(demo) as f:
            for row in csv.DictReader(f):
                curves.setdefault(("zero_demo", row["model"]), {}).setdefault(
                    row["configuration"], []).append(float(row["loss"]))
    for fsdp in sorted(glob.glob(os.path.join(directory, "fsdp*.csv"))):
        with open(fsdp) as f:
            for row in csv.DictReader(f):
                curves.setdefault(("fsdp2", "decoder"), {}).setdefault(
                    row["config"], []).append(float(row["loss"]))
    return curves


def fidelity_report(directory):
    """Final losses against ZeRO-3's (the first configuration of each model) and the curves,
    smoothed over 20 steps, one PNG per model."""
    curves = fidelity_curves(directory)
    lines = ["| run | model | configuration | steps | final loss | vs ZeRO-3 |",
             "|---|---|---|---|---|---|"]
    for (run, model), configurations in sorted(curves.items()):
        finals = {}
        for configuration, losses in configurations.items():
            tail = losses[-50:]
            finals[configuration] = sum(tail) / len(tail)
        base = next(iter(finals.values()))
        for configuration, final in finals.items():
            lines.append(f"| {run} | {model} | {configuration} | {len(configurations[configuration])}"
                         f" | {final:.4f} | {100 * (final / base - 1):+.2f}% |")
    table = ("\n".join(lines) + "\n\nfinal loss: mean of the last 50 steps; vs ZeRO-3: its "
             "difference from ZeRO-3's (lossless) final loss.\n")
    with open(os.path.join(directory, "fidelity.md"), "w") as f:
        f.write(table)
    print(table)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    for (run, model), configurations in sorted(curves.items()):
        figure, axis = plt.subplots(figsize=(8, 5))
        for configuration, losses in configurations.items():
            window = 20
            smooth = [sum(losses[max(0, i - window + 1):i + 1]) / (i + 1 - max(0, i - window + 1))
                      for i in range(len(losses))]
            axis.plot(range(1, len(losses) + 1), smooth, label=configuration)
        axis.set_title(f"{run}: {model}, training loss (mean of 20 steps)")
        axis.set_xlabel("step")
        axis.set_ylabel("training loss")
        axis.grid(True, alpha=0.3)
        axis.legend()
        figure.tight_layout()
        figure.savefig(os.path.join(directory, f"{run}_{model}.png"), dpi=90)


if __name__ == "__main__":
    {"link": link_report, "zero": zero_report, "fidelity": fidelity_report}[sys.argv[1]](
        sys.argv[2])
