"""torch.distributed backend "zccl": zccl's collectives (two-level, qwZ, qgZ) for CPU tensors.

    import torch.distributed as dist
    dist.init_process_group("zccl")          # or "cpu:zccl"; torchrun's environment
    zccl_torch.set_policy(allgather="int8", reduce_scatter="int4")   # ZeRO++ (lossless: default)
    zccl_torch.set_policy(allgather="int4-diff", reduce_scatter="int4-ef")   # ZeRO++ 4-bit
    zccl_torch.set_policy(allgather="int2-diff", reduce_scatter="int4-ef")   # 2-bit weights
    print(zccl_torch.stats())                # bytes and messages per link class

The policy of every new group comes from ZCCL_TORCH_QUANT_ALLGATHER, _REDUCESCATTER and
_ALLREDUCE (none|int8|int4|allow-int8|allow-int4|int2; int8-diff|int4-diff|int2-diff for
all-gathers, int8-ef|int4-ef|int2-ef for reductions), ZCCL_TORCH_QUANT_MIN_BYTES,
ZCCL_TORCH_QUANT_SMOOTHING (0|1), ZCCL_TORCH_QUANT_RESYNC_EVERY and
ZCCL_TORCH_QUANT_FEEDBACK_PRECISION (fp32|bf16|int8: -ef's residuals), or from a zccl_torch.Options
passed as init_process_group's / new_group's pg_options.

"-diff": an all-gather sends each rank's quantized difference from the values it gathered last
time (SDP4Bit's weight differences), which every rank keeps: a copy of every gathered tensor per
rank; int2-diff's are asymmetric and smoothed, which two bits need. "-ef": a reduction adds what
quantizing its last input lost (error feedback, LoCo): one float32 per input element per rank.
torch hands fresh tensors to every call, so the state of a call is found by its place in the
step (the k-th all-gather since the last reduce-scatter, the k-th reduce-scatter since the last
all-gather): a training loop that gathers and reduces its modules in the same order every step
(FSDP2, ZeRO) keeps each tensor's own. Host tensors only.
"""
from __future__ import annotations

import dataclasses
import os
import socket

import torch
import torch.distributed as dist

from . import _zccl

__all__ = ["Options", "register", "set_policy", "stats", "reset_stats", "call_state_bytes"]

# zccl's own names of its wire formats (zcclWireFormatName), the one list they come from.
_WIRE_NAMES = tuple(_zccl.wire_format_names())
# The formats asked for (not only allowed) that carry a state: -diff and -ef take them.
_QUANTIZED = tuple(name for name in _WIRE_NAMES if name.startswith("int"))
_SIZE_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _wire(value: str, what: str, suffix: str = "") -> tuple[str, bool]:
    """(zccl's wire format name, whether `suffix` was given: -diff or -ef)."""
    key = value.strip().lower()
    stated = bool(suffix) and key.endswith(suffix) and key[: -len(suffix)] in _QUANTIZED
    if stated:
        key = key[: -len(suffix)]
    if key not in _WIRE_NAMES:
        extra = "".join(f", {name}{suffix}" for name in _QUANTIZED) if suffix else ""
        raise ValueError(f"{what}={value!r}: expected one of {', '.join(_WIRE_NAMES)}{extra}")
    return key, stated


def _bytes(value: str | int, what: str) -> int:
    if isinstance(value, int):
        number = value
    else:
        text = value.strip().lower().removesuffix("b")
        suffix = text[-1:] if text[-1:] in _SIZE_SUFFIX else ""
        try:
            number = int(text[: len(text) - len(suffix)]) * _SIZE_SUFFIX[suffix]
        except ValueError:
            raise ValueError(
                f"{what}={value!r}: expected a byte count such as 65536 or 1M") from None
    if number < 0:
        raise ValueError(f"{what}={value!r}: expected a count >= 0")
    return number


