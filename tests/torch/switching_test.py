"""What a user switching from torch's NCCL or gloo backend meets first (torchrun
--nproc-per-node N, N >= 2): bool reductions as NCCL's backend does them, split_group,
sequence numbers, lists of uneven sizes, a sparse tensor refused by name (on one rank: the
others' calls fail at once, naming it), recv from any source, monitored_barrier naming the
ranks that did not arrive, and a barrier timeout that reads as torch's own ("Timed out ...").
References are computed here from every rank's inputs (gathered over gloo) or analytically."""
import datetime
import os

import torch
import torch.distributed as dist

import zccl_torch  # noqa: F401  registers "zccl"
from verdict import expect_error, failures, finish


def gathered(x: torch.Tensor, gloo) -> list:
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x, group=gloo)
    return parts


def test_bool_reductions(gloo) -> None:
    """Logical or for SUM and MAX, logical and for MIN and PRODUCT (NCCL's backend)."""
    me = dist.get_rank()
    generator = torch.Generator().manual_seed(77 + me)
    mine = torch.randint(0, 2, (1000,), generator=generator).bool()
    mine[0] = me == 0  # one element true on one rank only, one false on one rank only
    mine[1] = me != 0
    every = torch.stack([p.bool() for p in gathered(mine.to(torch.uint8), gloo)])
    anyone, everyone = every.any(dim=0), every.all(dim=0)
    for op, want in ((dist.ReduceOp.SUM, anyone), (dist.ReduceOp.MAX, anyone),
                     (dist.ReduceOp.MIN, everyone), (dist.ReduceOp.PRODUCT, everyone)):
        got = mine.clone()
        dist.all_reduce(got, op=op)
        if got.dtype != torch.bool or not torch.equal(got, want):
            failures.append(f"all_reduce bool {op}: differs from the logical reference")
    expect_error("all_reduce bool AVG", lambda: dist.all_reduce(mine.clone(),
                                                                 op=dist.ReduceOp.AVG), "bool")


