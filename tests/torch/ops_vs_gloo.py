"""Every torch.distributed operation on the zccl backend against gloo on the same inputs
(torchrun --nproc-per-node N): float32, bfloat16 and int64, in place and out of place, on the
world group and on sub-groups. Integers must equal gloo's exactly; floats within one rounding
of their type per rank (zccl and gloo may add in different orders). zccl's tensors live on
ZCCL_TORCH_TEST_DEVICE (default cpu; cuda: zccl's device path, every process on the current
GPU), gloo's on the CPU."""
import contextlib
import os

import torch
import torch.distributed as dist

import zccl_torch  # noqa: F401  registers "zccl"
from verdict import expect, expect_error, failures, finish

DTYPES = [torch.float32, torch.bfloat16, torch.int64]
ZCCL_DEVICE = torch.device(os.environ.get("ZCCL_TORCH_TEST_DEVICE", "cpu"))


def inputs(rank: int, case: int, numel: int, dtype: torch.dtype) -> torch.Tensor:
    """The same values on every device: drawn on the CPU, then moved to the default device."""
    generator = torch.Generator().manual_seed(1000 * case + rank)
    if dtype.is_floating_point:
        x = torch.randn(numel, generator=generator, device="cpu").to(dtype)
    else:
        x = torch.randint(-50, 50, (numel,), generator=generator, dtype=dtype, device="cpu")
    return x.to(torch.get_default_device())


def on_zccl(run, group) -> torch.Tensor:
    """run(group) with zccl's tensors made on ZCCL_DEVICE; the result back on the CPU."""
    with ZCCL_DEVICE:
        return run(group).cpu()


def check(name: str, got: torch.Tensor, want: torch.Tensor, ranks: int) -> None:
    if got.dtype != want.dtype or got.shape != want.shape:
        failures.append(f"{name}: got {got.dtype}{tuple(got.shape)}, "
                        f"gloo {want.dtype}{tuple(want.shape)}")
        return
    if not got.dtype.is_floating_point:
        if not torch.equal(got, want):
            failures.append(f"{name}: differs from gloo at {int((got != want).sum())} elements")
        return
    # One rounding of the type per rank on the magnitude of the operands.
    eps = torch.finfo(got.dtype).eps
    tolerance = ranks * eps * (want.double().abs() + 1.0)
    error = (got.double() - want.double()).abs()
    if bool((error > tolerance).any()):
        failures.append(f"{name}: max error {float(error.max()):.3g} beyond {ranks} roundings")


def both(group_pair, run):
    """run(group) -> tensor, on zccl's group then gloo's."""
    zccl_group, gloo_group = group_pair
    return on_zccl(run, zccl_group), run(gloo_group)


