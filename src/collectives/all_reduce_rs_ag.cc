// All-reduce as reduce-scatter then all-gather over the same blocks: each rank sends
// 2(n-1)/n of the buffer, the bandwidth optimum. The blocks follow a Partition, so the
// count need not divide by the number of ranks. Both halves follow the plan: flat or
// two-level, exact or quantized (each rank's reduced block is then quantized once more for
// the all-gather, and every rank ends with the same values).
#include "collectives/algorithms.h"
#include "collectives/collectives.h"

namespace zccl {

Status allReduce(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t count, DataType type, RedOp op) {
  const int n = ctx.transport.size();
  const size_t es = elementSize(type);
  const Plan plan = planCollective(Collective::kAllReduce, type, op, count * es, options,
                                   ctx.levels, ctx.cluster);
  if (plan.algorithm == Algorithm::kNative) {
    chargeNative(ctx, Collective::kAllReduce, count * es, 0);
    return allReduceNative(ctx, send, recv, count, type, op);
  }
  const Partition blocks{count, n};
  char* myBlock = static_cast<char*>(recv) + blocks.offset(ctx.transport.rank()) * es;
  ZCCL_CHECK(reduceScatterBlocks(ctx, plan, options, send, myBlock, blocks, type, op));
  return allGatherBlocks(ctx, plan, options, nullptr, recv, blocks, type);
}

}  // namespace zccl
