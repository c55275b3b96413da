#!/usr/bin/env python3
"""Kills the last of 4 ranks (2 emulated nodes of 2) in the middle of every collective family
(all-gather, qgZ reduce-scatter, two-level all-reduce, broadcast, all-to-all, reduce, gather,
scatter), large (one 32 MiB call) and small (4 KiB calls one after the other), blocking and
queued with a request, under zcclrun and under mpiexec -disable-auto-cleanup (a communicator
made from MPI), and checks every survivor: a failure (zcclRemoteError, zcclTimeout, or the
system error of a connection the dead rank's exit reset) within ZCCL_TIMEOUT_S + 15 s, a
message naming the operation and the dead rank (or a rooted collective's survivor that exited
after its call ended well, if found gone first), an abort within 15 s, a clean exit, and no
process left behind. The margins tell a hang from a failure that came late on a loaded host
(four ranks on two cores beside other suites); they time nothing. The jobs run PEER_DEATH_JOBS
(4) at a time: most of a job is its survivors waiting out the timeout, asleep (on a host with
AVX-512: 67 s three at a time, 57 s four at a time; six at a time, 42 s, stretched jobs to 12 s).

usage: peer_death_test.py TIMEOUT_S ZCCLRUN PEER_UCX [MPIEXEC PEER_MPI]
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from checks import check, verdict  # noqa: E402

OPERATIONS = {
    "all-gather": "zcclAllGather",
    "qgz-reduce-scatter": "zcclReduceScatter",
    "two-level-all-reduce": "zcclAllReduce",
    "broadcast": "zcclBroadcast",
    "all-to-all": "zcclAllToAll",
    "reduce": "zcclReduce",
    "gather": "zcclGather",
    "scatter": "zcclScatter",
}
# PEER_DEATH_OPERATIONS=all-gather,qgz-reduce-scatter: only those families (make test's quick
# run; make check runs them all).
if os.environ.get("PEER_DEATH_OPERATIONS"):
    OPERATIONS = {name: OPERATIONS[name] for name in os.environ["PEER_DEATH_OPERATIONS"].split(",")}
ROOTED = {"broadcast", "reduce", "gather", "scatter"}
# Each launcher runs every family large and small, one of them blocking and the other queued.
CASES = {"zcclrun": [("large", "blocking"), ("small", "request")],
         "mpiexec": [("large", "request"), ("small", "blocking")]}
RANKS = 4
VICTIM = RANKS - 1
LINE = re.compile(r"^survivor rank=(\d+) result=(\d+) call_s=([\d.]+) abort_s=([\d.]+) "
                  r"aborted=(\d+) message=(.*)$", re.M)
SYSTEM_ERROR, REMOTE_ERROR, TIMEOUT = 3, 5, 6
LATE_S = 15  # past the timeout: a hang, not a failure seen late
VICTIM_DONE = "victim: the call ended before the kill"
MIN_KILL_MS = 8  # 200, 40, 8: the kills tried


def processes_of(folder):
    """The live processes started with PEER_DEATH_REPORT_DIR=folder: this job's ranks."""
    mark = f"PEER_DEATH_REPORT_DIR={folder}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if mark in environ.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass  # gone, or a zombie
    return found


def kill_all(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def launch(command, env, timeout_s):
    """Runs the job; returns its output, the ranks' reports (read from their own files: the
    ranks' stdout is merged with UCX's warnings, which can cut a line) and the ranks still alive
    once the launcher returned (after a grace of LATE_S), or None on a hang."""
    with tempfile.TemporaryDirectory(prefix="peer_death.") as folder:
        try:
            result = subprocess.run(command, capture_output=True, text=True,
                                    env=dict(env, PEER_DEATH_REPORT_DIR=folder),
                                    timeout=timeout_s + 60, start_new_session=True)
        except subprocess.TimeoutExpired:
            kill_all(processes_of(folder))
            return None
        deadline = time.monotonic() + LATE_S
        while processes_of(folder) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = processes_of(folder)
        kill_all(left)
        reports = ""
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name)) as report:
                reports += report.read()
    return result.stdout + result.stderr, reports, left


