// Quantized reduce-scatter in two hops (ZeRO++ qgZ). Hop 1, inside the node: each rank
// quantizes, for node peer m, the blocks local rank m owns on every node, and sums its node's
// copies of its own bundle in float32. Hop 2, between nodes: it quantizes node j's piece of
// that partial sum for its owner (the rank of its local rank on node j), which sums the
// partials of its block in float32. So each contribution is quantized once per hop, and only
// reduced data crosses between nodes: per rank, (nodes - 1) quantized blocks inter-node
// against (n - 1) for one hop. In every sum the own contribution (unquantized) comes first,
// then the others in local-rank, then node order; kAvg divides by the number of ranks once,
// at the end.
//
// The blocks go in rows of chunks of Kernels::pipelineElements() (a multiple of every group
// size, so the groups are those of the whole block): row c's hop-1 message to a peer holds
// chunk c of each of its blocks, and row c's hop-2 messages leave as soon as row c is reduced
// inside the node, so that the link carries row c while the CPU reduces row c + 1. Blocks of
// one chunk send exactly the messages of the unpipelined algorithm.
//
// Each row's receives are posted before any wait that could need them, and in the same row
// on every rank: the NCCL transport launches what was posted at each wait, so a send and its
// receive must be launched in the same round on both sides.
#include <algorithm>
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {
namespace {

class QuantizedTwoHop {
 public:
  QuantizedTwoHop(Context& ctx, const CollectiveArgs& a, const Plan& plan)
      : ctx_(ctx),
        a_(a),
        lv_(*ctx.levels),
        params_(plan.quant),
        me_(ctx.transport.rank()),
        mine_(a.blocks.size(me_)),
        rows_(a.blocks, lv_, plan.quant, ctx.kernels),
        hop1_(senderParams(plan.quant, me_, 1)),
        hop2_(senderParams(plan.quant, me_, 2)),
        rowTickets_(2 * static_cast<size_t>(lv_.ranksPerNode)),
        crossTickets_(2 * static_cast<size_t>(lv_.numNodes)) {}

  Status run() {
    ZCCL_CHECK(layOut());
    if (rows_.rows() > 0) ZCCL_CHECK(sendRow(0));
    for (size_t row = 0; row < rows_.rows(); ++row) {
      if (row + 1 < rows_.rows()) ZCCL_CHECK(sendRow(row + 1));
      ZCCL_CHECK(postCrossReceives(row));
      ZCCL_CHECK(reduceRow(row));
      if (row > 0) ZCCL_CHECK(sumCrossRow(row - 1));
    }
    if (rows_.rows() > 0) ZCCL_CHECK(sumCrossRow(rows_.rows() - 1));
    ZCCL_CHECK(lv_.node->waitAll());
    return lv_.cross->waitAll();
  }

 private:
  const char* input(int owner, size_t row) const {
    return static_cast<const char*>(a_.send) +
           (a_.blocks.offset(owner) + row * rows_.chunk()) * elementSize(a_.type);
  }
  // The error feedback of that input chunk (hop 1: its contribution; hop 2: the partial sum of
  // it this rank sends; no values without feedback).
  Residuals residual(int owner, size_t row) const {
    return ctx_.residual.at(a_.blocks.offset(owner) + row * rows_.chunk(),
                            static_cast<size_t>(owner));
  }
  char* peerInbox(int local) const { return hop1Inbox_ + local * rows_.bundleBytes(lv_.myLocal); }
  Ticket& rowTicket(size_t row, int local) {
    return rowTickets_[(row % 2) * static_cast<size_t>(lv_.ranksPerNode) + local];
  }
  // Row `row`'s hop-2 receives are posted before row `row - 1`'s are waited for.
  Ticket& crossTicket(size_t row, int node) {
    return crossTickets_[(row % 2) * static_cast<size_t>(lv_.numNodes) + node];
  }

  Status layOut() {
    size_t outbox = 0;
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      sendAt_.push_back(outbox);
      if (local != lv_.myLocal) outbox += rows_.bundleBytes(local);
    }
    const size_t bundleBytes = rows_.bundleBytes(lv_.myLocal);
    mineBytes_ = rows_.blockBytes(mine_);

    void* buffers[4];
    ZCCL_CHECK(ctx_.scratch.get(kScratchQuantizedSend, outbox + bundleBytes, &buffers[0]));
    ZCCL_CHECK(ctx_.scratch.get(kScratchQuantizedReceive,
                                bundleBytes * lv_.ranksPerNode + mineBytes_ * lv_.numNodes,
                                &buffers[1]));
    ZCCL_CHECK(ctx_.scratch.get(kScratchPartial,
                                std::min(rows_.chunk(), a_.blocks.largest()) * sizeof(float),
                                &buffers[2]));
    ZCCL_CHECK(ctx_.scratch.get(kScratchAccumulate,
                                2 * std::min(rows_.chunk(), mine_) * sizeof(float), &buffers[3]));
    if (ctx_.residual.values != nullptr) {
      void* work = nullptr;
      ZCCL_CHECK(ctx_.scratch.get(
          kScratchFeedback, std::min(rows_.chunk(), a_.blocks.largest()) * sizeof(float), &work));
      work_ = static_cast<float*>(work);
    }
    hop1Outbox_ = static_cast<char*>(buffers[0]);
    hop2Outbox_ = hop1Outbox_ + outbox;
    hop1Inbox_ = static_cast<char*>(buffers[1]);
    hop2Inbox_ = hop1Inbox_ + bundleBytes * lv_.ranksPerNode;
    tile_ = static_cast<float*>(buffers[2]);
    totals_ = static_cast<float*>(buffers[3]);
    return Status::kSuccess;
  }

  // Hop 1 of `row`: its receives from every node peer, then its quantized messages to them.
  Status sendRow(size_t row) {
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      if (local == lv_.myLocal || rows_.rowBytes(lv_.myLocal, row) == 0) continue;
      ZCCL_CHECK(lv_.node->postRecv(peerInbox(local) + rows_.offset(lv_.myLocal, row, 0),
                                    rows_.rowBytes(lv_.myLocal, row), local, ctx_.tag,
                                    &rowTicket(row, local)));
    }
    const QuantParams params = chunkParams(hop1_, row);
    for (int distance = 1; distance < lv_.ranksPerNode; ++distance) {
      const int peer = (lv_.myLocal + distance) % lv_.ranksPerNode;
      char* outbox = hop1Outbox_ + sendAt_[static_cast<size_t>(peer)];
      for (int node = 0; node < lv_.numNodes; ++node) {
        const size_t count = rows_.chunkSize(rows_.blockOf(node, peer), row);
        if (count == 0) continue;
        const int owner = lv_.rankAt(node, peer);
        ZCCL_CHECK(quantizeWithFeedback(ctx_.kernels, input(owner, row), a_.type, count, params,
                                        outbox + rows_.offset(peer, row, node),
                                        messageBytes(count, params_), residual(owner, row), work_));
      }
      if (rows_.rowBytes(peer, row) == 0) continue;
      Ticket ticket;
      ZCCL_CHECK(lv_.node->postSend(outbox + rows_.offset(peer, row, 0), rows_.rowBytes(peer, row),
                                    peer, ctx_.tag, &ticket));
    }
    return Status::kSuccess;
  }

  Status postCrossReceives(size_t row) {
    const size_t count = rows_.chunkSize(mine_, row);
    for (int node = 0; node < lv_.numNodes && count > 0; ++node) {
      if (node == lv_.myNode) continue;
      ZCCL_CHECK(lv_.cross->postRecv(crossMessage(node, row), messageBytes(count, params_), node,
                                     ctx_.tag, &crossTicket(row, node)));
    }
    return Status::kSuccess;
  }
  char* crossMessage(int node, size_t row) const {
    return hop2Inbox_ + node * mineBytes_ + rows_.chunkOffset(row);
  }

  // Sums row `row` of my bundle over my node; sends the other nodes' chunks on at once.
  Status reduceRow(size_t row) {
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      if (local != lv_.myLocal && rows_.rowBytes(lv_.myLocal, row) > 0)
        ZCCL_CHECK(lv_.node->wait(rowTicket(row, local)));
    }
    const QuantParams params = chunkParams(hop2_, row);
    for (int distance = 1; distance <= lv_.numNodes; ++distance) {
      const int node = (lv_.myNode + distance) % lv_.numNodes;  // my own node's chunk last
      const size_t count = rows_.chunkSize(rows_.blockOf(node, lv_.myLocal), row);
      if (count == 0) continue;
      float* partial = node == lv_.myNode ? totalRow(row) : tile_;
      ZCCL_CHECK(ctx_.kernels.convertToFloat(input(lv_.rankAt(node, lv_.myLocal), row), a_.type,
                                             count, partial));
      for (int local = 0; local < lv_.ranksPerNode; ++local) {
        if (local == lv_.myLocal) continue;
        ZCCL_CHECK(ctx_.kernels.dequantizeAccumulate(
            peerInbox(local) + rows_.offset(lv_.myLocal, row, node), messageBytes(count, params_),
            params_, partial, count));
      }
      if (node == lv_.myNode) continue;
      char* message = hop2Outbox_ + rows_.offset(lv_.myLocal, row, node);
      // The partial sum's error feedback is this rank's: it alone quantizes it.
      ZCCL_CHECK(quantizeWithFeedback(ctx_.kernels, partial, DataType::kFloat32, count, params,
                                      message, messageBytes(count, params_),
                                      residual(lv_.rankAt(node, lv_.myLocal), row), partial));
      Ticket ticket;
      ZCCL_CHECK(
          lv_.cross->postSend(message, messageBytes(count, params_), node, ctx_.tag, &ticket));
    }
    return Status::kSuccess;
  }

  // Sums row `row` of my block over the nodes and stores it: the input it overwrites, when
  // the call is in place, was read when the row was reduced inside the node.
  Status sumCrossRow(size_t row) {
    const size_t count = rows_.chunkSize(mine_, row);
    if (count == 0) return Status::kSuccess;
    for (int node = 0; node < lv_.numNodes; ++node) {
      if (node == lv_.myNode) continue;
      ZCCL_CHECK(lv_.cross->wait(crossTicket(row, node)));
      ZCCL_CHECK(ctx_.kernels.dequantizeAccumulate(
          crossMessage(node, row), messageBytes(count, params_), params_, totalRow(row), count));
    }
    return ctx_.kernels.storeFloatAs(
        totalRow(row), count, a_.op == RedOp::kAvg ? ctx_.transport.size() : 1, a_.type,
        static_cast<char*>(a_.recv) + row * rows_.chunk() * elementSize(a_.type));
  }
  // Two rows are in flight: one reduced inside the node, the one before summed over the nodes.
  float* totalRow(size_t row) const { return totals_ + (row % 2) * rows_.chunk(); }

  Context& ctx_;
  const CollectiveArgs& a_;
  const NodeLevels& lv_;
  const QuantParams& params_;
  const int me_;
  const size_t mine_;
  const RowLayout rows_;
  const QuantParams hop1_, hop2_;
  std::vector<size_t> sendAt_;        // where each node peer's messages start in the outbox
  size_t mineBytes_ = 0;              // my block's chunks, as one node sends them
  std::vector<Ticket> rowTickets_;    // hop-1 receives of two rows in flight
  std::vector<Ticket> crossTickets_;  // hop-2 receives of two rows in flight
  char* hop1Outbox_ = nullptr;
  char* hop2Outbox_ = nullptr;
  char* hop1Inbox_ = nullptr;
  char* hop2Inbox_ = nullptr;
  float* tile_ = nullptr;    // another node's chunk of my bundle, summed over my node
  float* totals_ = nullptr;  // rows of my block, summed over my node, then over all nodes
  float* work_ = nullptr;    // a hop-1 chunk compensated by its error feedback
};

Status reduceScatterQuantized2Hop(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  return QuantizedTwoHop(ctx, a, plan).run();
}

}  // namespace

extern const AlgorithmRow kReduceScatterQuantized2Hop =
    AlgorithmRow::of(Collective::kReduceScatter, Algorithm::kTwoLevel, reduceScatterQuantized2Hop)
        .quantizedWire()
        .twoLevels()
        .foldsInRankOrder()
        .costs(reduceScatterTwoLevelCost);

}  // namespace zccl