def test_group(tag: str, pair, members: list) -> None:
    zgroup, _ = pair
    size = len(members)
    rank = dist.get_rank(zgroup)
    me = dist.get_rank()
    for dtype in DTYPES:
        t = dtype
        name = lambda op: f"[{tag}] {op} {str(t).removeprefix('torch.')}"  # noqa: E731
        for numel in (1, 7, 1000, 4099):
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN):
                def allreduce(group, op=op):
                    x = inputs(me, 1, numel, dtype)
                    dist.all_reduce(x, op=op, group=group)
                    return x
                check(name(f"all_reduce {op} n={numel}"), *both(pair, allreduce), size)
        x = inputs(me, 2, 64, dtype)
        if dtype != torch.int64:
            got = x.clone().to(ZCCL_DEVICE)
            dist.all_reduce(got, op=dist.ReduceOp.AVG, group=zgroup)
            want = x.clone()
            dist.all_reduce(want, group=pair[1])
            check(name("all_reduce AVG"), got.cpu(), (want.double() / size).to(dtype), size + 1)
            got = x.clone().to(ZCCL_DEVICE)
            dist.all_reduce(got, op=dist._make_nccl_premul_sum(0.5), group=zgroup)
            check(name("all_reduce PREMUL_SUM(0.5)"), got.cpu(), (want.double() * 0.5).to(dtype),
                  size + 1)
        small = inputs(me, 3, 5, dtype).abs() % 3 + 1 if dtype == torch.int64 else None
        if small is not None:
            def product(group):
                y = small.clone()
                dist.all_reduce(y, op=dist.ReduceOp.PRODUCT, group=group)
                return y
            check(name("all_reduce PRODUCT"), *both(pair, product), size)

        def coalesced(group):
            tensors = [inputs(me, 4, n, dtype) for n in (3, 10, 33)]
            dist.all_reduce_coalesced(tensors, group=group)
            return torch.cat(tensors)
        check(name("all_reduce_coalesced"), *both(pair, coalesced), size)

        for numel in (1, 13, 1000):
            def gather_list(group):
                outs = [torch.empty(numel, dtype=dtype) for _ in range(size)]
                dist.all_gather(outs, inputs(me, 5, numel, dtype), group=group)
                return torch.cat(outs)
            check(name(f"all_gather n={numel}"), *both(pair, gather_list), size)

            def gather_tensor(group):
                out = torch.empty(numel * size, dtype=dtype)
                dist.all_gather_into_tensor(out, inputs(me, 6, numel, dtype), group=group)
                return out
            check(name(f"all_gather_into_tensor n={numel}"), *both(pair, gather_tensor), size)

            def gather_in_place(group):
                out = torch.zeros(numel * size, dtype=dtype)
                chunk = out[rank * numel:(rank + 1) * numel]
                chunk.copy_(inputs(me, 6, numel, dtype))
                dist.all_gather_into_tensor(out, chunk, group=group)
                return out
            check(name(f"all_gather_into_tensor in place n={numel}"),
                  on_zccl(gather_in_place, zgroup), gather_tensor(pair[1]), size)

            def scatter_list(group):
                out = torch.empty(numel, dtype=dtype)
                chunks = list(inputs(me, 7, numel * size, dtype).chunk(size))
                dist.reduce_scatter(out, chunks, group=group)
                return out
            check(name(f"reduce_scatter n={numel}"), *both(pair, scatter_list), size)

            def scatter_tensor(group):
                out = torch.empty(numel, dtype=dtype)
                dist.reduce_scatter_tensor(out, inputs(me, 8, numel * size, dtype), group=group)
                return out
            check(name(f"reduce_scatter_tensor n={numel}"), *both(pair, scatter_tensor), size)

            def scatter_in_place(group):
                data = inputs(me, 8, numel * size, dtype)
                out = data[rank * numel:(rank + 1) * numel]
                dist.reduce_scatter_tensor(out, data, group=group)
                return out.clone()
            check(name(f"reduce_scatter_tensor in place n={numel}"),
                  on_zccl(scatter_in_place, zgroup), scatter_tensor(pair[1]), size)

        def coalesced_manager(group):
            """zccl inside torch's coalescing manager (gloo has none: it runs them one by one)."""
            ins = [inputs(me, 9, n * size, dtype) for n in (4, 9)]
            gathered = [torch.empty(n * size * size, dtype=dtype) for n in (4, 9)]
            scattered = [torch.empty(n, dtype=dtype) for n in (4, 9)]
            coalesce = group is zgroup
            device = torch.get_default_device()
            with dist._coalescing_manager(group=group, device=device) if coalesce \
                    else contextlib.nullcontext():
                for out, x in zip(gathered, ins):
                    dist.all_gather_into_tensor(out, x, group=group)
            with dist._coalescing_manager(group=group, device=device) if coalesce \
                    else contextlib.nullcontext():
                for out, x in zip(scattered, ins):
                    dist.reduce_scatter_tensor(out, x, group=group)
            return torch.cat(gathered + scattered)
        check(name("coalesced all_gather_into_tensor + reduce_scatter_tensor"),
              *both(pair, coalesced_manager), size)

        for root in sorted({0, size - 1}):
            def broadcast(group, root=root):
                x = inputs(me, 10, 77, dtype)
                dist.broadcast(x, members[root], group=group)
                return x
            check(name(f"broadcast root={root}"), *both(pair, broadcast), size)

            def reduce(group, root=root):
                x = inputs(me, 11, 101, dtype)
                dist.reduce(x, members[root], group=group)
                return x if rank == root else torch.zeros(0, dtype=dtype)
            check(name(f"reduce root={root}"), *both(pair, reduce), size)

            def gather(group, root=root):
                outs = [torch.empty(9, dtype=dtype) for _ in range(size)] if rank == root else None
                dist.gather(inputs(me, 12, 9, dtype), outs, members[root], group=group)
                return torch.cat(outs) if outs else torch.zeros(0, dtype=dtype)
            check(name(f"gather root={root}"), *both(pair, gather), size)

            def scatter(group, root=root):
                out = torch.empty(9, dtype=dtype)
                pieces = list(inputs(me, 13, 9 * size, dtype).chunk(size)) if rank == root else None
                dist.scatter(out, pieces, members[root], group=group)
                return out
            check(name(f"scatter root={root}"), *both(pair, scatter), size)

        def alltoall_equal(group):
            out = torch.empty(6 * size, dtype=dtype)
            dist.all_to_all_single(out, inputs(me, 14, 6 * size, dtype), group=group)
            return out
        check(name("all_to_all_single"), *both(pair, alltoall_equal), size)

        send_splits = [(rank + peer) % 3 + 1 for peer in range(size)]
        recv_splits = [(peer + rank) % 3 + 1 for peer in range(size)]

        def alltoall_uneven(group):
            out = torch.empty(sum(recv_splits), 2, dtype=dtype)
            data = inputs(me, 15, sum(send_splits) * 2, dtype).view(-1, 2)
            dist.all_to_all_single(out, data, recv_splits, send_splits, group=group)
            return out
        check(name("all_to_all_single uneven"), *both(pair, alltoall_uneven), size)

        def alltoall_list(group):
            outs = [torch.empty(recv_splits[p], 2, dtype=dtype) for p in range(size)]
            data = inputs(me, 15, sum(send_splits) * 2, dtype).view(-1, 2)
            dist.all_to_all(outs, list(data.split(send_splits)), group=group)
            return torch.cat(outs)
        # gloo's all_to_all takes equal sizes only: its uneven all_to_all_single is the reference.
        check(name("all_to_all uneven"), on_zccl(alltoall_list, zgroup), alltoall_uneven(pair[1]),
              size)

        def ring(group, step=1):
            right, left = members[(rank + step) % size], members[(rank - step) % size]
            out = torch.empty(50000, dtype=dtype)  # large enough not to be sent eagerly
            ops = [dist.P2POp(dist.isend, inputs(me, 17, 50000, dtype), right, group),
                   dist.P2POp(dist.irecv, out, left, group)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
            return out
        check(name("batch_isend_irecv ring right"), *both(pair, ring), size)
        check(name("batch_isend_irecv ring left"), *both(pair, lambda g: ring(g, -1)), size)

        def send_recv(group):
            out = torch.zeros(33, dtype=dtype)
            if rank == 0:
                dist.send(inputs(me, 18, 33, dtype), members[size - 1], group=group)
            elif rank == size - 1:
                dist.recv(out, members[0], group=group)
            return out
        check(name("send/recv"), *both(pair, send_recv), size)
    dist.barrier(group=zgroup)


def test_bad_use() -> None:
    x = torch.ones(4, dtype=torch.int64)
    expect_error("all_reduce BAND", lambda: dist.all_reduce(x, op=dist.ReduceOp.BAND), "BAND")
    expect_error("all_reduce of an int16 tensor",
                 lambda: dist.all_reduce(torch.ones(2, dtype=torch.int16)), "Short")
    expect_error("reduce_scatter_tensor of the wrong size",
                 lambda: dist.reduce_scatter_tensor(torch.empty(3), torch.ones(2)), "input")
    expect_error("all_gather_into_tensor of the wrong size",
                 lambda: dist.all_gather_into_tensor(torch.empty(3), torch.ones(2)), "output")


def test_streams() -> None:
    """On CUDA tensors, NCCL's stream semantics: a collective issued on a side stream (as FSDP2
    issues its all-gathers) and waited for from the current stream is complete for the current
    stream's next kernel; a collective inside a CUDA graph's capture fails naming it."""
    if ZCCL_DEVICE.type != "cuda":
        return
    world = dist.get_world_size()
    data = torch.full((1 << 22,), dist.get_rank() + 1.0, device=ZCCL_DEVICE)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        work = dist.all_reduce(data, async_op=True)
    work.wait()
    wrong = (data * 2 != world * (world + 1)).sum().item()  # on the current stream
    expect(wrong == 0, f"all_reduce on a side stream, waited for: {wrong} of {data.numel()} wrong")
    # A list's all-gather is copied out of a flat buffer after the call: that copy too.
    gathered = [torch.empty(1 << 20, device=ZCCL_DEVICE) for _ in range(world)]
    mine = torch.full((1 << 20,), dist.get_rank() + 1.0, device=ZCCL_DEVICE)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        work = dist.all_gather(gathered, mine, async_op=True)
    work.wait()
    want = torch.arange(1, world + 1, device=ZCCL_DEVICE, dtype=torch.float32).view(-1, 1)
    wrong = (torch.stack(gathered) != want).sum().item()
    expect(wrong == 0, f"all_gather into a list on a side stream, waited for: {wrong} wrong")
    # A future's callback (DDP's communication hooks) sees the result, and so does its waiter.
    ones = torch.ones(1 << 20, device=ZCCL_DEVICE)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        future = dist.all_reduce(ones, async_op=True).get_future()
    doubled = future.then(lambda done: done.value()[0] * 2).wait()
    wrong = (doubled != 2 * world).sum().item()
    expect(wrong == 0, f"a future's callback after all_reduce on a side stream: {wrong} wrong")
    graph = torch.cuda.CUDAGraph()

    def capture() -> None:
        with torch.cuda.graph(graph):
            dist.all_reduce(data)

    expect_error("all_reduce inside torch.cuda.graph's capture", capture, "captur")
    dist.all_reduce(data)  # the communicator works on
    wrong = (data != world * world * (world + 1) / 2).sum().item()
    expect(wrong == 0, f"all_reduce after a refused capture: {wrong} of {data.numel()} wrong")


def test_error_feedback_policy() -> None:
    """reduce_scatter="int4-ef": summed over steps of the same input, the results stay within
    about one step's error of the exact sums (what quantizing lost is fed back; without it the
    error would add up step after step), with residuals kept in float32 or in bfloat16, which
    holds half the bytes. The exact sums are computed here from every rank's input; each step
    starts with an all-gather, as a training step's forward does."""
    if ZCCL_DEVICE.type != "cpu":
        return  # the residuals live on host memory, beside host tensors
    world, me = dist.get_world_size(), dist.get_rank()
    shard, steps = 4096, 20
    x = inputs(me, 7, shard * world, torch.float32)
    every = torch.stack([inputs(r, 7, shard * world, torch.float32) for r in range(world)])
    exact = every.double().sum(dim=0)[me * shard:(me + 1) * shard]
    held = {}
    for precision in ("fp32", "bf16", "int8"):
        group = dist.new_group(backend="zccl")
        zccl_torch.set_policy(group, reduce_scatter="int4-ef", feedback_precision=precision)
        before = zccl_torch.call_state_bytes()
        out, total = torch.empty(shard), torch.zeros(shard, dtype=torch.float64)
        weights = torch.empty(world)
        for step in range(steps):
            # A step's state is found by its place after the step's first all-gather.
            dist.all_gather_into_tensor(weights, torch.ones(1), group=group)
            dist.reduce_scatter_tensor(out, x, group=group)
            if step == 0:
                first = (out.double() - exact).abs().max().item()
            total += out.double()
        held[precision] = zccl_torch.call_state_bytes() - before
        summed = (total - steps * exact).abs().max().item()
        expect(first > 0 and summed <= 3 * first,
               f"int4-ef, {precision} residuals: error summed over {steps} steps {summed:.3g}, "
               f"one step's {first:.3g}")
    count = shard * world  # int8: a code each, then a float32 scale per 32 and per rank, and one
    int8 = count + 4 * (count // 32 + 1 + world)
    expect(held == {"fp32": 4 * count, "bf16": 2 * count, "int8": int8},
           f"residual bytes kept {held}, expected one float32 / bfloat16 / int8 per input element")
    expect_error("feedback_precision fp16",
                 lambda: zccl_torch.set_policy(reduce_scatter="int4-ef", feedback_precision="fp16"),
                 "feedback_precision")


def test_mismatched_sizes() -> None:
    """Ranks that disagree on a count: with ZCCL_CHECK=1 every rank gets an error naming the
    field, at once; without it, ZCCL_TIMEOUT_S bounds the wait. Never a hang."""
    os.environ["ZCCL_CHECK"] = "1"
    checked = dist.new_group(backend="zccl")
    del os.environ["ZCCL_CHECK"]
    x = torch.ones(10 + dist.get_rank())
    expect_error("all_reduce with a count that differs between ranks",
                 lambda: dist.all_reduce(x, group=checked), "count")


def main() -> None:
    dist.init_process_group("zccl")
    world = dist.get_world_size()
    me = dist.get_rank()
    everyone = list(range(world))
    test_group("world", (dist.group.WORLD, dist.new_group(backend="gloo")), everyone)
    # Sub-groups: the first two ranks, and (for 3+) the last and the first, in that order.
    subsets = [[0, 1]] + ([[world - 1, 0]] if world > 2 else [])
    for ranks in subsets:
        pair = (dist.new_group(ranks, backend="zccl"), dist.new_group(ranks, backend="gloo"))
        if me in ranks:
            test_group(f"group {ranks}", pair, sorted(ranks))
    test_bad_use()
    test_streams()
    test_error_feedback_policy()
    test_mismatched_sizes()
    finish()


if __name__ == "__main__":
    main()
