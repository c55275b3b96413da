#!/usr/bin/env python3
"""Joins the ranks' ZCCL_TRACE files into one timeline and sums up where each rank's
collectives went.

usage: trace-merge.py OUT.json TRACE.json...   (e.g. trace-merge.py step.json /tmp/t.*.json)

OUT.json opens in Perfetto (ui.perfetto.dev) or chrome://tracing: one process per rank, ordered
by rank, with its caller's thread (queueing, waiting, blocking calls) and its communicators'
threads (the collectives they ran), and arrows from each queued call to its run. A file whose
process died before its end (no closing bracket) is read up to its last whole event.

Printed, per rank and communicator: the collectives by kind (calls, milliseconds running,
bytes sent inter-node and intra-node); and per rank, the time during which a queued call was
running on one of its communicators' threads against the caller's time spent waiting for
them: the share of the communication that the caller's own work hid.
"""
import collections
import json
import sys


def read_events(path):
    with open(path) as f:
        text = f.read().rstrip()
    if not text.endswith("]"):
        # Cut after the last whole event of a process that did not reach its exit.
        text = text[:text.rfind("}") + 1].rstrip(",\n") + "]"
    return json.loads(text)


def covered(intervals):
    """The time during which at least one of the intervals runs (communicators' threads run
    side by side)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def summary(events):
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_sort_index"}
    communicator_threads = {(e["pid"], e["tid"]) for e in events
                            if e.get("ph") == "M" and e["name"] == "thread_name"
                            and e["args"]["name"] == "communicator's thread"}
    runs = collections.defaultdict(lambda: [0, 0.0, 0, 0])
    queued_runs = collections.defaultdict(list)  # (start, end) on communicators' threads
    waited = collections.defaultdict(float)
    for e in events:
        if e.get("ph") != "X":
            continue
        if e["cat"] == "collective":
            a = e["args"]
            row = runs[(e["pid"], a["communicator"], e["name"])]
            row[0] += 1
            row[1] += e["dur"] / 1000
            row[2] += a["inter_node_bytes"]
            row[3] += a["intra_node_bytes"]
            if (e["pid"], e["tid"]) in communicator_threads:
                queued_runs[e["pid"]].append((e["ts"], e["ts"] + e["dur"]))
        elif e["name"].startswith("wait "):
            waited[e["pid"]] += e["dur"] / 1000
    lines = ["| rank | communicator | collective | calls | ms running | inter-node MB | "
             "intra-node MB |", "|---|---|---|---|---|---|---|"]
    for (pid, comm, name), (calls, ms, inter, intra) in sorted(
            runs.items(), key=lambda kv: (order.get(kv[0][0], kv[0][0]),) + kv[0][1:]):
        lines.append(f"| {names.get(pid, pid)} | {comm} | {name} | {calls} | {ms:.1f} | "
                     f"{inter / 1e6:.2f} | {intra / 1e6:.2f} |")
    lines += ["", "| rank | queued calls running, ms | caller waited for them, ms | hidden |",
              "|---|---|---|---|"]
    for pid in sorted(queued_runs, key=lambda p: order.get(p, p)):
        ran, wait = covered(queued_runs[pid]) / 1000, waited[pid]
        hidden = 1 - wait / ran if ran > 0 else 0
        lines.append(f"| {names.get(pid, pid)} | {ran:.1f} | {wait:.1f} | {hidden:.0%} |")
    return "\n".join(lines)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    events = []
    for path in sys.argv[2:]:
        events += read_events(path)
    with open(sys.argv[1], "w") as f:
        json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
    print(summary(events))


if __name__ == "__main__":
    main()
