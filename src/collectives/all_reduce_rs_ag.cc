// All-reduce as reduce-scatter then all-gather over the same blocks: each rank sends
// 2(n-1)/n of the buffer, the bandwidth optimum. The blocks follow a Partition, so the
// count need not divide by the number of ranks. Both halves take the registry's rows of the
// same family, levels and wire: flat or two-level, exact or quantized (each rank's reduced
// block is then quantized once more for the all-gather, and every rank ends with the same
// values).
#include "collectives/algorithms.h"

namespace zccl {
namespace {

struct Halves {
  Plan reduceScatter;
  Plan allGather;
};

// The reduce-scatter of the row's own algorithm and the all-gather of its levels and wire.
Halves halvesOf(const Plan& plan, DataType type, MemoryKind memory) {
  const AlgorithmRow& row = *plan.row;
  Halves halves{plan, plan};
  halves.reduceScatter.row =
      findRow(Collective::kReduceScatter, row.algorithm, row.quantized, memory);
  halves.allGather.row =
      preferredRow(Collective::kAllGather, type, memory, row.quantized, row.levels, row.algorithm);
  halves.allGather.algorithm = halves.allGather.row->algorithm;
  return halves;
}

Status allReduce(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  const Halves halves = halvesOf(plan, a.type, ctx.memory());
  const size_t es = elementSize(a.type);
  CollectiveArgs scatter = a;
  scatter.recv = static_cast<char*>(a.recv) + a.blocks.offset(ctx.transport.rank()) * es;
  ZCCL_CHECK(halves.reduceScatter.row->run(ctx, scatter, halves.reduceScatter));
  CollectiveArgs gather = a;
  gather.send = nullptr;  // each rank's reduced block already sits in recv
  return halves.allGather.row->run(ctx, gather, halves.allGather);
}

double allReduceCost(const CostTerms& t, Plan* plan) {
  Halves halves = halvesOf(*plan, t.type, MemoryKind::kHost);
  return halves.reduceScatter.row->cost(t, &halves.reduceScatter) +
         halves.allGather.row->cost(t, &halves.allGather);
}

constexpr AlgorithmRow allReduceRow(Algorithm algorithm) {
  return AlgorithmRow::of(Collective::kAllReduce, algorithm, allReduce).costs(allReduceCost);
}

}  // namespace

extern const AlgorithmRow kAllReduceRing = allReduceRow(Algorithm::kRing).roundsAtEveryHop();
extern const AlgorithmRow kAllReduceDirect = allReduceRow(Algorithm::kDirect).foldsInRankOrder();
extern const AlgorithmRow kAllReduceTwoLevel = allReduceRow(Algorithm::kTwoLevel).twoLevels();
extern const AlgorithmRow kAllReduceQuantized1Hop =
    allReduceRow(Algorithm::kDirect).quantizedWire().foldsInRankOrder();
extern const AlgorithmRow kAllReduceQuantized2Hop =
    allReduceRow(Algorithm::kTwoLevel).quantizedWire().twoLevels().foldsInRankOrder();

}  // namespace zccl
