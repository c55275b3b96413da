"""FSDP2 over zccl: ZeRO-3 against ZeRO++ (qwZ + qgZ + hpZ) and ZeRO++ 4-bit on a small
decoder-only transformer, with the cross-node bytes of every step from zccl's own counters.

    ZCCL_RANKS_PER_NODE=2 torchrun --standalone --nproc-per-node 4 examples/torch/fsdp_train.py

The task is modular addition (a + b mod P from the sequence "a b =") with 20% of the labels
replaced by random ones, so the loss has a floor (printed) and runs can be compared once
converged. ZeRO++ here is FSDP2 with reshard_after_forward=<ranks per node> (hpZ: the
backward all-gathers stay inside the node) over a zccl group whose parameter all-gathers are
INT8 (qwZ) and gradient reduce-scatters INT4 through two hops (qgZ). ZeRO++ 4-bit gathers
INT4 differences of the weights from the last gathered copy (int4-diff) and reduce-scatters
INT4 gradients with error feedback (int4-ef; --feedback-precision bf16 or int8 keeps its
residuals in bfloat16 or int8); ZeRO++ INT2-diff gathers INT2 differences (int2-diff,
smoothed) instead.
"""
from __future__ import annotations

import argparse
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import zccl_torch

NOISE = 0.2


class Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, -1).unbind(2)
        attended = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, dim))
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    def __init__(self, vocab: int, dim: int, layers: int, heads: int, length: int):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(length, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tokens(tokens) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x[:, -1]))


def batch(step: int, rank: int, size: int, modulus: int) -> tuple[torch.Tensor, torch.Tensor]:
    """This rank's micro-batch of a step: the same in every run, so runs can be compared."""
    generator = torch.Generator().manual_seed(step * 1009 + rank)
    a, b = (torch.randint(0, modulus, (size,), generator=generator) for _ in range(2))
    labels = (a + b) % modulus
    noisy = torch.rand(size, generator=generator) < NOISE
    labels = torch.where(noisy, torch.randint(0, modulus, (size,), generator=generator), labels)
    equals = torch.full((size,), modulus)
    return torch.stack([a, b, equals], dim=1), labels


