#!/usr/bin/env python3
"""Kills the last of 4 ranks (2 emulated nodes of 2) in the middle of a large all-gather, a
qgZ reduce-scatter and a two-level all-reduce, under zcclrun (UCX) and under mpiexec
-disable-auto-cleanup (MPI), and checks every survivor: zcclRemoteError or zcclTimeout within
ZCCL_TIMEOUT_S + 5 s, a message naming the operation and the dead rank, a prompt abort, a
clean exit, and no process left behind.

usage: peer_death_test.py TIMEOUT_S ZCCLRUN PEER_UCX [MPIEXEC PEER_MPI]
"""
import os
import re
import subprocess
import sys
import time

OPERATIONS = {
    "all-gather": "zcclAllGather",
    "qgz-reduce-scatter": "zcclReduceScatter",
    "two-level-all-reduce": "zcclAllReduce",
}
RANKS = 4
VICTIM = RANKS - 1
LINE = re.compile(r"^survivor rank=(\d+) result=(\d+) call_s=([\d.]+) abort_s=([\d.]+) "
                  r"aborted=(\d+) message=(.*)$", re.M)
REMOTE_ERROR, TIMEOUT = 5, 6
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def run(what, command, timeout_s):
    env = dict(os.environ, ZCCL_TIMEOUT_S=str(timeout_s), ZCCL_RANKS_PER_NODE="2")
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env,
                                timeout=timeout_s + 60, start_new_session=True)
    except subprocess.TimeoutExpired as expired:
        check(False, f"{what}: the job was still running after {timeout_s + 60} s")
        return
    elapsed = time.monotonic() - start
    out = result.stdout + result.stderr
    survivors = {int(m[0]): m for m in LINE.findall(result.stdout)}
    check(sorted(survivors) == list(range(VICTIM)),
          f"{what}: survivors that reported: {sorted(survivors)}\n{out}")
    for rank, (_, code, call_s, abort_s, aborted, message) in survivors.items():
        code, call_s, abort_s = int(code), float(call_s), float(abort_s)
        check(code in (REMOTE_ERROR, TIMEOUT), f"{what}: rank {rank} returned {code}: {message}")
        check(call_s <= timeout_s + 5, f"{what}: rank {rank} took {call_s} s")
        check(abort_s <= 5, f"{what}: rank {rank}'s abort took {abort_s} s")
        check(aborted == "0", f"{what}: rank {rank}'s abort returned {aborted}")
        check(OPERATIONS[command[-1]] in message, f"{what}: rank {rank} names no operation: "
              f"{message}")
        check(f"rank {VICTIM}" in message, f"{what}: rank {rank} does not name rank {VICTIM}: "
              f"{message}")
    print(f"{what}: {len(survivors)} survivors in {elapsed:.1f} s")


def main():
    timeout_s = float(sys.argv[1])
    zcclrun, peer_ucx = sys.argv[2], sys.argv[3]
    for operation in OPERATIONS:
        run(f"zcclrun {operation}", [zcclrun, "-n", str(RANKS), "--timeout",
                                      str(timeout_s + 50), peer_ucx, operation], timeout_s)
    if len(sys.argv) > 5:
        mpiexec, peer_mpi = sys.argv[4], sys.argv[5]
        for operation in OPERATIONS:
            # Hydra signals every process group of the job when one rank dies, even with
            # -disable-auto-cleanup: the ranks run in sessions of their own (setsid).
            run(f"mpiexec {operation}", [mpiexec, "-disable-auto-cleanup", "-n", str(RANKS),
                                          "setsid", "--wait", peer_mpi, operation], timeout_s)
    for failure in failures:
        print("FAILED:", failure)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
