#include "collectives/collectives.h"

#include "collectives/algorithms.h"

namespace zccl {

void chargeNative(Context& ctx, Collective collective, size_t bytesPerRank, int root) {
  ctx.native.calls += 1;
  ctx.native.bytesEstimated += nativeBytesEstimate(collective, bytesPerRank, ctx.transport.size(),
                                                   ctx.transport.rank(), root);
}

Status allGatherBlocks(Context& ctx, const Plan& plan, const CollectiveOptions& options,
                       const void* send, void* recv, const Partition& blocks, DataType type) {
  const bool twoLevel = plan.algorithm == Algorithm::kTwoLevel;
  if (plan.wire != WireFormat::kNone) {
    return allGatherQuantized(ctx, send, recv, blocks, type, options.quantParams(), twoLevel);
  }
  const BlockBytes layout = BlockBytes::elements(blocks, elementSize(type));
  return twoLevel ? allGatherTwoLevel(ctx, send, recv, layout)
                  : allGatherRing(ctx, send, recv, layout);
}

Status allGather(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t sendCount, DataType type) {
  const int n = ctx.transport.size();
  const size_t es = elementSize(type);
  const Partition blocks{sendCount * static_cast<size_t>(n), n};
  const Plan plan = planCollective(Collective::kAllGather, type, RedOp::kSum, blocks.count * es,
                                   options, ctx.levels, ctx.cluster);
  if (plan.algorithm == Algorithm::kNative) {
    chargeNative(ctx, Collective::kAllGather, sendCount * es, 0);
    return allGatherNative(ctx, send, recv, sendCount, type);
  }
  return allGatherBlocks(ctx, plan, options, send, recv, blocks, type);
}

Status reduceScatterBlocks(Context& ctx, const Plan& plan, const CollectiveOptions& options,
                           const void* send, void* recv, const Partition& blocks, DataType type,
                           RedOp op) {
  const bool twoLevel = plan.algorithm == Algorithm::kTwoLevel;
  if (plan.wire != WireFormat::kNone) {
    return twoLevel ? reduceScatterQuantized2Hop(ctx, send, recv, blocks, type, op,
                                                 options.quantParams())
                    : reduceScatterQuantized1Hop(ctx, send, recv, blocks, type, op,
                                                 options.quantParams());
  }
  switch (plan.algorithm) {
    case Algorithm::kTwoLevel:
      return reduceScatterTwoLevel(ctx, send, recv, blocks, type, op);
    case Algorithm::kDirect:
      return reduceScatterDirect(ctx, send, recv, blocks, type, op);
    default:
      return reduceScatterRing(ctx, send, recv, blocks, type, op);
  }
}

Status reduceScatter(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                     size_t recvCount, DataType type, RedOp op) {
  const int n = ctx.transport.size();
  const Partition blocks{recvCount * static_cast<size_t>(n), n};
  const size_t bytes = blocks.count * elementSize(type);
  const Plan plan =
      planCollective(Collective::kReduceScatter, type, op, bytes, options, ctx.levels, ctx.cluster);
  if (plan.algorithm == Algorithm::kNative) {
    chargeNative(ctx, Collective::kReduceScatter, bytes, 0);
    return reduceScatterNative(ctx, send, recv, recvCount, type, op);
  }
  return reduceScatterBlocks(ctx, plan, options, send, recv, blocks, type, op);
}

Status broadcast(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t count, DataType type, int root) {
  const size_t bytes = count * elementSize(type);
  const Plan plan = planCollective(Collective::kBroadcast, type, RedOp::kSum, bytes, options,
                                   ctx.levels, ctx.cluster);
  if (plan.algorithm == Algorithm::kNative) {
    chargeNative(ctx, Collective::kBroadcast, bytes, root);
    return broadcastNative(ctx, send, recv, count, type, root);
  }
  return broadcastPipelined(ctx, send, recv, bytes, root, plan.chunkBytes);
}

Status allToAll(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                size_t count, DataType type) {
  const size_t blockBytes = count * elementSize(type);
  const size_t bytes = blockBytes * static_cast<size_t>(ctx.transport.size());
  const Plan plan = planCollective(Collective::kAllToAll, type, RedOp::kSum, bytes, options,
                                   ctx.levels, ctx.cluster);
  if (plan.algorithm == Algorithm::kNative) {
    chargeNative(ctx, Collective::kAllToAll, bytes, 0);
    return allToAllNative(ctx, send, recv, count, type);
  }
  return allToAllPairwise(ctx, send, recv, blockBytes);
}

size_t nativeBytesEstimate(Collective collective, size_t bytesPerRank, int ranks, int rank,
                           int root) {
  const size_t n = static_cast<size_t>(ranks);
  switch (collective) {
    case Collective::kAllGather:
      return bytesPerRank * (n - 1);  // own block to every peer
    case Collective::kReduceScatter:  // input minus own block
    case Collective::kAllToAll:
      return bytesPerRank / n * (n - 1);
    case Collective::kAllReduce:
      return 2 * (bytesPerRank / n) * (n - 1);
    case Collective::kBroadcast:  // a chain from root: all but the last rank forward once
      return (rank - root + ranks) % ranks < ranks - 1 ? bytesPerRank : 0;
  }
  return 0;
}

}  // namespace zccl
