#!/usr/bin/env python3
"""The simulated testbed against the measured one: every row of make bench-link's table in
docs/testbed.md (2 nodes x 1 or 2 ranks, 1 and 10 Gbit/s, bfloat16, plain / INT8 / INT4; its
10 Gbit/s rows as rerun on this host kind, docs/figures/link_10gbit_later_host.md, or the
tables SIM_TABLES names, later rows replacing earlier ones) run again by zccl-sim on the same
shape, busbw side by side, and the share of rows within 15%; then, where make bench-zero has
run (ZERO_LOG, default bench/zero/mlp_1gbit.node0.log), its ZeRO-3 and ZeRO++ steps simulated
with the compute each measured: collectives, the step without overlap, and the step with the
prefetch depth the bench ran, hpZ's node copy read in place or gathered as it ran.

usage: sim-validate.py ZCCL_SIM [HOST] > table.md
HOST: how the testbed's ranks use this host, as --machine fields. By default every rank of the
job shares this host's cores (busy-polling: each gets cores / ranks of one), its kernels run
at the rates quant_bench (beside ZCCL_SIM, perf/) measures now on one core, and shared-memory
copies at its memcpy rate on each side. "none": ranks with an engine each, kernels at 4 GB/s,
a NIC that costs no CPU (the model before the host's CPU was in it).
The link's own facts come from scripts/testbed/link-facts.py on a testbed of two nodes (root;
the median of three runs) or from SIM_LINK in its output's form
(stack-gbps=S,latency-us=L,shared-latency-us=W): TCP through the veth at S GB/s a core on
each side, a message's one-way time L, and W where the job's ranks outnumber the cores (a
message waits for its receiver's time slice: W - L more, within a node too)."""
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROW = re.compile(r"^\| (\d+)gbit \| 2 x (\d) \| ([a-z-]+) \| (\d+) MiB \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|")
COLLECTIVES = {"all-gather": "all_gather", "reduce-scatter": "reduce_scatter",
               "all-reduce": "all_reduce"}


LINK_FACTS = Path(__file__).resolve().parent / "testbed" / "link-facts.py"
LINK_RUNS = 3
# A shared-memory message's one-way time with a core to each end (UCX's shared memory: about a
# microsecond; the simulator's default).
SHM_LATENCY_US = 2
# quant_bench's figures for each kernel family the simulator prices (bfloat16, the table's
# type; the quantized paths' int8 and int4 alike): their mean.
FAMILIES = {
    "copy-gbps": ["BM_Memcpy/8"],
    "reduce-gbps": ["BM_ReduceInto/7"],
    "accumulate-gbps": ["BM_AccumulateAsFloat/7"],
    "quantize-gbps": ["BM_Quantize/8/0/7/512/0", "BM_Quantize/4/0/7/512/0"],
    "dequantize-gbps": ["BM_Dequantize/8/0/7/512/0", "BM_Dequantize/4/0/7/512/0",
                        "BM_DequantizeAccumulate/8/0/8/512/0",
                        "BM_DequantizeAccumulate/4/0/8/512/0"],
}


def host_cores() -> int:
    return len(os.sched_getaffinity(0))


