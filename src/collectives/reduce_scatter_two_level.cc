// Two-level reduce-scatter: inside the node first, so that what crosses between nodes is
// already reduced ranksPerNode-fold. Each rank sends node peer m the blocks that local rank
// m owns on every node and reduces its node's copies of its own bundle; then, among the
// ranks of its local rank on every node, it sends node j's partial to its owner and reduces
// the partials of its own block. Per rank: intra-node (ranksPerNode - 1) * nodes blocks,
// inter-node (nodes - 1) blocks. Each level reduces in a fixed order (local rank, then
// node), half precision in float32 rounding once per level; kAvg divides by the number of
// ranks once, at the end.
#include <algorithm>

#include "collectives/algorithms.h"

namespace zccl {
namespace {

Status reduceScatterTwoLevel(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const NodeLevels& lv = *ctx.levels;
  const Partition& blocks = a.blocks;
  const DataType type = a.type;
  const RedOp op = a.op;
  const int me = ctx.transport.rank();
  const size_t es = elementSize(type);
  const char* in = static_cast<const char*>(a.send);
  const RedOp levelOp = op == RedOp::kAvg ? RedOp::kSum : op;
  const auto bytesOf = [&](int rank) { return blocks.size(rank) * es; };
  const auto inputBlock = [&](int rank) { return in + blocks.offset(rank) * es; };
  const size_t bundleBytes = bundleOffset(lv, lv.myLocal, lv.numNodes, bytesOf);
  const auto pieceOffset = [&](int node) { return bundleOffset(lv, lv.myLocal, node, bytesOf); };
  const void** inputs = nullptr;
  ZCCL_CHECK(scratchInputs(ctx.scratch, std::max(lv.ranksPerNode, lv.numNodes), &inputs));
  Ticket ticket;

  // Intra-node: my node's copies of my bundle, reduced into `partial`.
  void* received = nullptr;
  void* partialBuffer = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchReceive, bundleBytes * lv.ranksPerNode, &received));
  ZCCL_CHECK(ctx.scratch.get(kScratchPartial, bundleBytes, &partialBuffer));
  const auto region = [&](int peer) { return static_cast<char*>(received) + peer * bundleBytes; };
  for (int peer = 0; peer < lv.ranksPerNode; ++peer) {
    if (peer == lv.myLocal) continue;
    for (int node = 0; node < lv.numNodes; ++node) {
      ZCCL_CHECK(lv.node->postRecv(region(peer) + pieceOffset(node),
                                   bytesOf(lv.rankAt(node, lv.myLocal)), peer, ctx.tag, &ticket));
    }
  }
  for (int distance = 1; distance < lv.ranksPerNode; ++distance) {
    const int peer = (lv.myLocal + distance) % lv.ranksPerNode;
    for (int node = 0; node < lv.numNodes; ++node) {
      const int owner = lv.rankAt(node, peer);
      ZCCL_CHECK(lv.node->postSend(inputBlock(owner), bytesOf(owner), peer, ctx.tag, &ticket));
    }
  }
  ZCCL_CHECK(lv.node->waitAll());
  char* partial = static_cast<char*>(partialBuffer);
  for (int node = 0; node < lv.numNodes; ++node) {
    const int owner = lv.rankAt(node, lv.myLocal);
    for (int peer = 0; peer < lv.ranksPerNode; ++peer) {
      inputs[peer] = peer == lv.myLocal ? inputBlock(owner) : region(peer) + pieceOffset(node);
    }
    ZCCL_CHECK(ctx.kernels.reduceOrdered(partial + pieceOffset(node), inputs, lv.ranksPerNode,
                                         blocks.size(owner), type, levelOp));
  }

  // Inter-node: every node's partial of my block.
  const size_t mineBytes = bytesOf(me);
  ZCCL_CHECK(ctx.scratch.get(kScratchReceive, mineBytes * lv.numNodes, &received));
  for (int node = 0; node < lv.numNodes; ++node) {
    if (node == lv.myNode) continue;
    ZCCL_CHECK(lv.cross->postRecv(static_cast<char*>(received) + node * mineBytes, mineBytes, node,
                                  ctx.tag, &ticket));
  }
  for (int distance = 1; distance < lv.numNodes; ++distance) {
    const int node = (lv.myNode + distance) % lv.numNodes;
    ZCCL_CHECK(lv.cross->postSend(partial + pieceOffset(node), bytesOf(lv.rankAt(node, lv.myLocal)),
                                  node, ctx.tag, &ticket));
  }
  ZCCL_CHECK(lv.cross->waitAll());
  for (int node = 0; node < lv.numNodes; ++node) {
    inputs[node] = node == lv.myNode ? partial + pieceOffset(node)
                                     : static_cast<char*>(received) + node * mineBytes;
  }
  ZCCL_CHECK(
      ctx.kernels.reduceOrdered(a.recv, inputs, lv.numNodes, blocks.size(me), type, levelOp));
  if (op == RedOp::kAvg) {
    ZCCL_CHECK(ctx.kernels.divideByCount(a.recv, blocks.size(me), type, ctx.transport.size()));
  }
  return Status::kSuccess;
}

}  // namespace

double reduceScatterTwoLevelCost(const CostTerms& t, Plan* /*plan*/) {
  const double N = t.c.nodes, L = t.c.ranksPerNode;
  const double hop1 = (L - 1) * N, hop2 = N - 1;
  // The quantized form packs each node peer's pieces into one message.
  const double messages1 = t.quantized ? L - 1 : hop1;
  return t.overlapped(CostTerms::step(t.c.intra, hop1 * t.wireBlock, messages1) +
                          t.crossNodeStep(hop2 * t.wireBlock, hop2),
                      t.quantize(hop1 + hop2) + t.dequantize(hop1 + hop2) +
                          (t.quantized ? 0 : t.reduce(hop1 + hop2)));
}

extern const AlgorithmRow kReduceScatterTwoLevel{
    Collective::kReduceScatter, Algorithm::kTwoLevel,     false, 2, kAnyMemory, false,
    reduceScatterTwoLevel,      reduceScatterTwoLevelCost};

}  // namespace zccl
