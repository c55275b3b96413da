#!/usr/bin/env python3
"""zccl-sim's ZeRO step with the ZeRO layer's prefetch against the same step without overlap,
in virtual time: the same collectives (the same cross-node bytes) and compute, a step that
never takes longer than without overlap nor less than its compute, and, where compute and
communication are of a size, a step well under their sum. Prefetch's price in memory: the
model state reported at its peak, 16P/N (+ hpZ's 2P per node's ranks for ZeRO++) plus the
layers in flight, as many as ZeroOptimizer::peakModelStateBytes counted for 6 equal modules
on 2 ranks (zero_demo --layers 6 --stage 3): 1, 4 and 6 at prefetch 0, 1 and 2. With the
forward recomputed in the backward (--recompute, activation checkpointing), the backward's
compute is three forwards' and the collectives are the same.
usage: zero_overlap_check.py ZCCL_SIM"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path


PARAMS, LAYERS, RANKS, PER_NODE = 4e7, 6, 8, 4
LAYERS_IN_FLIGHT = {0: 1, 1: 4, 2: 6}


def step(tool: str, prefetch: int, folder: Path, extra: tuple = ()) -> dict:
    out = folder / f"prefetch{prefetch}{''.join(extra)}.json"
    # 8 ranks in 2 nodes; compute about as long as ZeRO-3's collectives.
    subprocess.run([tool, "--ranks", str(RANKS), "--zero", "both", "--params", str(PARAMS),
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


def expected_state(name: str, prefetch: int) -> float:
    secondary = 2 * PARAMS / PER_NODE if name == "ZeRO++" else 0
    return 16 * PARAMS / RANKS + secondary + LAYERS_IN_FLIGHT[prefetch] * 2 * PARAMS / LAYERS


def main() -> int:
    tool = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        runs = {p: step(tool, p, Path(folder)) for p in (0, 1, 2)}
        failures += check_recompute(runs[0], step(tool, 0, Path(folder), ("--recompute",)))
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
