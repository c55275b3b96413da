"""all_gather_into_tensor and reduce_scatter_tensor over zccl (lossless, and with the ZeRO++
formats) against gloo in the same run, and FSDP2's step time over both:

    torchrun --standalone --nproc-per-node 4 examples/torch/bench_collectives.py

busbw as nccl-tests defines it: size / time x (n-1)/n, size being the gathered (or the
reduced) buffer; the time is the slowest rank's mean over --iters calls after --warmup.
Before it is timed, each call's result is checked as nccl-tests checks it (#wrong: elements
outside their bound, summed over the ranks; the run fails if any is): against a serial
reference in float64 that every rank computes from every rank's seeded inputs, exact for the
lossless all-gather, within float32's rounding of the sum for the lossless reduce-scatter, and
within the quantization bound (src/quant/quantize.h) for INT8 and INT4.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

import zccl_torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fsdp_train  # noqa: E402


def timed(call, iters: int, warmup: int, group) -> float:
    for _ in range(warmup):
        call()
    dist.barrier(group=group)
    started = time.perf_counter()
    for _ in range(iters):
        call()
    elapsed = torch.tensor([(time.perf_counter() - started) / iters])
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
    return elapsed.item()


def busbw(size_bytes: int, seconds: float, ranks: int) -> float:
    return size_bytes / seconds * (ranks - 1) / ranks / 1e9


def seeded(numel: int, *seed: int) -> torch.Tensor:
    """The same values on every rank for the same seed."""
    generator = torch.Generator().manual_seed(hash(seed) & 0x7FFFFFFF)
    return torch.randn(numel, generator=generator)


def outside(got: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor) -> int:
    return int(((got.double() - expected).abs() > bound).sum())


class Inputs:
    """Rank `rank`'s all-gather shard and reduce-scatter input for a buffer of `numel` float32,
    and the serial references of what it must receive."""

    def __init__(self, numel: int, ranks: int, rank: int):
        block = numel // ranks
        self.shard = seeded(block, numel, 0, rank)
        self.full = torch.cat([seeded(block, numel, 1, rank, b) for b in range(ranks)])
        shards = [seeded(block, numel, 0, r).double() for r in range(ranks)]
        self.gathered = torch.cat(shards)
        # INT8 rounds each element by at most half its group's step, absmax / 127 / 2; the
        # shard's absmax bounds its groups'.
        self.gather_bound = torch.cat([x.abs().max().expand(block) / 254 * (1 + 2**-20)
                                       for x in shards])
        contributions = torch.stack([seeded(block, numel, 1, r, rank).double()
                                     for r in range(ranks)])
        self.reduced = contributions.sum(0)
        # float32 sums of `ranks` terms in any order: each addition rounds by 2^-24 of a partial
        # sum, which is at most the sum of the terms' magnitudes.
        self.sum_bound = ranks * 2**-24 * contributions.abs().sum(0) + 1e-30
        # INT4 quantizes each contribution once a hop (two hops at most), by at most one step
        # (absmax / 7, stochastic rounding included): the first hop's error is at most the sum
        # of the contributions' steps, S, the second's at most (sum of absmax + S) / 7.
        step = (contributions.abs().max(1).values / 7).sum()
        self.int4_bound = (step * (2 + 1 / 7) * (1 + 2**-20)).expand(block) + self.sum_bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-mib", type=int, default=1)
    parser.add_argument("--max-mib", type=int, default=64)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--fsdp-steps", type=int, default=30,
                        help="FSDP2 steps per backend, the first "
                             f"{fsdp_train.WARMUP_STEPS} untimed")
    args = parser.parse_args()
    if args.fsdp_steps <= fsdp_train.WARMUP_STEPS:
        parser.error(f"--fsdp-steps={args.fsdp_steps}: expected more than "
                     f"{fsdp_train.WARMUP_STEPS} (the steps after the warmup are timed)")
    dist.init_process_group("zccl")
    ranks, rank = dist.get_world_size(), dist.get_rank()
    zccl_group = dist.group.WORLD
    gloo_group = dist.new_group(backend="gloo")
    quantized = dist.new_group(backend="zccl")
    zccl_torch.set_policy(quantized, allgather="int8", reduce_scatter="int4")

    rows = []
    wrong_in_all = 0
    size = args.min_mib << 20
    while size <= args.max_mib << 20:
        # float32; the whole (gathered / reduced) buffer, whole blocks of every rank
        numel = size // 4 // ranks * ranks
        inputs = Inputs(numel, ranks, rank)
        gathered = torch.empty(numel)
        reduced = torch.empty(numel // ranks)
        row = [f"{size >> 20} MiB"]
        wrong = torch.zeros(1, dtype=torch.int64)
        for kind in ("gather", "scatter"):
            figures = []
            for group in (zccl_group, quantized, gloo_group):
                if kind == "gather":
                    call = lambda g=group: dist.all_gather_into_tensor(  # noqa: E731
                        gathered, inputs.shard, group=g)
                    call()
                    bound = inputs.gather_bound if group is quantized else 0
                    wrong += outside(gathered, inputs.gathered, bound)
                else:
                    call = lambda g=group: dist.reduce_scatter_tensor(  # noqa: E731
                        reduced, inputs.full, group=g)
                    call()
                    bound = inputs.int4_bound if group is quantized else inputs.sum_bound
                    wrong += outside(reduced, inputs.reduced, bound)
                seconds = timed(call, args.iters, args.warmup, gloo_group)
                figures.append(busbw(4 * numel, seconds, ranks))
            row += [f"{figures[0]:.2f}", f"{figures[1]:.2f}", f"{figures[2]:.2f}",
                    f"{figures[0] / figures[2]:.2f}"]
        dist.all_reduce(wrong, group=gloo_group)
        wrong_in_all += int(wrong)
        rows.append(row + [str(int(wrong))])
        size *= 2

    fsdp_args = fsdp_train.parse(["--steps", str(args.fsdp_steps), "--dtype", "float32"])
    meshes = {"zccl": init_device_mesh("cpu", (ranks,)),
              "gloo": DeviceMesh.from_group(gloo_group, "cpu")}
    steps = {name: fsdp_train.train(mesh, fsdp_args, "zero3", gloo_group)["ms_per_step"]
             for name, mesh in meshes.items()}
    if rank == 0:
        print(f"{ranks} ranks, float32, busbw GB/s (slowest rank, mean of {args.iters} calls)")
        print("| size | all-gather zccl | zccl int8 | gloo | zccl/gloo | reduce-scatter zccl | "
              "zccl int4 | gloo | zccl/gloo | #wrong |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print(f"FSDP2 step ({fsdp_train.Decoder.__name__}, float32, {args.fsdp_steps} steps): "
              f"zccl {steps['zccl']:.1f} ms, gloo {steps['gloo']:.1f} ms, "
              f"gloo/zccl {steps['gloo'] / steps['zccl']:.2f}")
    dist.destroy_process_group()
    if wrong_in_all:
        sys.exit(f"bench_collectives: {wrong_in_all} elements outside their bounds")


if __name__ == "__main__":
    main()
