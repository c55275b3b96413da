"""What the torch tests share: the failures a rank collects, and its verdict (printed, and its
exit status) once the checks are done."""
import sys

import torch.distributed as dist

failures = []


def expect(condition: bool, message: str) -> None:
    if not condition:
        failures.append(message)


def expect_error(what: str, call, needle: str) -> None:
    """call() must raise an error whose message names `needle` (case aside)."""
    try:
        call()
    except (RuntimeError, ValueError, TypeError, NotImplementedError) as error:
        if needle.lower() not in str(error).lower():
            failures.append(f"{what}: error does not name {needle!r}: {error}")
        return
    failures.append(f"{what}: no error")


def finish(summary: str = "") -> None:
    """Prints this rank's failures and verdict, leaves the process group and exits 1 on any
    failure."""
    rank = dist.get_rank()
    for failure in failures:
        print(f"rank {rank}: FAIL {failure}", flush=True)
    print(f"rank {rank}: {'FAILED' if failures else 'passed'}{summary}", flush=True)
    dist.destroy_process_group()
    sys.exit(1 if failures else 0)
