// All-reduce as reduce-scatter then all-gather over the same blocks: each rank sends
// 2(n-1)/n of the buffer, the bandwidth optimum. The blocks follow a Partition, so the
// count need not divide by the number of ranks.
#include <cstring>

#include "collectives/algorithms.h"
#include "collectives/collectives.h"

namespace zccl {

Status allReduce(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t count, DataType type, RedOp op) {
  const int n = ctx.transport.size();
  const size_t es = elementSize(type);
  const Algorithm algorithm =
      planAlgorithm(Collective::kAllReduce, type, count * es, options.algorithm);
  if (algorithm == Algorithm::kNative) return allReduceNative(ctx, send, recv, count, type, op);
  const Partition blocks{count, n};
  char* myBlock = static_cast<char*>(recv) + blocks.offset(ctx.transport.rank()) * es;
  if (algorithm == Algorithm::kDirect) {
    ZCCL_CHECK(reduceScatterDirect(ctx, send, myBlock, blocks, type, op));
  } else {
    ZCCL_CHECK(reduceScatterRing(ctx, send, myBlock, blocks, type, op));
  }
  return allGatherRing(ctx, nullptr, recv, blocks, es);
}

}  // namespace zccl