@dataclasses.dataclass
class Options:
    """What a group sends on the wire: quantized formats apply to float tensors of at least
    min_bytes, and for reductions to sum/avg only; everything else stays exact."""

    allgather: str = "none"  # qwZ: "int8"; weight differences: "int4-diff"
    reduce_scatter: str = "none"  # qgZ: "int4" (2-hop across nodes); error feedback: "int4-ef"
    allreduce: str = "none"  # "int4-ef": error feedback too
    min_bytes: int | str = 0
    smoothing: bool = False  # a random-sign Hadamard rotation of groups before quantizing
    resync_every: int = 0  # -diff: every resync_every-th all-gather of a tensor is exact
    feedback_precision: str = "fp32"  # -ef: residuals in "fp32", "bf16" (half) or "int8" (~28%)

    @classmethod
    def from_environment(cls) -> "Options":
        env = os.environ.get
        return cls(
            allgather=env("ZCCL_TORCH_QUANT_ALLGATHER", "none"),
            reduce_scatter=env("ZCCL_TORCH_QUANT_REDUCESCATTER", "none"),
            allreduce=env("ZCCL_TORCH_QUANT_ALLREDUCE", "none"),
            min_bytes=env("ZCCL_TORCH_QUANT_MIN_BYTES", "0"),
            smoothing=env("ZCCL_TORCH_QUANT_SMOOTHING", "0") == "1",
            resync_every=int(env("ZCCL_TORCH_QUANT_RESYNC_EVERY", "0")),
            feedback_precision=env("ZCCL_TORCH_QUANT_FEEDBACK_PRECISION", "fp32"),
        )

    def _codes(self) -> tuple:
        allgather, differences = _wire(self.allgather, "allgather", "-diff")
        reduce_scatter, scatter_feedback = _wire(self.reduce_scatter, "reduce_scatter", "-ef")
        allreduce, reduce_feedback = _wire(self.allreduce, "allreduce", "-ef")
        if self.resync_every < 0:
            raise ValueError(f"resync_every={self.resync_every}: expected >= 0")
        if self.feedback_precision not in ("fp32", "bf16", "int8"):
            raise ValueError(f"feedback_precision={self.feedback_precision!r}: expected 'fp32', "
                             "'bf16' or 'int8'")
        return (
            allgather,
            reduce_scatter,
            allreduce,
            _bytes(self.min_bytes, "min_bytes"),
            differences,
            scatter_feedback,
            reduce_feedback,
            bool(self.smoothing),
            int(self.resync_every),
            self.feedback_precision,
        )


def _emulate_nodes(global_rank: int) -> None:
    """ZCCL_RANKS_PER_NODE=N under torchrun: nodes of N consecutive *global* ranks, for every
    group (a sub-group's ranks are not consecutive in it), via the host identity zccl reads;
    the backend turns zccl's own per-communicator emulation off."""
    per_node = os.environ.get("ZCCL_RANKS_PER_NODE")
    if per_node is None:
        return
    if not per_node.isdigit() or int(per_node) < 1:
        raise ValueError(f"ZCCL_RANKS_PER_NODE={per_node!r}: expected a count >= 1")
    node = global_rank // int(per_node)
    os.environ["ZCCL_HOSTID"] = f"{socket.gethostname()}/emulated-node-{node}"


def _create(dist_backend_opts, backend_options):
    if isinstance(backend_options, Options):
        options = backend_options
    else:
        options = Options.from_environment()
    # The default group lists no ranks: its ranks are the global ones.
    ranks = (list(dist_backend_opts.global_ranks_in_group)
             or list(range(dist_backend_opts.group_size)))
    _emulate_nodes(ranks[dist_backend_opts.group_rank])
    return _zccl.create_backend(
        dist_backend_opts.store,
        dist_backend_opts.group_rank,
        dist_backend_opts.group_size,
        dist_backend_opts.timeout,
        dist_backend_opts.group_id,
        *options._codes(),
    )


def register() -> None:
    """Registers backend "zccl" (done on import, and by torch through the entry point)."""
    if "ZCCL" not in dist.Backend._plugins:
        dist.Backend.register_backend(
            "zccl", _create, extended_api=True, devices=["cpu", "cuda"]
        )


def _group_name(group) -> str:
    return (group or dist.group.WORLD).group_name


def set_policy(group=None, **fields) -> None:
    """Changes the wire policy of a group's backend (fields of Options); unset fields: none."""
    _zccl.set_policy(_group_name(group), *Options(**fields)._codes())


def call_state_bytes() -> int:
    """Bytes of the references (-diff) and residuals (-ef) every zccl group of this process
    keeps: model state to count beside the optimizer's."""
    return _zccl.call_state_bytes()


def stats(group=None) -> dict:
    """Bytes and messages this rank sent over the group, per link class (self, intra_node,
    inter_node), from zccl's counters. group="all": summed over every zccl group of this
    process (the sub-groups FSDP2's meshes make included); "by_group": a dict of them by
    group name."""
    if group == "all":
        return _zccl.stats_all()
    if group == "by_group":
        return _zccl.stats_by_group()
    return _zccl.stats(_group_name(group))


def reset_stats(group=None) -> None:
    """Zeroes the counters of a group (or of every group: group="all")."""
    if group == "all":
        _zccl.reset_stats_all()
    else:
        _zccl.reset_stats(_group_name(group))


register()
