#include "collectives/collectives.h"

#include "collectives/algorithms.h"

namespace zccl {

Status allGather(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t sendCount, DataType type) {
  const int n = ctx.transport.size();
  const size_t bytes = sendCount * elementSize(type) * static_cast<size_t>(n);
  if (planAlgorithm(Collective::kAllGather, type, bytes, options.algorithm) == Algorithm::kNative) {
    return allGatherNative(ctx, send, recv, sendCount, type);
  }
  return allGatherRing(ctx, send, recv, Partition{sendCount * static_cast<size_t>(n), n},
                       elementSize(type));
}

Status reduceScatter(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                     size_t recvCount, DataType type, RedOp op) {
  const int n = ctx.transport.size();
  const Partition blocks{recvCount * static_cast<size_t>(n), n};
  const size_t bytes = blocks.count * elementSize(type);
  switch (planAlgorithm(Collective::kReduceScatter, type, bytes, options.algorithm)) {
    case Algorithm::kNative:
      return reduceScatterNative(ctx, send, recv, recvCount, type, op);
    case Algorithm::kDirect:
      return reduceScatterDirect(ctx, send, recv, blocks, type, op);
    default:
      return reduceScatterRing(ctx, send, recv, blocks, type, op);
  }
}

Status broadcast(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t count, DataType type, int root) {
  const size_t bytes = count * elementSize(type);
  if (planAlgorithm(Collective::kBroadcast, type, bytes, options.algorithm) == Algorithm::kNative) {
    return broadcastNative(ctx, send, recv, count, type, root);
  }
  return broadcastPipelined(ctx, send, recv, bytes, root);
}

Status allToAll(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                size_t count, DataType type) {
  const size_t blockBytes = count * elementSize(type);
  const size_t bytes = blockBytes * static_cast<size_t>(ctx.transport.size());
  if (planAlgorithm(Collective::kAllToAll, type, bytes, options.algorithm) == Algorithm::kNative) {
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