def on(device: torch.device, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return tuple(t.to(device) for t in tensors)


def settle(device: torch.device) -> None:
    """Waits for the device's queued work, so that the clock reads what it took."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def noise_floor(modulus: int) -> float:
    right = 1 - NOISE + NOISE / modulus
    wrong = NOISE / modulus
    return -(right * math.log(right) + (modulus - 1) * wrong * math.log(wrong))


def unit_sizes(model: nn.Module) -> list[int]:
    """The parameters of each unit FSDP2 gathers as one: every block, then the rest (the root)."""
    blocks = [sum(p.numel() for p in block.parameters()) for block in model.blocks]
    return blocks + [sum(p.numel() for p in model.parameters()) - sum(blocks)]


def adamw(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    """AdamW over the whole parameter list at once: on the CPU torch picks its per-tensor loop,
    which under FSDP2 dispatches every operation of every parameter through DTensor (a 4-rank
    step of the small model took 232 ms that way, 136 ms with foreach; the same losses)."""
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, foreach=True)


def time_compute(args, rank: int) -> float:
    """ms per step of the same model's forward, backward and optimizer step without FSDP2: the
    compute a step has to hide its collectives behind (every rank at once, as in training)."""
    torch.manual_seed(0)
    model = Decoder(args.modulus + 1, args.dim, args.layers, args.heads, 3)
    model = model.to(args.device, args.dtype)
    optimizer = adamw(model, args.lr)
    seconds = 0.0
    for step in range(args.timing_steps + 1):
        tokens, labels = on(args.device, *batch(step, rank, args.batch, args.modulus))
        settle(args.device)
        started = time.perf_counter()
        F.cross_entropy(model(tokens).float(), labels).backward()
        optimizer.step()
        optimizer.zero_grad()
        settle(args.device)
        if step > 0:
            seconds += time.perf_counter() - started
    return 1000 * seconds / args.timing_steps


def time_collectives(sizes: list[int], group, node_group, args) -> float:
    """ms per step of FSDP2's collectives alone, back to back: each unit's all-gather before its
    forward, again before its backward (inside the node under hpZ), and its gradients'
    reduce-scatter."""
    world = dist.get_world_size(group)
    shards = [math.ceil(size / world) for size in sizes]
    made = dict(dtype=args.dtype, device=args.device)
    full = [torch.empty(shard * world, **made) for shard in shards]
    mine = [torch.ones(shard, **made) for shard in shards]
    node_world = dist.get_world_size(node_group)
    node_shards = [torch.ones(shard * world // node_world, **made) for shard in shards]
    seconds = 0.0
    for step in range(args.timing_steps + 1):
        dist.barrier(group=group)
        started = time.perf_counter()
        for unit in range(len(sizes)):
            dist.all_gather_into_tensor(full[unit], mine[unit], group=group)
        for unit in reversed(range(len(sizes))):
            if node_group is group:
                dist.all_gather_into_tensor(full[unit], mine[unit], group=group)
            else:
                dist.all_gather_into_tensor(full[unit], node_shards[unit], group=node_group)
            dist.reduce_scatter_tensor(mine[unit], full[unit], group=group)
        settle(args.device)
        if step > 0:
            seconds += time.perf_counter() - started
    return 1000 * seconds / args.timing_steps


def node_groups(ranks_per_node: int):
    """This rank's node group (every rank makes every node's, in order)."""
    mine = None
    for first in range(0, dist.get_world_size(), ranks_per_node):
        group = dist.new_group(list(range(first, first + ranks_per_node)))
        if first <= dist.get_rank() < first + ranks_per_node:
            mine = group
    return mine


# The configurations: the name printed, and the zccl policy of the mesh's group (None: plain
# ZeRO-3, every rank resharding fully after the forward).
CONFIGS = {
    "zero3": ("ZeRO-3", None),
    "zeropp": ("ZeRO++ (qwZ+qgZ+hpZ)", dict(allgather="int8", reduce_scatter="int4")),
    "zeropp4": ("ZeRO++ 4-bit (diff+EF)", dict(allgather="int4-diff", reduce_scatter="int4-ef")),
    # int2-diff's gathers are smoothed (and asymmetric) by the backend: docs/beyond-zeropp.md.
    "zeropp2": ("ZeRO++ INT2-diff (+EF)", dict(allgather="int2-diff", reduce_scatter="int4-ef")),
}
SUMMARY_NAMES = {"ZeRO++ (qwZ+qgZ+hpZ)": "ZeRO++", "ZeRO++ 4-bit (diff+EF)": "ZeRO++ 4-bit",
                 "ZeRO++ INT2-diff (+EF)": "ZeRO++ INT2-diff"}


def config_name(config: str, args) -> str:
    """The name printed: error feedback's residuals named where they are not float32."""
    name = CONFIGS[config][0]
    if args.feedback_precision == "fp32" or "EF)" not in name:
        return name
    return name.replace("EF)", f"EF/{args.feedback_precision})")


