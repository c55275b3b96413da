#!/usr/bin/env python3
"""Traces trace_calls (3 ranks under zcclrun) with ZCCL_TRACE and ZCCL_DEBUG=TRACE and holds
what comes out to what the calls did:

- every rank's file is JSON that names its rank, with one slice per collective, in call order,
  on the thread that ran it: the blocking all-reduce on the caller's, the queued calls on the
  communicator's, each joined to its handover by an arrow and followed by the caller's wait;
- the bytes each slice says were sent equal the communicator's counts around the call (which
  trace_calls prints) and, for the lossless calls, what an all-reduce and an all-gather send
  by definition: 2(n-1)/n and (n-1) blocks of the rank's data; the INT8 reduce-scatter sends
  less than its bfloat16 would;
- the caller worked 20 ms while the queued all-gather was in flight, which its wait shows;
- ZCCL_DEBUG=TRACE logs a line per call with the same path and bytes;
- trace-merge.py joins the files (one of them cut short, as a killed rank leaves it) and sums
  each rank's calls;
- calls with a stream are recorded too: staged_test's every-collective case on 2 ranks of the
  emulated device (its host reference calls beside them) gives slices on device memory for
  every collective, each run on the communicator's thread behind its arrow, with the bytes
  that the staged path sent.

usage: trace_test.py ZCCLRUN TRACE_CALLS TRACE_MERGE STAGED_TEST
"""
import collections
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

from checks import check, verdict

RANKS = 3
COLLECTIVES = ["all-reduce", "all-gather", "reduce-scatter"]


