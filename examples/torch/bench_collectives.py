"""all_gather_into_tensor and reduce_scatter_tensor over zccl (lossless, and with the ZeRO++
formats) against gloo in the same run, and FSDP2's step time over both:

    torchrun --standalone --nproc-per-node 4 examples/torch/bench_collectives.py

busbw as nccl-tests defines it: size / time x (n-1)/n, size being the gathered (or the
reduced) buffer; the time is the slowest rank's mean over --iters calls after --warmup.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--min-mib", type=int, default=1)
    parser.add_argument("--max-mib", type=int, default=64)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--fsdp-steps", type=int, default=30)
    args = parser.parse_args()
    dist.init_process_group("zccl")
    ranks, rank = dist.get_world_size(), dist.get_rank()
    zccl_group = dist.group.WORLD
    gloo_group = dist.new_group(backend="gloo")
    quantized = dist.new_group(backend="zccl")
    zccl_torch.set_policy(quantized, allgather="int8", reduce_scatter="int4")

    rows = []
    size = args.min_mib << 20
    while size <= args.max_mib << 20:
        numel = size // 4  # float32; the whole (gathered / reduced) buffer
        full = torch.randn(numel)
        shard = torch.randn(numel // ranks)
        row = [f"{size >> 20} MiB"]
        for kind in ("gather", "scatter"):
            figures = []
            for group in (zccl_group, quantized, gloo_group):
                if kind == "gather":
                    call = lambda g=group: dist.all_gather_into_tensor(full, shard, group=g)  # noqa: E731
                else:
                    call = lambda g=group: dist.reduce_scatter_tensor(shard, full, group=g)  # noqa: E731
                figures.append(busbw(size, timed(call, args.iters, args.warmup, gloo_group), ranks))
            row += [f"{figures[0]:.2f}", f"{figures[1]:.2f}", f"{figures[2]:.2f}",
                    f"{figures[0] / figures[2]:.2f}"]
        rows.append(row)
        size *= 2

    fsdp_args = fsdp_train.parse(["--steps", str(args.fsdp_steps), "--dtype", "float32"])
    meshes = {"zccl": init_device_mesh("cpu", (ranks,)),
              "gloo": DeviceMesh.from_group(gloo_group, "cpu")}
    steps = {name: fsdp_train.train(mesh, fsdp_args, "zero3", gloo_group)["ms_per_step"]
             for name, mesh in meshes.items()}
    if rank == 0:
        print(f"{ranks} ranks, float32, busbw GB/s (slowest rank, mean of {args.iters} calls)")
        print("| size | all-gather zccl | zccl int8 | gloo | zccl/gloo | reduce-scatter zccl | "
              "zccl int4 | gloo | zccl/gloo |")
        print("|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        print(f"FSDP2 step ({fsdp_train.Decoder.__name__}, float32, {args.fsdp_steps} steps): "
              f"zccl {steps['zccl']:.1f} ms, gloo {steps['gloo']:.1f} ms, "
              f"gloo/zccl {steps['gloo'] / steps['zccl']:.2f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