def measured_host(tool: str) -> str:
    bench = Path(tool).resolve().parent / "perf" / "quant_bench"
    if not bench.exists():
        sys.exit(f"sim-validate: {bench} is not built (it needs Google Benchmark); "
                 "give HOST's fields instead")
    names = [name for names in FAMILIES.values() for name in names]
    pattern = "^(" + "|".join(re.escape(name) for name in names) + ")$"
    # This machine's rates drift by a third between runs: the median of five.
    out = subprocess.run([str(bench), f"--benchmark_filter={pattern}", "--benchmark_format=json",
                          "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True, check=True)
    rate = {b["run_name"]: b["bytes_per_second"] / 1e9 for b in json.loads(out.stdout)["benchmarks"]
            if b.get("aggregate_name") == "median"}
    fields = {field: sum(rate[name] for name in names) / len(names)
              for field, names in FAMILIES.items()}
    fields["shm-gbps"] = fields["copy-gbps"]
    fields["host-cores"] = host_cores()
    return ",".join(f"{field}={value:.3g}" for field, value in fields.items())


def parse_fields(text: str) -> dict:
    return {name: float(value) for name, value in (item.split("=") for item in text.split(","))}


def measured_link() -> dict:
    """The median of LINK_RUNS runs of link-facts.py, field by field (its shared latency
    drifts most: a run now and then has the ping-pong's ends waiting for each other's slices
    throughout)."""
    if "SIM_LINK" in os.environ:
        return parse_fields(os.environ["SIM_LINK"])
    runs = []
    for _ in range(LINK_RUNS):
        out = subprocess.run([str(LINK_FACTS)], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"sim-validate: {LINK_FACTS.name} could not measure the link "
                     f"({out.stderr.strip()}); give SIM_LINK=stack-gbps=S,latency-us=L,"
                     "shared-latency-us=W instead")
        sys.stderr.write(out.stderr)
        runs.append(parse_fields(out.stdout.strip()))
    return {name: statistics.median(run[name] for run in runs) for name in runs[0]}


def link_fields(link: dict, ranks: int, cores: int, host: str) -> str:
    """The testbed's latencies for a job of `ranks` on `cores`, and its stack's CPU."""
    inter = link["latency-us"]
    intra = SHM_LATENCY_US
    if ranks > cores:
        wait = link["shared-latency-us"] - link["latency-us"]
        inter, intra = inter + wait, intra + wait
    fields = f"inter-latency-us={inter:.3g},intra-latency-us={intra:.3g}"
    return fields if host == "none" else f"{fields},stack-gbps={link['stack-gbps']:.3g}"


def testbed(tool: str, gbit: int, per_node: int, host: str, link: dict, *args: str) -> str:
    """zccl-sim's output for 2 testbed nodes of `per_node` ranks behind a `gbit` link."""
    ranks = 2 * per_node
    # Ranks with an engine each ("none") wait for no core.
    cores = ranks if host == "none" else int(parse_fields(host).get("host-cores", host_cores()))
    machine = f"gpus-per-node={per_node},nics=1,nic-gbps={gbit},intra-gbps=10,"
    machine += link_fields(link, ranks, cores, host) + ","
    machine += "kernel-gbps=4" if host == "none" else f"{host},host-ranks={ranks}"
    return subprocess.run([tool, "--ranks", str(ranks), "--machine", machine, *args],
                          capture_output=True, text=True, check=True).stdout


def simulate(tool: str, gbit: int, per_node: int, collective: str, mib: int, wire: str,
             host: str, link: dict) -> float:
    out = testbed(tool, gbit, per_node, host, link, "--collective", collective, "--bytes", f"{mib}M",
                  "--dtype", "bfloat16", "--wire", wire)
    row = [line for line in out.splitlines() if line and not line.startswith("#")][0]
    return float(row.split()[5])  # busbw


ZERO_LOG = "bench/zero/mlp_1gbit.node0.log"
ZERO_LAYERS = 7  # bench-zero.sh's MLP: --layers 7 of --hidden 2048
ZERO_RANKS_PER_NODE = 2  # on 2 nodes at 1 Gbit/s
ZERO_RUN = re.compile(r"^(\w+): (ZeRO-3|ZeRO\+\+ \(qwZ\+hpZ\+qgZ\)) overlap efficiency [\d.]+ "
                      r"\(step ([\d.]+) ms, compute ([\d.]+) ms, collectives alone ([\d.]+) ms\)")
ZERO_SIZE = re.compile(r"^(\w+)\s+(ZeRO-3|ZeRO\+\+ \(qwZ\+hpZ\+qgZ\))\s+(\d+)\s+[\d.]+\s+[\d.]+\s+(\d+)\s")


ZERO_PREFETCH = re.compile(r"prefetch depth (\d+)")
# Logs from before the node copy was shared in host memory say nothing: they gathered it.
ZERO_NODE_COPY = re.compile(r"hpZ's node copy (read in place|gathered)")


def simulate_zero(tool: str, plus: bool, params: int, compute_ms: float, host: str, link: dict,
                  prefetch: int, node_copy: str) -> dict:
    out = testbed(tool, 1, ZERO_RANKS_PER_NODE, host, link, "--zero", "++" if plus else "3",
                  "--params", str(params), "--layers", str(ZERO_LAYERS), "--compute-ms",
                  str(compute_ms), "--scale", "1", "--prefetch", str(prefetch),
                  "--node-copy", node_copy)
    phases = {m[1]: float(m[2]) for m in re.finditer(r"^  (\S.*?)\s+([\d.]+) (?:ms|GB)", out, re.M)}
    return {"step": phases["step"],
            "collectives": sum(v for k, v in phases.items() if "all-gather" in k or "scatter" in k),
            "cross": phases["cross-node bytes"] * 1e9 * 2 * ZERO_RANKS_PER_NODE}


def zero_steps(tool: str, host: str, link: dict, log: Path) -> None:
    """bench-zero's measured steps beside simulated ones (4 ranks, 2 nodes, 1 Gbit/s)."""
    if not log.exists():
        print(f"\n(no {log}: run make bench-zero for the ZeRO steps' comparison)")
        return
    text = log.read_text()
    lines = text.splitlines()
    sizes = {m[2]: (int(m[3]), int(m[4])) for line in lines if (m := ZERO_SIZE.match(line))}
    prefetch = int(m[1]) if (m := ZERO_PREFETCH.search(text)) else 0
    copy = m[1] if (m := ZERO_NODE_COPY.search(text)) else "gathered"
    node_copy = "shared" if copy == "read in place" else "gather"
    print("\nZeRO steps of make bench-zero (MLP, 2 x 2 ranks, 1 Gbit/s, prefetch depth "
          f"{prefetch}, hpZ's node copy {copy}), measured / simulated with the compute each "
          "measured: the collectives "
          f"alone, the step without overlap, and the step as the bench ran it (prefetch "
          f"{prefetch}; in the simulation, the compute takes the gaps the collectives leave on "
          "each rank's CPU):\n")
    print("| configuration | compute ms | collectives alone ms | compute + collectives ms "
          f"| step ms, prefetch {prefetch} | cross-node MB/step |")
    print("|---|---|---|---|---|---|")
    for line in lines:
        m = ZERO_RUN.match(line)
        if not m:
            continue
        name, step, compute, alone = m[2], float(m[3]), float(m[4]), float(m[5])
        params, cross = sizes[name]
        serial = simulate_zero(tool, name != "ZeRO-3", params, compute, host, link, 0, node_copy)
        overlapped = simulate_zero(tool, name != "ZeRO-3", params, compute, host, link,
                                   prefetch, node_copy)
        def cell(measured: float, simulated: float) -> str:
            return f"{measured:.1f} / {simulated:.1f} ({simulated / measured - 1:+.0%})"
        print(f"| {name} | {compute:.1f} | {cell(alone, serial['collectives'])} | "
              f"{cell(compute + alone, serial['step'])} | {cell(step, overlapped['step'])} | "
              f"{cell(cross / 1e6, serial['cross'] / 1e6)} |")


# The measured rows: docs/testbed.md's table, then the reruns that replace its rows (the same
# link, shape, collective and size) on the host kind this script now runs on.
TABLES = ("docs/testbed.md", "docs/figures/link_10gbit_later_host.md")


def measured_rows(root: Path) -> dict:
    """(gbit, ranks per node, collective, MiB) -> the busbw of plain, INT8 and INT4."""
    rows = {}
    names = os.environ.get("SIM_TABLES", " ".join(TABLES)).split()
    for table in names:
        for line in (root / table).read_text().splitlines():
            if m := ROW.match(line):
                rows[(int(m[1]), int(m[2]), m[3], int(m[4]))] = (m[5], m[6], m[7])
    return rows


def main() -> None:
    tool = sys.argv[1]
    host = sys.argv[2] if len(sys.argv) > 2 else measured_host(tool)
    link = measured_link()
    root = Path(__file__).resolve().parent.parent
    link_text = ",".join(f"{name}={value:.3g}" for name, value in link.items())
    print(f"host: {host}; link: {link_text}; busbw GB/s, measured (make bench-link) / "
          "simulated\n")
    print("| link | nodes x ranks | collective | size | plain | int8 | int4 |")
    print("|---|---|---|---|---|---|---|")
    errors: dict = {}  # link -> |simulated / measured - 1| of each figure
    for (gbit, per_node, name, mib), figures in sorted(measured_rows(root).items()):
        cells = []
        for wire, measured in zip(("none", "int8", "int4"), figures):
            simulated = simulate(tool, gbit, per_node, COLLECTIVES[name], mib, wire, host, link)
            ratio = simulated / float(measured)
            errors.setdefault(gbit, []).append(abs(ratio - 1))
            cells.append(f"{measured} / {simulated:.3f} ({ratio - 1:+.0%})")
        print(f"| {gbit} Gbit/s | 2 x {per_node} | {name} | {mib} MiB | " + " | ".join(cells)
              + " |")
    print()
    for gbit, rows in sorted(errors.items()):
        within = sum(error <= 0.15 for error in rows)
        print(f"- {gbit} Gbit/s: {within} of {len(rows)} figures within 15% of the measured ones, "
              f"median error {statistics.median(rows):.0%}, largest {max(rows):.0%}")
    every = [error for rows in errors.values() for error in rows]
    print(f"\n{sum(error <= 0.15 for error in every)} of {len(every)} figures within 15% of the "
          "measured ones")
    zero_steps(tool, host, link, Path(os.environ.get("ZERO_LOG", root / ZERO_LOG)))


if __name__ == "__main__":
    main()