def expected_bytes(n):
    """Lossless bytes per rank of trace_calls' all-reduce (6000 floats) and all-gather (5000)."""
    return {0: 2 * (n - 1) * (6000 // n) * 4, 1: (n - 1) * 5000 * 4}


def slices(events, name):
    return [e for e in events if e["ph"] == "X" and e["name"] == name]


def check_rank(events, counted, rank):
    where = f"rank {rank}"
    meta = {(e["name"], e["tid"]): e["args"] for e in events if e["ph"] == "M"}
    check(meta.get(("process_name", 0), {}).get("name", "").startswith(f"rank {rank} of {RANKS}"),
          f"{where}: process name {meta.get(('process_name', 0))}")
    threads = {tid: args["name"] for (name, tid), args in meta.items() if name == "thread_name"}
    runs = sorted((e for e in events if e["ph"] == "X" and e["cat"] == "collective"),
                  key=lambda e: e["ts"])
    if not check([e["name"] for e in runs] == COLLECTIVES,
                 f"{where}: collectives {[e['name'] for e in runs]}"):
        return
    numbers = [e["args"]["number"] for e in runs]
    check(numbers == sorted(numbers) and len(set(numbers)) == 3, f"{where}: numbers {numbers}")
    for call, e in enumerate(runs):
        a = e["args"]
        what = f"{where} {e['name']}"
        check(a["status"] == "success", f"{what}: status {a['status']}")
        check(a["memory"] == "host", f"{what}: memory {a['memory']}")
        check(a["path"] not in ("none", "unknown"), f"{what}: path {a['path']}")
        check(a["wire"] == ("int8" if call == 2 else "none"), f"{what}: wire {a['wire']}")
        check((a["inter_node_bytes"], a["intra_node_bytes"]) == counted[call],
              f"{what}: traced {a['inter_node_bytes']}/{a['intra_node_bytes']} bytes, "
              f"counted {counted[call]}")
        if call in expected_bytes(RANKS):
            check(a["intra_node_bytes"] == expected_bytes(RANKS)[call] and
                  a["inter_node_bytes"] == 0,
                  f"{what}: {a['intra_node_bytes']} bytes, by definition "
                  f"{expected_bytes(RANKS)[call]}")
        check(e["dur"] > 0, f"{what}: duration {e['dur']}")
    check(0 < runs[2]["args"]["intra_node_bytes"] < (RANKS - 1) * 4096 * 2,
          f"{where}: INT8 reduce-scatter sent {runs[2]['args']['intra_node_bytes']} bytes")
    caller = runs[0]["tid"]
    check(threads.get(caller) == "caller", f"{where}: the blocking call ran on {threads}")
    for e in runs[1:]:
        what = f"{where} {e['name']}"
        check(threads.get(e["tid"]) == "communicator's thread" and e["tid"] != caller,
              f"{what}: ran on thread {e['tid']} ({threads.get(e['tid'])})")
        check(e["args"]["queued_us"] >= 0, f"{what}: queued {e['args']['queued_us']} us")
        flows = {x["ph"]: x for x in events if x["ph"] in "sf" and x["id"] == e["args"]["id"]}
        check(set(flows) == {"s", "f"} and flows["s"]["tid"] == caller and
              flows["f"]["tid"] == e["tid"] and flows["f"]["ts"] == e["ts"],
              f"{what}: arrow {flows}")
        handovers = slices(events, "queue " + e["name"])
        check(len(handovers) == 1 and handovers[0]["tid"] == caller and
              handovers[0]["ts"] <= e["ts"], f"{what}: handover {handovers}")
        waits = slices(events, "wait " + e["name"])
        check(len(waits) == 1 and waits[0]["tid"] == caller and waits[0]["args"]["id"] ==
              e["args"]["id"] and waits[0]["ts"] + waits[0]["dur"] >= e["ts"] + e["dur"],
              f"{what}: wait {waits} against run {e['ts']} + {e['dur']}")
    # The all-gather's wait began after the caller's 20 ms of work, which followed the handover.
    gather_wait = slices(events, "wait all-gather")
    handover = slices(events, "queue all-gather")
    if gather_wait and handover:
        check(gather_wait[0]["ts"] - handover[0]["ts"] >= 20000,
              f"{where}: the wait began {gather_wait[0]['ts'] - handover[0]['ts']} us after the "
              "handover, before the caller's 20 ms of work ended")


def check_log(stderr, counted):
    lines = [l for l in stderr.splitlines() if " zccl TRACE " in l]
    check(len(lines) == 3 * RANKS, f"{len(lines)} TRACE lines, expected {3 * RANKS}:\n{stderr}")
    for line in lines:
        m = re.search(r":(\d+) zccl TRACE zccl(\w+)\(.*\) on host memory, call \d+ of rank \d+ of 3: "
                      r"(\S+) path, "
                      r"wire (\S+), [0-9.]+ ms.*, sent (\d+) B inter-node, (\d+) B intra-node$",
                      line)
        if not check(m, f"TRACE line: {line}"):
            continue
        rank, function = int(m.group(1)), m.group(2)
        call = ["AllReduce", "AllGather", "ReduceScatter"].index(function)
        check((int(m.group(5)), int(m.group(6))) == counted[rank][call],
              f"TRACE line's bytes against the counts {counted[rank][call]}: {line}")
        check(("on the communicator's thread" in line) == (call > 0), f"TRACE line: {line}")


def check_covered(merge):
    """trace-merge.py's busy time counts time under calls that overlap once."""
    spec = importlib.util.spec_from_file_location("trace_merge", merge)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for intervals, expected in [([(0, 10), (5, 15), (20, 30)], 25), ([(0, 10), (2, 3)], 10),
                                ([], 0), ([(4, 6), (0, 5)], 6)]:
        check(module.covered(intervals) == expected,
              f"covered({intervals}) = {module.covered(intervals)}, expected {expected}")


def check_device_calls(zcclrun, staged_test, work):
    prefix = os.path.join(work, "device")
    result = subprocess.run([zcclrun, "-n", "2", "--timeout", "300", staged_test,
                             "--gtest_filter=*EveryCollectiveEqualsTheHostPath*emulated*"],
                            capture_output=True, text=True, timeout=600,
                            env=dict(os.environ, ZCCL_TRACE=prefix))
    if not check(result.returncode == 0, f"staged_test: exit status {result.returncode}\n"
                 f"{result.stdout}\n{result.stderr}"):
        return
    sent = collections.defaultdict(int)  # by collective, both ranks' device calls
    for path in sorted(glob.glob(prefix + ".*.json")):
        with open(path) as f:
            events = json.load(f)
        threads = {e["tid"]: e["args"]["name"] for e in events
                   if e["ph"] == "M" and e["name"] == "thread_name"}
        runs = [e for e in events if e["ph"] == "X" and e["cat"] == "collective"]
        device = [e for e in runs if e["args"]["memory"] == "device"]
        check(device and len(device) < len(runs), f"{path}: {len(device)} of {len(runs)} "
              "collectives on device memory, expected some beside the host reference's")
        arrows = {e["id"] for e in events if e["ph"] == "f"}
        for e in device:
            what = f"{path} device {e['name']} {e['args']['call']}"
            check(e["args"]["status"] == "success" and e["args"]["path"] != "none",
                  f"{what}: {e['args']}")
            check(threads.get(e["tid"]) == "communicator's thread" and e["args"]["id"] in arrows,
                  f"{what}: ran on {threads.get(e['tid'])}, arrow {e['args']['id'] in arrows}")
            sent[e["name"]] += e["args"]["inter_node_bytes"] + e["args"]["intra_node_bytes"]
    kinds = ["all-gather", "reduce-scatter", "all-reduce", "broadcast", "all-to-all", "reduce",
             "gather", "scatter"]
    check(all(sent[k] > 0 for k in kinds), f"device calls' bytes by collective: {dict(sent)}")


def main():
    zcclrun, program, merge, staged_test = sys.argv[1:5]
    check_covered(merge)
    with tempfile.TemporaryDirectory() as work:
        prefix = os.path.join(work, "trace")
        env = dict(os.environ, ZCCL_TRACE=prefix, ZCCL_DEBUG="TRACE")
        result = subprocess.run([zcclrun, "-n", str(RANKS), "--timeout", "300", program],
                                capture_output=True, text=True, env=env, timeout=600)
        if not check(result.returncode == 0,
                     f"exit status {result.returncode}\n{result.stdout}\n{result.stderr}"):
            return verdict()
        counted = {}
        for m in re.finditer(r"^rank (\d+) call (\d+) inter-node (\d+) intra-node (\d+)$",
                             result.stdout, re.M):
            counted.setdefault(int(m.group(1)), {})[int(m.group(2))] = (int(m.group(3)),
                                                                        int(m.group(4)))
        check(sorted(counted) == list(range(RANKS)), f"counts of ranks {sorted(counted)}")
        files = sorted(glob.glob(prefix + ".*.json"))
        check(len(files) == RANKS, f"trace files {files}")
        ranks_seen = []
        for path in files:
            with open(path) as f:
                events = json.load(f)  # whole JSON: the file was closed at exit
            name = next((e["args"]["name"] for e in events if e["name"] == "process_name"), "")
            rank = int(re.match(r"rank (\d+)", name).group(1)) if name else -1
            ranks_seen.append(rank)
            if check(rank in counted, f"{path}: rank {rank}"):
                check_rank(events, counted[rank], rank)
        check(sorted(ranks_seen) == list(range(RANKS)), f"ranks of the files {ranks_seen}")
        check_log(result.stderr, counted)

        # A file cut short in its last event, as a rank killed mid-write leaves it.
        with open(files[0]) as f:
            text = f.read()
        with open(files[0], "w") as f:
            f.write(text[:len(text) - 40])
        merged = os.path.join(work, "merged.json")
        summary = subprocess.run([sys.executable, merge, merged] + files, capture_output=True,
                                 text=True)
        if check(summary.returncode == 0, f"trace-merge.py: {summary.stderr}"):
            with open(merged) as f:
                events = json.load(f)["traceEvents"]
            runs = [e for e in events if e["ph"] == "X" and e["cat"] == "collective"]
            check(len(runs) >= 3 * RANKS - 1, f"merged: {len(runs)} collectives")
            for rank in range(RANKS):
                check(re.search(rf"^\| rank {rank} of 3 .*\| all-gather \| 1 \|", summary.stdout,
                                re.M), f"summary of rank {rank}:\n{summary.stdout}")
        check_device_calls(zcclrun, staged_test, work)
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
