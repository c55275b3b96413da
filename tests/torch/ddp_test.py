"""DDP over zccl against DDP over gloo (torchrun --nproc-per-node 3): 20 steps of the same
model on the same data; the losses must agree within 1e-6 relative."""

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import zccl_torch  # noqa: F401
from verdict import expect, finish


TEACHER = torch.randn(32, 10, generator=torch.Generator().manual_seed(7))


def losses(group) -> list:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(),
                          nn.Linear(64, 10))
    # Small buckets: several all-reduces a step, as in a larger model.
    ddp = DistributedDataParallel(model, process_group=group, bucket_cap_mb=0.01)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    rank = dist.get_rank()
    result = []
    for step in range(20):
        generator = torch.Generator().manual_seed(step * 101 + rank)
        inputs = torch.randn(16, 32, generator=generator)
        labels = (inputs @ TEACHER).argmax(dim=1)  # a rule the model can learn
        loss = F.cross_entropy(ddp(inputs), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        result.append(loss.item())
    return result


def main() -> None:
    dist.init_process_group("zccl")
    ours = losses(dist.group.WORLD)
    theirs = losses(dist.new_group(backend="gloo"))
    for step, (a, b) in enumerate(zip(ours, theirs)):
        expect(abs(a - b) <= 1e-6 * abs(b), f"step {step}: loss {a!r} over zccl, {b!r} over gloo")
    finish(f" (first loss {ours[0]:.6f}, last {ours[-1]:.6f})")


if __name__ == "__main__":
    main()