def train(mesh: DeviceMesh, args, config: str, report_group) -> dict:
    """One run; returns the mean loss of every step, ms per step and bytes per step."""
    torch.manual_seed(0)
    model = Decoder(args.modulus + 1, args.dim, args.layers, args.heads, 3).to(args.device)
    policy = CONFIGS[config][1]
    if policy is not None and policy["reduce_scatter"].endswith("-ef"):
        policy = {**policy, "feedback_precision": args.feedback_precision}
    zeropp = policy is not None
    reshard = args.ranks_per_node if zeropp else True
    # Working weights and gradients in the wire dtype (bf16 by default, as in ZeRO++'s
    # setting), master weights and optimizer states in float32.
    precision = MixedPrecisionPolicy(param_dtype=args.dtype, reduce_dtype=args.dtype)
    for block in model.blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard, mp_policy=precision)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard, mp_policy=precision)
    optimizer = adamw(model, args.lr)
    # Cosine decay to a tenth: the runs settle, so their final losses can be compared.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, step / args.steps))))
    group = mesh.get_group()
    zccl = dist.get_backend(group) == "zccl"
    if zccl:
        zccl_torch.set_policy(group, **(policy or {}))
        zccl_torch.reset_stats("all")
    rank = dist.get_rank()
    losses, seconds = [], 0.0
    for step in range(args.steps):
        tokens, labels = on(args.device, *batch(step, rank, args.batch, args.modulus))
        started = time.perf_counter()
        loss = F.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        schedule.step()
        settle(args.device)
        if step >= args.warmup:
            seconds += time.perf_counter() - started
        # The loss is averaged over the ranks on a gloo group: zccl's counters see only FSDP2.
        mean = loss.detach().to("cpu", copy=True)
        dist.all_reduce(mean, group=report_group)
        losses.append(mean.item() / dist.get_world_size())
    counted = torch.zeros(2, dtype=torch.float64)
    state_bytes = torch.zeros(1, dtype=torch.float64)
    if zccl:
        stats = zccl_torch.stats("all")
        counted = torch.tensor([stats["inter_node_bytes"], stats["intra_node_bytes"]],
                               dtype=torch.float64)
        state_bytes[0] = zccl_torch.call_state_bytes()
        # Drops the run's state: the timing starts afresh.
        zccl_torch.set_policy(group, **(policy or {}))
    dist.all_reduce(counted, group=report_group)
    dist.all_reduce(state_bytes, op=dist.ReduceOp.MAX, group=report_group)
    timed = max(1, args.steps - args.warmup)
    node_group = args.node_group if zeropp else group
    collectives_ms = torch.tensor([time_collectives(unit_sizes(model), group, node_group, args)])
    compute_ms = torch.tensor([time_compute(args, rank)])
    dist.all_reduce(collectives_ms, op=dist.ReduceOp.MAX, group=report_group)
    dist.all_reduce(compute_ms, op=dist.ReduceOp.MAX, group=report_group)
    return {"losses": losses, "ms_per_step": 1000 * seconds / timed,
            "compute_ms": compute_ms.item(), "collectives_ms": collectives_ms.item(),
            "inter_node_bytes_per_step": counted[0].item() / args.steps,
            "intra_node_bytes_per_step": counted[1].item() / args.steps,
            "call_state_bytes": state_bytes.item(),
            "parameters": sum(p.numel() for p in model.parameters())}


WARMUP_STEPS = 5  # untimed steps before the timed ones, by default


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", choices=[*CONFIGS, "both", "all"], default="all",
                        help="both: ZeRO-3 and ZeRO++; all: and ZeRO++ 4-bit and INT2-diff")
    parser.add_argument("--backend", choices=["zccl", "gloo"], default="zccl",
                        help="gloo: plain FSDP2 over gloo, for reference (ZeRO-3 only)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=WARMUP_STEPS)
    parser.add_argument("--batch", type=int, default=32, help="sequences per rank and step")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--modulus", type=int, default=11)
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where the model and FSDP2's collectives run (cuda: every process on "
                             "the current GPU, zccl's device path)")
    parser.add_argument("--feedback-precision", choices=["fp32", "bf16", "int8"], default="fp32",
                        help="what error feedback (int4-ef) keeps its residuals in")
    parser.add_argument("--csv", help="write step,config,loss rows to this CSV file (rank 0)")
    parser.add_argument("--timing-steps", type=int, default=5,
                        help="steps of compute alone and of the collectives alone, timed")
    args = parser.parse_args(argv)
    args.dtype = getattr(torch, args.dtype)
    args.device = torch.device(args.device)
    if args.backend == "gloo" and args.device.type != "cpu":
        parser.error("--backend gloo runs FSDP2 on the CPU: leave out --device")
    if args.steps <= args.warmup:
        parser.error(f"--steps={args.steps}: expected more than --warmup={args.warmup} "
                     "(the steps after the warmup are timed)")
    args.ranks_per_node = int(os.environ.get("ZCCL_RANKS_PER_NODE",
                                             os.environ.get("LOCAL_WORLD_SIZE", "1")))
    return args


