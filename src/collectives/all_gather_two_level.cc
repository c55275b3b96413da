// Two-level all-gather: first a ring among the ranks with my local rank (one per node), so
// that each block crosses between nodes once per node; then a ring inside the node, where
// each member forwards the blocks of its local rank from every node. Per rank:
// inter-node (nodes - 1) blocks, intra-node (ranksPerNode - 1) * nodes blocks, against a
// flat ring whose boundary ranks send (n - 1) blocks across nodes.
#include "collectives/algorithms.h"

namespace zccl {

Status allGatherTwoLevel(Context& ctx, const void* send, void* recv, const BlockBytes& layout) {
  const NodeLevels& levels = *ctx.levels;
  const int me = ctx.transport.rank();
  char* out = static_cast<char*>(recv);
  if (send != nullptr && layout.size(me) > 0) {
    ZCCL_CHECK(ctx.kernels.copy(out + layout.offset(me), send, layout.size(me)));
  }
  const auto blockOf = [&](int rank) {
    return Piece{out + layout.offset(rank), layout.size(rank)};
  };
  ZCCL_CHECK(ringAllGatherUnits(*levels.cross, ctx.tag, 1, [&](int node, int) {
    return blockOf(levels.rankAt(node, levels.myLocal));
  }));
  return ringAllGatherUnits(*levels.node, ctx.tag, levels.numNodes, [&](int local, int node) {
    return blockOf(levels.rankAt(node, local));
  });
}

double allGatherTwoLevelCost(const CostTerms& t, Plan* /*plan*/) {
  const double n = t.c.ranks(), N = t.c.nodes, L = t.c.ranksPerNode;
  return t.overlapped((N - 1) * t.crossNodeStep(t.wireBlock) +
                          (L - 1) * CostTerms::step(t.c.intra, N * t.wireBlock, N),
                      t.quantize(1) + t.dequantize(n));
}

namespace {

Status run(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  return allGatherTwoLevel(ctx, a.send, a.recv,
                           BlockBytes::elements(a.blocks, elementSize(a.type)));
}

}  // namespace

extern const AlgorithmRow kAllGatherTwoLevel{
    Collective::kAllGather, Algorithm::kTwoLevel, false, 2, kAnyMemory, true, run,
    allGatherTwoLevelCost};

}  // namespace zccl
