// Reduce as reduce-scatter then gather at the root: each rank sends (n-1)/n of the buffer
// in the reduce-scatter and one block to the root, the bytes of a ring reduce rather than
// those of an all-reduce. The reduce-scatter is the registry's row of the plan's family,
// levels and wire (flat or two-level, exact or quantized), so a reduce takes every path an
// all-reduce can; the reduced blocks then travel to the root exactly. The root's own block is
// reduced straight into its place in recv.
#include "collectives/algorithms.h"

namespace zccl {
namespace {

Plan reduceScatterHalf(const Plan& plan, MemoryKind memory) {
  Plan half = plan;
  half.row = findRow(Collective::kReduceScatter, plan.row->algorithm, plan.row->quantized, memory);
  return half;
}

// recv is written on the root only (it may be nullptr elsewhere); in place when send == recv.
Status reduce(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  const Plan half = reduceScatterHalf(plan, ctx.memory());
  const int me = ctx.transport.rank();
  const size_t es = elementSize(a.type);
  CollectiveArgs scatter = a;
  if (me == a.root) {
    scatter.recv = static_cast<char*>(a.recv) + a.blocks.offset(me) * es;
  } else {
    ZCCL_CHECK(ctx.scratch.get(kScratchReduced, a.blocks.size(me) * es, &scatter.recv));
  }
  ZCCL_CHECK(half.row->run(ctx, scatter, half));
  CollectiveArgs gather = a;
  gather.send = me == a.root ? nullptr : scatter.recv;
  return gatherDirect(ctx, gather);
}

double reduceCost(const CostTerms& t, Plan* plan) {
  Plan half = reduceScatterHalf(*plan, MemoryKind::kHost);
  return half.row->cost(t, &half) + gatherDirectCost(t);
}

constexpr AlgorithmRow reduceRow(Algorithm algorithm) {
  return AlgorithmRow::of(Collective::kReduce, algorithm, reduce).costs(reduceCost);
}

}  // namespace

// Rows mirror the reduce-scatter rows they run on, in the same order of preference.
extern const AlgorithmRow kReduceRing = reduceRow(Algorithm::kRing);
extern const AlgorithmRow kReduceDirect = reduceRow(Algorithm::kDirect).foldsInRankOrder();
extern const AlgorithmRow kReduceTwoLevel = reduceRow(Algorithm::kTwoLevel).twoLevels();
extern const AlgorithmRow kReduceQuantized1Hop =
    reduceRow(Algorithm::kDirect).quantizedWire().foldsInRankOrder();
extern const AlgorithmRow kReduceQuantized2Hop =
    reduceRow(Algorithm::kTwoLevel).quantizedWire().twoLevels().foldsInRankOrder();

}  // namespace zccl