def run(what, command, timeout_s, kill_ms=200):
    operation, size = command[-3], command[-2]
    env = dict(os.environ, ZCCL_TIMEOUT_S=str(timeout_s), ZCCL_RANKS_PER_NODE="2",
               PEER_DEATH_KILL_MS=str(kill_ms))
    start = time.monotonic()
    launched = launch(command, env, timeout_s)
    if launched is None:
        check(False, f"{what}: the job was still running after {timeout_s + 60} s")
        return
    elapsed = time.monotonic() - start
    out, reports, left = launched
    check(not left, f"{what}: processes left behind after the launcher returned: {left}")
    survivors = {int(m[0]): m for m in LINE.findall(reports)}
    # A large call the victim's part of was over before the kill (a fast host: its call ended
    # first, or every byte it owed had left and nobody needed more of it) tests nothing: again,
    # with an earlier kill; the last kill's run is held to every check.
    succeeded = [rank for rank, m in survivors.items() if m[1] == "0"]
    late = VICTIM_DONE in reports or (
        size == "large" and survivors and
        (len(succeeded) == len(survivors) or (succeeded and operation not in ROOTED)))
    if late and kill_ms > MIN_KILL_MS:
        print(f"{what}: the victim's part was over before the kill at {kill_ms} ms; again with "
              "an earlier one")
        run(what, command, timeout_s, kill_ms // 5)
        return
    check(VICTIM_DONE not in reports,
          f"{what}: the call ended within {kill_ms} ms, before any kill")
    check(sorted(survivors) == list(range(VICTIM)),
          f"{what}: survivors that reported: {sorted(survivors)}\n{out}")
    failed = 0
    # A rooted collective's rank whose large call ended well aborts and exits while the others
    # may still be in theirs: they may find it gone before the victim, and say so, truly.
    gone_first = ([f"rank {rank} (pid" for rank in succeeded]
                  if size == "large" and operation in ROOTED else [])
    for rank, (_, code, call_s, abort_s, aborted, message) in survivors.items():
        code, call_s, abort_s = int(code), float(call_s), float(abort_s)
        check(call_s <= timeout_s + LATE_S, f"{what}: rank {rank} took {call_s} s")
        check(abort_s <= LATE_S, f"{what}: rank {rank}'s abort took {abort_s} s")
        check(aborted == "0", f"{what}: rank {rank}'s abort returned {aborted}")
        # One large call of a rooted collective may end well on a rank that needs nothing of
        # the dead one (broadcast's root, gather's and scatter's other ranks).
        if code == 0 and size == "large" and operation in ROOTED:
            continue
        failed += 1
        check(code in (SYSTEM_ERROR, REMOTE_ERROR, TIMEOUT),
              f"{what}: rank {rank} returned {code}: {message}")
        check(OPERATIONS[operation] in message, f"{what}: rank {rank} names no operation: "
              f"{message}")
        check(f"rank {VICTIM}" in message or any(gone in message for gone in gone_first),
              f"{what}: rank {rank} names neither rank {VICTIM} nor a survivor that exited after "
              f"its call ended well: {message}")
    check(failed > 0, f"{what}: no survivor saw the failure")
    print(f"{what}: {len(survivors)} survivors ({failed} failed as they should) in {elapsed:.1f} s")


def jobs(timeout_s):
    """(what, command) of every job: each family, size and mode under each launcher."""
    zcclrun, peer_ucx = sys.argv[2], sys.argv[3]
    for operation in OPERATIONS:
        for size, mode in CASES["zcclrun"]:
            yield (f"zcclrun {operation} {size} {mode}",
                   [zcclrun, "-n", str(RANKS), "--timeout", str(timeout_s + 50), peer_ucx,
                    operation, size, mode])
    if len(sys.argv) > 5:
        mpiexec, peer_mpi = sys.argv[4], sys.argv[5]
        for operation in OPERATIONS:
            for size, mode in CASES["mpiexec"]:
                # Hydra signals every process group of the job when one rank dies, even with
                # -disable-auto-cleanup: the ranks run in sessions of their own (setsid).
                yield (f"mpiexec {operation} {size} {mode}",
                       [mpiexec, "-disable-auto-cleanup", "-n", str(RANKS), "setsid", "--wait",
                        peer_mpi, operation, size, mode])


def main():
    timeout_s = float(sys.argv[1])
    # Each job's ranks are found by the report folder of their own, so jobs side by side never
    # see each other's processes.
    with ThreadPoolExecutor(int(os.environ.get("PEER_DEATH_JOBS", "4"))) as pool:
        for done in [pool.submit(run, what, command, timeout_s) for what, command in
                     jobs(timeout_s)]:
            done.result()
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