def summary_row(name: str, result: dict, tail: int) -> str:
    final = sum(result["losses"][-tail:]) / len(result["losses"][-tail:])
    return (f"| {name} | {result['parameters']} | {result['losses'][0]:.4f} | {final:.4f} | "
            f"{result['inter_node_bytes_per_step']:.0f} | "
            f"{result['intra_node_bytes_per_step']:.0f} | "
            f"{result['ms_per_step']:.1f} | {result['compute_ms']:.1f} | "
            f"{result['collectives_ms']:.1f} | {overlap_efficiency(result):.2f} |")


def overlap_efficiency(result: dict) -> float:
    """The step against the longer of its compute and its collectives, each alone: 1 when one
    hides the other entirely, 2 when they follow each other."""
    return result["ms_per_step"] / max(result["compute_ms"], result["collectives_ms"])


def main() -> None:
    args = parse()
    dist.init_process_group("cpu:gloo" if args.backend == "gloo" else "zccl")
    report_group = dist.new_group(backend="gloo")
    args.node_group = node_groups(args.ranks_per_node)
    mesh = init_device_mesh(args.device.type, (dist.get_world_size(),))
    configs = {"both": ["zero3", "zeropp"], "all": list(CONFIGS)}.get(args.config, [args.config])
    if args.backend == "gloo":
        configs = ["zero3"]
    results = {}
    for config in configs:
        results[config_name(config, args)] = train(mesh, args, config, report_group)
    if dist.get_rank() == 0:
        tail = min(50, args.steps)
        print(f"{dist.get_world_size()} ranks, {args.ranks_per_node} per node, backend "
              f"{args.backend}, {str(args.dtype).removeprefix('torch.')}, {args.steps} steps, "
              f"error feedback's residuals {args.feedback_precision}; "
              f"loss floor {noise_floor(args.modulus):.4f}; "
              f"final loss: mean of the last {tail} steps; bytes summed over the ranks")
        print("| configuration | params | first loss | final loss | inter-node B/step | "
              "intra-node B/step | ms/step | compute alone ms | collectives alone ms | overlap |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name, result in results.items():
            print(summary_row(name, result, tail))
        for name, result in results.items():
            print(f"{args.backend} {name} overlap efficiency {overlap_efficiency(result):.2f}")
        for name, result in results.items():
            if result["call_state_bytes"]:
                print(f"{name}: references and residuals "
                      f"{result['call_state_bytes']:.0f} B per rank")
        zero3 = results.get("ZeRO-3")
        for name, result in results.items():
            if zero3 is None or name == "ZeRO-3":
                continue
            label = SUMMARY_NAMES.get(name, name)
            final = sum(result["losses"][-tail:]) / tail
            base = sum(zero3["losses"][-tail:]) / tail
            bytes_ratio = (zero3["inter_node_bytes_per_step"]
                           / max(1, result["inter_node_bytes_per_step"]))
            print(f"cross-node bytes per step, ZeRO-3 / {label}: {bytes_ratio:.2f}; "
                  f"final loss {100 * (final / base - 1):+.2f}%")
            step_ratio = zero3["ms_per_step"] / result["ms_per_step"]
            print(f"step time, ZeRO-3 / {label}: {step_ratio:.2f}")
        if args.csv:
            with open(args.csv, "w") as log:
                log.write("config,step,loss,ms_per_step\n")
                for name, result in results.items():
                    for step, loss in enumerate(result["losses"]):
                        log.write(f"{name},{step},{loss:.6f},{result['ms_per_step']:.3f}\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
