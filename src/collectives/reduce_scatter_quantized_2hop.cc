// Quantized reduce-scatter in two hops (ZeRO++ qgZ). Hop 1, inside the node: each rank
// quantizes, for node peer m, the blocks local rank m owns on every node, packed into one
// message, and sums its node's copies of its own bundle in float32. Hop 2, between nodes:
// it quantizes node j's piece of that partial sum for its owner (the rank of its local rank
// on node j) and sums the partials of its own block in float32. So each contribution is
// quantized once per hop, and only reduced data crosses between nodes: per rank,
// (nodes - 1) quantized blocks inter-node against (n - 1) for one hop. The own contribution
// of each hop stays unquantized; sums run in a fixed order (local rank, then node); kAvg
// divides by the number of ranks once, at the end.
#include <cstring>

#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {
namespace {

struct TwoHopBuffers {
  char* outbox;
  char* inbox;
  float* partial;  // my bundle, summed over my node
  float* total;    // my block, summed over all nodes
};

Status reduceScatterQuantized2Hop(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  const NodeLevels& lv = *ctx.levels;
  const Partition& blocks = a.blocks;
  const DataType type = a.type;
  const QuantParams& params = plan.quant;
  const int me = ctx.transport.rank();
  const size_t es = elementSize(type);
  const char* in = static_cast<const char*>(a.send);
  const auto messageOf = [&](int rank) { return messageBytes(blocks.size(rank), params); };
  const auto elementsOf = [&](int rank) { return blocks.size(rank); };
  // Where node k's message / elements start in local rank m's bundle.
  const auto messageAt = [&](int local, int node) {
    return bundleOffset(lv, local, node, messageOf);
  };
  const auto elementAt = [&](int node) { return bundleOffset(lv, lv.myLocal, node, elementsOf); };
  const size_t myBundleBytes = messageAt(lv.myLocal, lv.numNodes);
  size_t outboxBytes = 0;
  for (int local = 0; local < lv.ranksPerNode; ++local)
    outboxBytes += messageAt(local, lv.numNodes);
  const size_t mine = blocks.size(me);

  void* buffers[4];
  ZCCL_CHECK(ctx.scratch.get(kScratchQuantizedSend, outboxBytes, &buffers[0]));
  ZCCL_CHECK(
      ctx.scratch.get(kScratchQuantizedReceive, myBundleBytes * lv.ranksPerNode, &buffers[1]));
  ZCCL_CHECK(ctx.scratch.get(kScratchPartial, elementAt(lv.numNodes) * sizeof(float), &buffers[2]));
  ZCCL_CHECK(ctx.scratch.get(kScratchAccumulate, mine * sizeof(float), &buffers[3]));
  const TwoHopBuffers b{static_cast<char*>(buffers[0]), static_cast<char*>(buffers[1]),
                        static_cast<float*>(buffers[2]), static_cast<float*>(buffers[3])};
  Ticket ticket;

  // Hop 1: intra-node.
  for (int peer = 0; peer < lv.ranksPerNode; ++peer) {
    if (peer == lv.myLocal) continue;
    ZCCL_CHECK(
        lv.node->postRecv(b.inbox + peer * myBundleBytes, myBundleBytes, peer, ctx.tag, &ticket));
  }
  const QuantParams hop1 = senderParams(params, me, 1);
  char* next = b.outbox;
  for (int distance = 1; distance < lv.ranksPerNode; ++distance) {
    const int peer = (lv.myLocal + distance) % lv.ranksPerNode;
    for (int node = 0; node < lv.numNodes; ++node) {
      const int owner = lv.rankAt(node, peer);
      if (blocks.size(owner) == 0) continue;
      ZCCL_CHECK(ctx.kernels.quantize(in + blocks.offset(owner) * es, type, blocks.size(owner),
                                      hop1, next + messageAt(peer, node), messageOf(owner)));
    }
    ZCCL_CHECK(lv.node->postSend(next, messageAt(peer, lv.numNodes), peer, ctx.tag, &ticket));
    next += messageAt(peer, lv.numNodes);
  }
  ZCCL_CHECK(lv.node->waitAll());
  ZCCL_CHECK(ctx.kernels.zeroFloats(b.partial, elementAt(lv.numNodes)));
  for (int peer = 0; peer < lv.ranksPerNode; ++peer) {
    for (int node = 0; node < lv.numNodes; ++node) {
      const int owner = lv.rankAt(node, lv.myLocal);
      float* piece = b.partial + elementAt(node);
      if (blocks.size(owner) == 0) continue;
      if (peer == lv.myLocal) {
        ZCCL_CHECK(ctx.kernels.accumulateAsFloat(in + blocks.offset(owner) * es, type,
                                                 blocks.size(owner), piece));
      } else {
        ZCCL_CHECK(ctx.kernels.dequantizeAccumulate(
            b.inbox + peer * myBundleBytes + messageAt(lv.myLocal, node), messageOf(owner), params,
            piece, blocks.size(owner)));
      }
    }
  }

  // Hop 2: inter-node, among the ranks of my local rank.
  const size_t mineBytes = messageOf(me);
  ZCCL_CHECK(ctx.scratch.get(kScratchQuantizedReceive, mineBytes * lv.numNodes, &buffers[1]));
  char* inbox = static_cast<char*>(buffers[1]);
  for (int node = 0; node < lv.numNodes; ++node) {
    if (node == lv.myNode) continue;
    ZCCL_CHECK(lv.cross->postRecv(inbox + node * mineBytes, mineBytes, node, ctx.tag, &ticket));
  }
  const QuantParams hop2 = senderParams(params, me, 2);
  next = b.outbox;
  for (int distance = 1; distance < lv.numNodes; ++distance) {
    const int node = (lv.myNode + distance) % lv.numNodes;
    const int owner = lv.rankAt(node, lv.myLocal);
    if (blocks.size(owner) == 0) continue;
    ZCCL_CHECK(ctx.kernels.quantize(b.partial + elementAt(node), DataType::kFloat32,
                                    blocks.size(owner), hop2, next, messageOf(owner)));
    ZCCL_CHECK(lv.cross->postSend(next, messageOf(owner), node, ctx.tag, &ticket));
    next += messageOf(owner);
  }
  ZCCL_CHECK(lv.cross->waitAll());
  ZCCL_CHECK(ctx.kernels.zeroFloats(b.total, mine));
  for (int node = 0; node < lv.numNodes && mine > 0; ++node) {
    if (node == lv.myNode) {
      ZCCL_CHECK(ctx.kernels.accumulateAsFloat(b.partial + elementAt(node), DataType::kFloat32,
                                               mine, b.total));
    } else {
      ZCCL_CHECK(ctx.kernels.dequantizeAccumulate(inbox + node * mineBytes, mineBytes, params,
                                                  b.total, mine));
    }
  }
  return ctx.kernels.storeFloatAs(b.total, mine, a.op == RedOp::kAvg ? ctx.transport.size() : 1,
                                  type, a.recv);
}

}  // namespace

extern const AlgorithmRow kReduceScatterQuantized2Hop{
    Collective::kReduceScatter, Algorithm::kTwoLevel,     true, 2, kAnyMemory, true,
    reduceScatterQuantized2Hop, reduceScatterTwoLevelCost};

}  // namespace zccl