def test_split_group(gloo) -> None:
    world, me = dist.get_world_size(), dist.get_rank()
    halves = [list(range(0, world // 2 + 1)), list(range(world // 2 + 1, world))]
    halves = [h for h in halves if h]
    child = dist.split_group(split_ranks=halves)
    mine = next(h for h in halves if me in h)
    if child is None or dist.get_world_size(child) != len(mine):
        failures.append(f"split_group: rank {me} got {child} for {mine}")
        return
    x = torch.full((5,), float(me + 1))
    dist.all_reduce(x, group=child)
    want = float(sum(r + 1 for r in mine))
    if not torch.equal(x, torch.full((5,), want)):
        failures.append(f"split_group {mine}: all_reduce gave {x.tolist()}, want {want}")
    counted = zccl_torch.stats(child)
    if counted["intra_node_bytes"] + counted["inter_node_bytes"] == 0 and len(mine) > 1:
        failures.append(f"split_group {mine}: its communicator counted no bytes")


def test_sequence_numbers(gloo) -> None:
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    before = backend._get_sequence_number_for_group()
    dist.all_reduce(torch.ones(3))
    dist.broadcast(torch.ones(3), 0)
    after = backend._get_sequence_number_for_group()
    if after != before + 2:
        failures.append(f"sequence number: {before} -> {after} over two collectives")
    numbers = gathered(torch.tensor([after]), gloo)
    if len({int(n) for n in numbers}) != 1:
        failures.append(f"sequence numbers differ between ranks: {[int(n) for n in numbers]}")


def test_uneven_lists() -> None:
    """all_gather and reduce_scatter with a size per rank, as torch's NCCL backend accepts."""
    n, me = dist.get_world_size(), dist.get_rank()
    mine = torch.arange(me + 1, dtype=torch.float32) + 100 * me
    outputs = [torch.empty(r + 1) for r in range(n)]
    dist.all_gather(outputs, mine)
    for r, got in enumerate(outputs):
        if not torch.equal(got, torch.arange(r + 1, dtype=torch.float32) + 100 * r):
            failures.append(f"uneven all_gather: rank {r}'s part is {got.tolist()}")

    def part(rank: int, target: int) -> torch.Tensor:  # what `rank` sends to `target`
        return 10 * rank + target + 0.5 * torch.arange(target + 2, dtype=torch.float32)

    for op, combine in ((dist.ReduceOp.SUM, lambda t: sum(part(r, me) for r in range(n))),
                        (dist.ReduceOp.MAX, lambda t: part(n - 1, me))):
        output = torch.empty(me + 2)
        dist.reduce_scatter(output, [part(me, t) for t in range(n)], op=op)
        if not torch.equal(output, combine(me)):
            failures.append(f"uneven reduce_scatter {op}: {output.tolist()}")


def test_sparse_refused() -> None:
    sparse = torch.ones(4).to_sparse()
    for what, call in (("broadcast", lambda: dist.broadcast(sparse, 0)),
                       ("all_gather_into_tensor",
                        lambda: dist.all_gather_into_tensor(
                            torch.empty(4 * dist.get_world_size()), sparse))):
        expect_error(f"{what} of a sparse tensor", call, "sparse")


def test_argument_error_on_one_rank() -> None:
    """Rank 0 passes a sparse (then a non-contiguous) tensor, the others dense ones: rank 0's
    error says why, and the others' calls fail at once naming rank 0 and why (within the
    group's timeout of 300 s they would otherwise wait for it). Each case on a group of its
    own, since a peer's failed call leaves its communicator to be aborted."""
    me = dist.get_rank()
    cases = (("sparse", torch.ones(4).to_sparse(), torch.ones(4)),
             ("not contiguous", torch.ones(4, 4).t(), torch.ones(4, 4)))
    for why, rejected, accepted in cases:
        group = dist.new_group(backend="zccl")
        expect_error(f"all_reduce of a tensor that is {why} on rank 0",
                     lambda: dist.all_reduce(rejected if me == 0 else accepted, group=group),
                     why if me == 0 else f"rank 0 rejected its own arguments to this call: "
                                         f"zccl backend: allreduce: tensors is {why}")
        dist.destroy_process_group(group)


def test_recv_from_any_source() -> None:
    """recv without src (gloo's recvAnysource): rank 0 takes two messages from every other
    rank in whatever order they come; each says who sent it and its place in that sender's
    sequence, which must match the source recv returns and the order sent."""
    n, me = dist.get_world_size(), dist.get_rank()
    if me != 0:
        for k in range(2):
            dist.send(torch.full((1000,), float(me * 10 + k)), 0)
        return
    next_from = {r: 0 for r in range(1, n)}
    for _ in range(2 * (n - 1)):
        got = torch.empty(1000)
        source = dist.recv(got)
        if source not in next_from:
            failures.append(f"recv from any source: source {source} is not a sender")
            continue
        want = float(source * 10 + next_from[source])
        next_from[source] += 1
        if not torch.equal(got, torch.full((1000,), want)):
            failures.append(f"recv from any source: rank {source}'s message is "
                            f"{got[0].item()}..., want {want}")
    if any(count != 2 for count in next_from.values()):
        failures.append(f"recv from any source: messages per sender {next_from}")


def test_monitored_barrier() -> None:
    """Every rank arrives: no error. Only rank 0 arrives (wait_all_ranks): it names every
    other rank. All but the last arrive: each of them names the last."""
    n, me = dist.get_world_size(), dist.get_rank()
    short = datetime.timedelta(seconds=2)
    everyone, alone, but_last = (dist.new_group(backend="zccl") for _ in range(3))
    dist.monitored_barrier(everyone, timeout=short)
    if me == 0:
        others = ", ".join(str(r) for r in range(1, n))
        expect_error("monitored_barrier only rank 0 reaches",
                     lambda: dist.monitored_barrier(alone, timeout=short, wait_all_ranks=True),
                     f"Rank{'s' if n > 2 else ''} {others} failed to pass monitoredBarrier")
    if me != n - 1:
        expect_error("monitored_barrier the last rank never reaches",
                     lambda: dist.monitored_barrier(but_last, timeout=short),
                     f"Rank {n - 1} failed to pass monitoredBarrier")


def test_barrier_timeout() -> None:
    """Rank 0 waits in a barrier the others never enter, for the group's timeout (which
    ZCCL_TIMEOUT_S, set by ctest for the other groups, would override)."""
    os.environ.pop("ZCCL_TIMEOUT_S", None)
    lonely = dist.new_group(backend="zccl", timeout=datetime.timedelta(seconds=2))
    if dist.get_rank() == 0:
        error = None
        try:
            dist.barrier(group=lonely)
        except RuntimeError as caught:
            error = str(caught)
        # torch's own suite matches " (Timed out|closed|timeout) " in its backends' messages.
        if error is None or not error.startswith("Timed out") or " Timed out " not in error:
            failures.append(f"barrier timeout: message does not start 'Timed out' and say "
                            f"' Timed out ' as torch's backends' do: {error}")


def main() -> None:
    dist.init_process_group("zccl")
    gloo = dist.new_group(backend="gloo")
    test_bool_reductions(gloo)
    test_split_group(gloo)
    test_sequence_numbers(gloo)
    test_uneven_lists()
    test_sparse_refused()
    test_argument_error_on_one_rank()
    test_recv_from_any_source()
    test_monitored_barrier()
    dist.barrier(group=gloo)
    test_barrier_timeout()
    dist.barrier(group=gloo)
    finish()


if __name__ == "__main__":
    main()
