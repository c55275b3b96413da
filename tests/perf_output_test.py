#!/usr/bin/env python3
"""Runs every nccl-tests-style binary at small sizes with 2 and 3 ranks and checks what it
prints and writes: the two-level header, one row per size with #wrong 0, the footer lines
(OK), busbw = algbw x nccl-tests' factor in the table and in the JSON (-J), the byte
columns from the statistics, and the buffers' memory (-M: device memory by default where a
GPU is visible, host memory where none is; device memory asked for without one is refused
with a message).

usage: perf_output_test.py PERF_DIR ZCCLRUN MPIEXEC [MPIEXEC_PREFLAGS...]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from checks import check, verdict

FACTORS = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "sendrecv": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
}
QUANTIZABLE = {"all_reduce", "all_gather", "reduce_scatter", "reduce"}
ROOTED = {"broadcast", "reduce", "gather", "scatter"}
ROW = re.compile(r"^\s+\d+\s+\d+\s+\S+\s+\S+\s+-?\d+\s")


def gpu_visible():
    """Whether nvidia-smi lists a GPU: asked independently of the binaries under test."""
    if shutil.which("nvidia-smi") is None:
        return False
    listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return listing.returncode == 0 and "GPU" in listing.stdout


def run_case(launcher, perf_dir, name, ranks, extra, memory=None):
    """memory: "host" or "device", what the run must use; None: what -M auto gives."""
    if memory is None:
        memory = "device" if gpu_visible() else "host"
    with tempfile.TemporaryDirectory() as work:
        json_path = os.path.join(work, "out.json")
        command = [launcher[0], "-n", str(ranks)] + launcher[1:] + [
                   os.path.join(perf_dir, name + "_perf"),
                   "-b", "4K", "-e", "64K", "-f", "4", "-n", "2", "-w", "1", "-c", "1",
                   "-J", json_path] + extra
        what = " ".join(command[1:3] + [name] + extra)
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        out = result.stdout
        if not check(result.returncode == 0, f"{what}: exit status {result.returncode}\n"
                     f"{out}\n{result.stderr}"):
            return
        factor = FACTORS[name](ranks)
        check("out-of-place" in out and "in-place" in out, f"{what}: no two-level header")
        check(re.search(r"#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong",
                        out), f"{what}: header columns")
        place = r"host memory" if memory == "host" else r"device \d+ \[[0-9a-f:?]+\] .+"
        check(re.search(r"^#  Rank  0 Group  0 Pid\s+\d+ on\s+\S+ " + place + "$", out, re.M),
              f"{what}: no per-rank line naming {memory} memory")
        rows = [line.split() for line in out.splitlines() if ROW.match(line)]
        check(len(rows) == 3, f"{what}: {len(rows)} rows, expected 3 (4K, 16K, 64K)")
        for row in rows:
            algbw, busbw, wrong = float(row[6]), float(row[7]), row[8]
            check(wrong == "0", f"{what}: #wrong {wrong} in {row}")
            check(abs(busbw - algbw * factor) <= 0.011, f"{what}: busbw {busbw} != {algbw} x {factor}")
            if name != "sendrecv":
                check(row[12] == "0", f"{what}: in-place #wrong {row[12]}")
            sent = float(row[-1]) + float(row[-2])
            check(sent > 0, f"{what}: no bytes counted in {row}")
        check(re.search(r"^# Out of bounds values : 0 OK$", out, re.M), f"{what}: footer not OK")
        check(re.search(r"^# Avg bus bandwidth    : [0-9.e+-]+", out, re.M),
              f"{what}: no average bus bandwidth")
        with open(json_path) as f:
            data = json.load(f)
        check(data["collective"] == name and data["ranks"] == ranks, f"{what}: JSON header")
        rounds = int(extra[extra.index("-R") + 1]) if "-R" in extra else 1
        check(data["rounds"] == rounds, f"{what}: JSON rounds {data['rounds']}, expected {rounds}")
        check(data["memory"] == memory, f"{what}: JSON memory {data['memory']}, expected {memory}")
        check(data["ok"] is True and data["out_of_bounds"] == 0, f"{what}: JSON not ok")
        check(len(data["results"]) == 3, f"{what}: JSON rows")
        for entry in data["results"]:
            for key in ("out_of_place", "in_place", "native", "mpi_transport", "forced_exact",
                        "forced_format"):
                if key not in entry:
                    continue
                m = entry[key]
                check(m["wrong"] == 0, f"{what}: JSON {key} wrong {m['wrong']}")
                check(abs(m["busbw"] - m["algbw"] * factor) <= 1e-4 + 1e-3 * m["busbw"],
                      f"{what}: JSON {key} busbw {m['busbw']} != {m['algbw']} x {factor}")
            check(("native" in entry) == ("-B" in extra), f"{what}: native column")
            check(("mpi_transport" in entry) == ("-U" in extra), f"{what}: mpi_transport column")
            for key in ("forced_exact", "forced_format"):
                check((key in entry) == ("-P" in extra), f"{what}: {key} column")


def check_refused(launcher, perf_dir):
    """-M device without a GPU: every rank refuses, naming the flag, before any collective."""
    command = [launcher[0], "-n", "2"] + launcher[1:] + [
        os.path.join(perf_dir, "all_gather_perf"), "-b", "4K", "-e", "4K", "-M", "device"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    check(result.returncode != 0, f"-M device without a GPU: exit status 0\n{result.stdout}")
    check(re.search(r"rank [01]: -M device: (no GPU is visible|these binaries were built "
                    r"without CUDA)", result.stderr),
          f"-M device without a GPU: no message naming -M device\n{result.stderr}")
    check(not any(ROW.match(line) for line in result.stdout.splitlines()),
          "-M device without a GPU: rows printed")


def check_flags_refused(launcher, perf_dir, extra, message):
    """Flags that do not fit together: refused before any collective, with `message`."""
    command = [launcher[0], "-n", "2"] + launcher[1:] + [
        os.path.join(perf_dir, "all_gather_perf"), "-b", "4K", "-e", "4K"] + extra
    what = " ".join(extra)
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    check(result.returncode != 0, f"{what}: exit status 0\n{result.stdout}")
    check(message in result.stderr, f"{what}: no message '{message}'\n{result.stderr}")
    check(not any(ROW.match(line) for line in result.stdout.splitlines()), f"{what}: rows printed")


def main():
    perf_dir, zcclrun, mpiexec = sys.argv[1], [sys.argv[2]], sys.argv[3:]
    for name in FACTORS:
        for ranks in (2, 3):
            run_case(mpiexec, perf_dir, name, ranks, ["-B", "-U"] if ranks == 2 else [])
            if name in ROOTED:
                run_case(mpiexec, perf_dir, name, ranks, ["-r", str(ranks - 1), "-B"])
            if name in QUANTIZABLE:
                run_case(mpiexec, perf_dir, name, ranks, ["-q", "int8", "-d", "bfloat16"])
        run_case(zcclrun, perf_dir, name, 3, [])  # without MPI
    run_case(mpiexec, perf_dir, "reduce_scatter", 3, ["-q", "int4", "-o", "avg", "-d", "half"])
    run_case(zcclrun, perf_dir, "reduce_scatter", 3, ["-q", "int4", "-d", "bfloat16"])
    run_case(mpiexec, perf_dir, "all_gather", 2, ["-M", "host"], memory="host")
    # The planner's choice beside the paths it chooses among, forced, in the same run.
    run_case(mpiexec, perf_dir, "reduce_scatter", 3, ["-q", "allow-int4", "-d", "bfloat16", "-P"])
    run_case(zcclrun, perf_dir, "all_gather", 2, ["-q", "allow-int8", "-d", "bfloat16", "-P"])
    # ... and all of them timed by turns, in rounds of the iterations.
    run_case(mpiexec, perf_dir, "all_reduce", 2,
             ["-q", "allow-int4", "-d", "bfloat16", "-P", "-B", "-R", "2"])
    check_flags_refused(mpiexec, perf_dir, ["-q", "int8", "-P"],
                        "-P compares the planner's choice: it needs -q allow-int8|allow-int4")
    check_flags_refused(mpiexec, perf_dir, ["-n", "2", "-R", "3"],
                        "-R 3: more rounds than the 2 timed iterations (-n)")
    check_flags_refused(mpiexec, perf_dir, ["-n", "5x"], "-n 5x: invalid value")
    check_flags_refused(mpiexec, perf_dir, ["-f", "1.5x"], "-f 1.5x: invalid value")
    if gpu_visible():
        run_case(mpiexec, perf_dir, "all_gather", 2, ["-M", "device", "-q", "int8"], "device")
        run_case(zcclrun, perf_dir, "reduce_scatter", 3, ["-M", "device", "-q", "int4"], "device")
    else:
        check_refused(mpiexec, perf_dir)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
