"""torch.distributed backend "zccl": zccl's collectives (two-level, qwZ, qgZ) for CPU tensors.

    import torch.distributed as dist
    dist.init_process_group("zccl")          # or "cpu:zccl"; torchrun's environment
    zccl_torch.set_policy(allgather="int8", reduce_scatter="int4")   # ZeRO++ (lossless: default)
    print(zccl_torch.stats())                # bytes and messages per link class

The policy of every new group comes from ZCCL_TORCH_QUANT_ALLGATHER, _REDUCESCATTER and
_ALLREDUCE (none|int8|int4|allow-int8|allow-int4) and ZCCL_TORCH_QUANT_MIN_BYTES, or from a
zccl_torch.Options passed as init_process_group's / new_group's pg_options.
"""
from __future__ import annotations

import dataclasses
import os
import socket

import torch
import torch.distributed as dist

from . import _zccl

__all__ = ["Options", "register", "set_policy", "stats", "reset_stats"]

# zccl's own names of its wire formats (zcclWireFormatName), the one list they come from.
_WIRE_NAMES = tuple(_zccl.wire_format_names())
_SIZE_SUFFIX = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _wire(value: str, what: str) -> str:
    key = value.strip().lower()
    if key not in _WIRE_NAMES:
        raise ValueError(f"{what}={value!r}: expected one of {', '.join(_WIRE_NAMES)}")
    return key


def _bytes(value: str | int, what: str) -> int:
    if isinstance(value, int):
        number = value
    else:
        text = value.strip().lower().removesuffix("b")
        suffix = text[-1:] if text[-1:] in _SIZE_SUFFIX else ""
        try:
            number = int(text[: len(text) - len(suffix)]) * _SIZE_SUFFIX[suffix]
        except ValueError:
            raise ValueError(f"{what}={value!r}: expected a byte count such as 65536 or 1M") from None
    if number < 0:
        raise ValueError(f"{what}={value!r}: expected a count >= 0")
    return number


@dataclasses.dataclass
class Options:
    """What a group sends on the wire: quantized formats apply to float tensors of at least
    min_bytes, and for reductions to sum/avg only; everything else stays exact."""

    allgather: str = "none"  # qwZ: "int8"
    reduce_scatter: str = "none"  # qgZ: "int4" (2-hop when the group spans several nodes)
    allreduce: str = "none"
    min_bytes: int | str = 0

    @classmethod
    def from_environment(cls) -> "Options":
        env = os.environ.get
        return cls(
            allgather=env("ZCCL_TORCH_QUANT_ALLGATHER", "none"),
            reduce_scatter=env("ZCCL_TORCH_QUANT_REDUCESCATTER", "none"),
            allreduce=env("ZCCL_TORCH_QUANT_ALLREDUCE", "none"),
            min_bytes=env("ZCCL_TORCH_QUANT_MIN_BYTES", "0"),
        )

    def _codes(self) -> tuple[str, str, str, int]:
        return (
            _wire(self.allgather, "allgather"),
            _wire(self.reduce_scatter, "reduce_scatter"),
            _wire(self.allreduce, "allreduce"),
            _bytes(self.min_bytes, "min_bytes"),
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
    os.environ["ZCCL_HOSTID"] = f"{socket.gethostname()}/emulated-node-{global_rank // int(per_node)}"


def _create(dist_backend_opts, backend_options):
    options = backend_options if isinstance(backend_options, Options) else Options.from_environment()
    # The default group lists no ranks: its ranks are the global ones.
    ranks = list(dist_backend_opts.global_ranks_in_group) or list(range(dist_backend_opts.group_size))
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
