#!/usr/bin/env python3
"""zccl-sim's ZeRO step with the ZeRO layer's prefetch against the same step without overlap,
in virtual time: the same collectives (the same cross-node bytes) and compute, a step that
never takes longer than without overlap nor less than its compute, and, where compute and
communication are of a size, a step well under their sum. Prefetch's price in memory: the
model state reported at its peak, 16P/N (+ hpZ's 2P per node's ranks for ZeRO++) plus the
layers in flight, as many as ZeroOptimizer::peakModelStateBytes counted for the 6 equal inner
modules of zero_demo --layers 6 --stage 3 on 2 ranks: 2, 5 and 7 at prefetch 0, 1 and 2
(1, 3 and 4 with --hpz, its node copy read in place). With the forward recomputed in the
backward (--recompute, activation checkpointing), the backward's compute is three forwards'
and the collectives are the same. ZeRO++ with hpZ's node copy read in place (--node-copy
shared, the ZeRO layer's way in host memory): the same cross-node bytes, a backward that
gathers nothing (one node barrier), a step no longer than gathering the copy.
usage: zero_overlap_check.py ZCCL_SIM"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path


PARAMS, LAYERS, RANKS, PER_NODE = 4e7, 6, 8, 4
LAYERS_IN_FLIGHT = {0: 2, 1: 5, 2: 7}
LAYERS_IN_FLIGHT_READING_IN_PLACE = {0: 1, 1: 3, 2: 4}


def step(tool: str, prefetch: int, folder: Path, extra: tuple = (), zero: str = "both") -> dict:
    out = folder / f"prefetch{prefetch}{''.join(extra)}.json"
    # 8 ranks in 2 nodes; compute about as long as ZeRO-3's collectives.
    subprocess.run([tool, "--ranks", str(RANKS), "--zero", zero, "--params", str(PARAMS),
                    "--layers", str(LAYERS),
                    "--tokens", "4096", "--tflops", "10", "--prefetch", str(prefetch),
                    "--machine", f"gpus-per-node={PER_NODE},nics=1,nic-gbps=10", "--json", str(out),
                    *extra],
                   check=True, capture_output=True)
    return json.loads(out.read_text())["steps"]


def check_recompute(plain: dict, recomputed: dict) -> list:
    """The forward recomputed: the backward's compute three forwards' (two without), the same
    forward, the same cross-node bytes; the step longer by the forward's compute."""
    failures = []
    for name in ("ZeRO-3", "ZeRO++"):
        base, again = plain[name], recomputed[name]
        forward = base["forward compute"]
        print(f"{name} with the forward recomputed: backward compute "
              f"{again['backward compute'] * 1e3:.3f} ms (without: "
              f"{base['backward compute'] * 1e3:.3f}), forward {forward * 1e3:.3f} ms")
        if abs(again["forward compute"] - forward) > 1e-9 * forward:
            failures.append(f"{name} --recompute: the forward's compute changed")
        if abs(again["backward compute"] - 3 * forward) > 1e-6 * forward:
            failures.append(f"{name} --recompute: backward compute is not three forwards'")
        if abs(base["backward compute"] - 2 * forward) > 1e-6 * forward:
            failures.append(f"{name}: backward compute is not two forwards'")
        if again["cross_node_bytes_per_rank"] != base["cross_node_bytes_per_rank"]:
            failures.append(f"{name} --recompute: other cross-node bytes")
        if not again["seconds"] > base["seconds"] + 0.99 * forward:
            failures.append(f"{name} --recompute: the step did not take the recomputation")
    return failures


def expected_state(name: str, prefetch: int, in_flight: dict = LAYERS_IN_FLIGHT) -> float:
    secondary = 2 * PARAMS / PER_NODE if name == "ZeRO++" else 0
    return 16 * PARAMS / RANKS + secondary + in_flight[prefetch] * 2 * PARAMS / LAYERS


def check_node_copy_read_in_place(gathering: dict, reading: dict) -> list:
    """ZeRO++ reading hpZ's copy in place against gathering it, at each prefetch depth."""
    failures = []
    for p, run in reading.items():
        base, shared = gathering[p]["ZeRO++"], run["ZeRO++"]
        print(f"ZeRO++ prefetch {p}, node copy read in place: backward all-gather "
              f"{shared['backward all-gather'] * 1e3:.3f} ms (gathered: "
              f"{base['backward all-gather'] * 1e3:.3f}), step {shared['seconds'] * 1e3:.2f} ms "
              f"({base['seconds'] * 1e3:.2f}), layers in flight {shared['layers_in_flight']}")
        if shared["cross_node_bytes_per_rank"] != base["cross_node_bytes_per_rank"]:
            failures.append(f"prefetch {p}, read in place: other cross-node bytes")
        # A node barrier of 4 bytes against gathering every layer inside the node.
        if not shared["backward all-gather"] < 0.1 * base["backward all-gather"]:
            failures.append(f"prefetch {p}, read in place: the backward still gathers")
        if not shared["seconds"] <= base["seconds"] * 1.0001:
            failures.append(f"prefetch {p}, read in place: a longer step than gathering")
        state = shared["peak_state_bytes_per_rank"]
        expected = expected_state("ZeRO++", p, LAYERS_IN_FLIGHT_READING_IN_PLACE)
        if abs(state - expected) > 1e-6 * expected:
            failures.append(f"prefetch {p}, read in place: peak state {state:.6g} B, expected "
                            f"{expected:.6g}")
    return failures


def main() -> int:
    tool = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        runs = {p: step(tool, p, Path(folder)) for p in (0, 1, 2)}
        failures += check_recompute(runs[0], step(tool, 0, Path(folder), ("--recompute",)))
        reading = {p: step(tool, p, Path(folder), ("--node-copy", "shared"), "++")
                   for p in (0, 1, 2)}
        failures += check_node_copy_read_in_place(runs, reading)
    for name in ("ZeRO-3", "ZeRO++"):
        base = runs[0][name]
        compute = base["forward compute"] + base["backward compute"]
        communication = sum(base[p] for p in ("forward all-gather", "backward all-gather",
                                              "gradient reduce-scatter"))
        print(f"{name}: compute {compute * 1e3:.2f} ms, collectives {communication * 1e3:.2f} ms; "
              "step " + ", ".join(f"prefetch {p}: {runs[p][name]['seconds'] * 1e3:.2f} ms"
                                  for p in runs))
        if not compute <= base["seconds"] <= (compute + communication) * 1.0001:
            failures.append(f"{name} without overlap: step outside "
                            "[compute, compute + collectives]")
        for p in (1, 2):
            run = runs[p][name]
            if run["cross_node_bytes_per_rank"] != base["cross_node_bytes_per_rank"]:
                failures.append(f"{name} prefetch {p}: other cross-node bytes than without overlap")
            if not compute * 0.9999 <= run["seconds"] <= base["seconds"] * 1.0001:
                failures.append(f"{name} prefetch {p}: step outside "
                                "[compute, step without overlap]")
        for p, run in runs.items():
            state, expected = run[name]["peak_state_bytes_per_rank"], expected_state(name, p)
            if abs(state - expected) > 1e-6 * expected:
                failures.append(f"{name} prefetch {p}: peak state {state:.6g} B, expected "
                                f"{expected:.6g}")
    zero3 = runs[1]["ZeRO-3"]
    if zero3["seconds"] > 0.85 * runs[0]["ZeRO-3"]["seconds"]:
        failures.append("ZeRO-3 prefetch 1: the step did not shrink where compute and "
                        "collectives are of a size")
    for failure in failures:
        print("FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
