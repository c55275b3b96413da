"""async_op=True on the zccl backend (torchrun --nproc-per-node N): a work object is not done
when the call returns and is at wait(); its future is set when the collective ends; a
failure is raised from wait(); results copied out of a coalescing block come after the
gathers they copy."""
import datetime
import os
import time

import torch
import torch.distributed as dist

import zccl_torch  # noqa: F401  registers "zccl"
from verdict import expect, finish


def late_peer_leaves_the_work_pending(rank: int, world: int) -> None:
    # Every rank but 0 joins late: rank 0's all-reduce cannot finish before they do, so its
    # work must not be done when the call returns, whatever the machine's speed.
    x = torch.full((1 << 16,), float(rank + 1))
    dist.barrier()
    if rank != 0:
        time.sleep(0.5)
    work = dist.all_reduce(x, async_op=True)
    if rank == 0:
        expect(not work.is_completed(), "all_reduce: the work was done before the others joined")
    future = work.get_future()
    work.wait()
    expect(work.is_completed(), "all_reduce: the work is not done after wait()")
    expect(future.done(), "all_reduce: the future is not set once the work is done")
    total = world * (world + 1) / 2
    expect(bool((x == total).all()), f"all_reduce: got {float(x[0])}, expected {total}")
    expect(bool((future.value()[0] == total).all()), "all_reduce: the future's value differs")


def overlapped_calls_keep_their_order(rank: int, world: int) -> None:
    x = torch.ones(1 << 14, dtype=torch.float64)
    works = [dist.all_reduce(x, async_op=True) for _ in range(3)]
    gathered = [torch.empty_like(x) for _ in range(world)]
    works.append(dist.all_gather(gathered, x, async_op=True))
    for work in works:
        work.wait()
    expect(bool((x == world**3).all()), f"three all-reduces in a row: got {float(x[0])}")
    expect(all(bool((g == world**3).all()) for g in gathered), "all_gather after them")


def coalesced_gathers_copy_out_after_they_ran(rank: int, world: int) -> None:
    inputs = [torch.full((100 + i,), float(10 * rank + i)) for i in range(3)]
    outputs = [[torch.empty(100 + i) for _ in range(world)] for i in range(3)]
    with dist._coalescing_manager(async_ops=True) as manager:
        for i in range(3):
            dist.all_gather(outputs[i], inputs[i])
    manager.wait()
    for i in range(3):
        for r in range(world):
            expect(bool((outputs[i][r] == 10 * r + i).all()),
                   f"coalesced all_gather {i}: rank {r}'s part is {float(outputs[i][r][0])}")


def a_timeout_is_raised_from_wait(rank: int, world: int) -> None:
    os.environ.pop("ZCCL_TIMEOUT_S", None)  # the group's own timeout bounds the wait
    group = dist.new_group(backend="zccl", timeout=datetime.timedelta(seconds=2))
    x = torch.ones(1024)
    dist.barrier()
    if rank == 0:
        work = dist.all_reduce(x, group=group, async_op=True)  # nobody else joins
        try:
            work.wait()
            expect(False, "wait() returned although the peers never joined")
        except RuntimeError as error:
            expect("ZCCL_TIMEOUT_S" in str(error) or "imed out" in str(error),
                   f"the timeout's message: {error}")
    dist.barrier()


def main() -> None:
    dist.init_process_group("zccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    late_peer_leaves_the_work_pending(rank, world)
    overlapped_calls_keep_their_order(rank, world)
    coalesced_gathers_copy_out_after_they_ran(rank, world)
    a_timeout_is_raised_from_wait(rank, world)
    finish()


if __name__ == "__main__":
    main()
