// Quantized all-gather (ZeRO++ qwZ): each rank quantizes its block once, the messages
// (codes, scales and header in one buffer) travel unchanged, and every rank dequantizes every
// block, its own too, so that all ranks hold identical values.
//
// Flat: the messages go round the ring, pipelined in rows of chunks (PipelineRows): a block
// travels chunk after chunk, each forwarded as soon as it is in, and the CPU quantizes or
// dequantizes one chunk while the next crosses a link. Two-level: pipelined in rows of
// chunks (RowLayout).
// Row c of my block goes straight to my local rank on every other node; once those of row c
// are in, my bundle's row c (chunk c of my local rank's block on every node) goes to each
// node peer as one message, and every row is dequantized as soon as it is in, while the
// next rows cross between nodes. Per rank, as the two-level ring: (nodes - 1) blocks
// inter-node, (ranksPerNode - 1) bundles intra-node.
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {
namespace {

const void* ownInput(const CollectiveArgs& a, int me) {
  return a.send != nullptr ? a.send
                           : static_cast<char*>(a.recv) + a.blocks.offset(me) * elementSize(a.type);
}

// The ring's rounds: round k is step s = k / rows + 1 of row c = k % rows, in which each rank
// receives chunk c of block (me - s) from the previous rank and sends chunk c of block
// (me - s + 1) to the next (its own at step 1, quantized as it goes). A round's messages are
// posted before any wait that could need them, in the same round on every rank, and what a
// round forwards was received rounds before (with one row: in the round just before, waited
// for first), so that the NCCL transport launches each send with its receive.
class QuantizedAllGatherRing {
 public:
  QuantizedAllGatherRing(Context& ctx, const CollectiveArgs& a, const Plan& plan)
      : ctx_(ctx),
        a_(a),
        params_(plan.quant),
        me_(ctx.transport.rank()),
        n_(ctx.transport.size()),
        rows_(a.blocks, plan.quant, ctx.kernels),
        sender_(senderParams(plan.quant, me_, 0)),
        tickets_(2) {}

  Status run() {
    size_t bytes = 0;
    for (int r = 0; r < n_; ++r) {
      blockAt_.push_back(bytes);
      bytes += rows_.blockBytes(a_.blocks.size(r));
    }
    void* buffer = nullptr;
    ZCCL_CHECK(ctx_.scratch.get(kScratchQuantizedReceive, bytes, &buffer));
    messages_ = static_cast<char*>(buffer);
    const size_t rounds = static_cast<size_t>(n_ - 1) * rows_.rows();
    if (rounds == 0) return dequantizeOwn();  // one rank
    for (size_t k = 0; k < rounds; ++k) {
      ZCCL_CHECK(postRound(k));
      if (k > 0) ZCCL_CHECK(finishThrough(k - 1));
    }
    ZCCL_CHECK(finishThrough(rounds - 1));
    return ctx_.transport.waitAll();
  }

 private:
  int blockOf(size_t k) const {
    const int step = static_cast<int>(k / rows_.rows()) + 1;
    return ((me_ - step) % n_ + n_) % n_;
  }
  size_t rowOf(size_t k) const { return k % rows_.rows(); }
  char* message(int block, size_t row) const {
    return messages_ + blockAt_[static_cast<size_t>(block)] + rows_.chunkOffset(row);
  }
  size_t chunkBytes(int block, size_t row) const {
    return rows_.chunkBytes(a_.blocks.size(block), row);
  }

  Status postRound(size_t k) {
    const size_t row = rowOf(k);
    const bool first = k < rows_.rows();
    if (!first) ZCCL_CHECK(finishThrough(k - rows_.rows()));  // what this round forwards
    const int in = blockOf(k), out = (in + 1) % n_;
    if (chunkBytes(in, row) > 0) {
      ZCCL_CHECK(ctx_.transport.postRecv(message(in, row), chunkBytes(in, row), (me_ + n_ - 1) % n_,
                                         ctx_.tag, &tickets_[k % 2]));
    }
    if (chunkBytes(out, row) == 0) return Status::kSuccess;
    if (first) {
      const size_t count = rows_.chunkSize(a_.blocks.size(me_), row);
      const char* input =
          static_cast<const char*>(ownInput(a_, me_)) + row * rows_.chunk() * elementSize(a_.type);
      ZCCL_CHECK(ctx_.kernels.quantize(input, a_.type, count, chunkParams(sender_, row),
                                       message(me_, row), chunkBytes(me_, row)));
    }
    Ticket ticket;
    return ctx_.transport.postSend(message(out, row), chunkBytes(out, row), (me_ + 1) % n_,
                                   ctx_.tag, &ticket);
  }

  // Waits for the receives of the rounds up to `k` and dequantizes what they brought (and, in
  // step 1, the own chunk of the round's row).
  Status finishThrough(size_t k) {
    for (; finished_ <= k; ++finished_) {
      const size_t row = rowOf(finished_);
      const int in = blockOf(finished_);
      if (chunkBytes(in, row) > 0) ZCCL_CHECK(ctx_.transport.wait(tickets_[finished_ % 2]));
      ZCCL_CHECK(dequantizeChunk(in, row));
      if (finished_ < rows_.rows()) ZCCL_CHECK(dequantizeChunk(me_, row));
    }
    return Status::kSuccess;
  }

  Status dequantizeChunk(int block, size_t row) {
    const size_t count = rows_.chunkSize(a_.blocks.size(block), row);
    if (count == 0) return Status::kSuccess;
    return decodeGathered(ctx_, a_, params_, message(block, row), chunkBytes(block, row),
                          a_.blocks.offset(block) + row * rows_.chunk(), count);
  }

  Status dequantizeOwn() {
    for (size_t row = 0; row < rows_.rows(); ++row) {
      const size_t count = rows_.chunkSize(a_.blocks.size(me_), row);
      const char* input =
          static_cast<const char*>(ownInput(a_, me_)) + row * rows_.chunk() * elementSize(a_.type);
      ZCCL_CHECK(ctx_.kernels.quantize(input, a_.type, count, chunkParams(sender_, row),
                                       message(me_, row), chunkBytes(me_, row)));
      ZCCL_CHECK(dequantizeChunk(me_, row));
    }
    return Status::kSuccess;
  }

  Context& ctx_;
  const CollectiveArgs& a_;
  const QuantParams& params_;
  const int me_;
  const int n_;
  const PipelineRows rows_;
  const QuantParams sender_;
  std::vector<Ticket> tickets_;  // the receives of two rounds in flight
  std::vector<size_t> blockAt_;  // where each block's chunk messages start in messages_
  char* messages_ = nullptr;
  size_t finished_ = 0;  // rounds waited for
};

Status allGatherQuantizedRing(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  return QuantizedAllGatherRing(ctx, a, plan).run();
}

// As the quantized reduce-scatter's two hops, each row's receives are posted before any wait
// that could need them, in the same row on every rank (the NCCL transport launches what was
// posted at each wait).
class QuantizedAllGatherTwoLevel {
 public:
  QuantizedAllGatherTwoLevel(Context& ctx, const CollectiveArgs& a, const Plan& plan)
      : ctx_(ctx),
        a_(a),
        lv_(*ctx.levels),
        params_(plan.quant),
        me_(ctx.transport.rank()),
        rows_(a.blocks, lv_, plan.quant, ctx.kernels),
        sender_(senderParams(plan.quant, me_, 0)),
        crossTickets_(2 * static_cast<size_t>(lv_.numNodes)),
        nodeTickets_(static_cast<size_t>(lv_.ranksPerNode)) {}

  Status run() {
    size_t bytes = 0;
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      bundleAt_.push_back(bytes);
      bytes += rows_.bundleBytes(local);
    }
    void* buffer = nullptr;
    ZCCL_CHECK(ctx_.scratch.get(kScratchQuantizedReceive, bytes, &buffer));
    messages_ = static_cast<char*>(buffer);
    if (rows_.rows() > 0) ZCCL_CHECK(sendCrossRow(0));
    for (size_t row = 0; row < rows_.rows(); ++row) {
      if (row + 1 < rows_.rows()) ZCCL_CHECK(sendCrossRow(row + 1));
      ZCCL_CHECK(shareRow(row));
    }
    ZCCL_CHECK(lv_.cross->waitAll());
    return lv_.node->waitAll();
  }

 private:
  char* message(int local, size_t row, int node) const {
    return messages_ + bundleAt_[static_cast<size_t>(local)] + rows_.offset(local, row, node);
  }
  Ticket& crossTicket(size_t row, int node) {
    return crossTickets_[(row % 2) * static_cast<size_t>(lv_.numNodes) + node];
  }

  // Row `row` of my block, quantized, to my local rank on every other node; theirs to me.
  Status sendCrossRow(size_t row) {
    for (int node = 0; node < lv_.numNodes; ++node) {
      const size_t count = rows_.chunkSize(rows_.blockOf(node, lv_.myLocal), row);
      if (node == lv_.myNode || count == 0) continue;
      ZCCL_CHECK(lv_.cross->postRecv(message(lv_.myLocal, row, node), messageBytes(count, params_),
                                     node, ctx_.tag, &crossTicket(row, node)));
    }
    const size_t count = rows_.chunkSize(a_.blocks.size(me_), row);
    if (count == 0) return Status::kSuccess;
    char* mine = message(lv_.myLocal, row, lv_.myNode);
    ZCCL_CHECK(ctx_.kernels.quantize(
        static_cast<const char*>(ownInput(a_, me_)) + row * rows_.chunk() * elementSize(a_.type),
        a_.type, count, chunkParams(sender_, row), mine, messageBytes(count, params_)));
    for (int distance = 1; distance < lv_.numNodes; ++distance) {
      Ticket ticket;
      ZCCL_CHECK(lv_.cross->postSend(mine, messageBytes(count, params_),
                                     (lv_.myNode + distance) % lv_.numNodes, ctx_.tag, &ticket));
    }
    return Status::kSuccess;
  }

  // My bundle's row `row` to every node peer and theirs to me, each dequantized once it is in.
  Status shareRow(size_t row) {
    for (int node = 0; node < lv_.numNodes; ++node) {
      if (node != lv_.myNode && rows_.chunkSize(rows_.blockOf(node, lv_.myLocal), row) > 0)
        ZCCL_CHECK(lv_.cross->wait(crossTicket(row, node)));
    }
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      if (local == lv_.myLocal || rows_.rowBytes(local, row) == 0) continue;
      ZCCL_CHECK(lv_.node->postRecv(message(local, row, 0), rows_.rowBytes(local, row), local,
                                    ctx_.tag, &nodeTickets_[static_cast<size_t>(local)]));
    }
    for (int distance = 1; distance < lv_.ranksPerNode && rows_.rowBytes(lv_.myLocal, row) > 0;
         ++distance) {
      Ticket ticket;
      ZCCL_CHECK(lv_.node->postSend(message(lv_.myLocal, row, 0), rows_.rowBytes(lv_.myLocal, row),
                                    (lv_.myLocal + distance) % lv_.ranksPerNode, ctx_.tag,
                                    &ticket));
    }
    ZCCL_CHECK(dequantizeRow(lv_.myLocal, row));
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      if (local == lv_.myLocal || rows_.rowBytes(local, row) == 0) continue;
      ZCCL_CHECK(lv_.node->wait(nodeTickets_[static_cast<size_t>(local)]));
      ZCCL_CHECK(dequantizeRow(local, row));
    }
    return Status::kSuccess;
  }

  Status dequantizeRow(int local, size_t row) {
    for (int node = 0; node < lv_.numNodes; ++node) {
      const int owner = lv_.rankAt(node, local);
      const size_t count = rows_.chunkSize(a_.blocks.size(owner), row);
      if (count == 0) continue;
      ZCCL_CHECK(decodeGathered(ctx_, a_, params_, message(local, row, node),
                                messageBytes(count, params_),
                                a_.blocks.offset(owner) + row * rows_.chunk(), count));
    }
    return Status::kSuccess;
  }

  Context& ctx_;
  const CollectiveArgs& a_;
  const NodeLevels& lv_;
  const QuantParams& params_;
  const int me_;
  const RowLayout rows_;
  const QuantParams sender_;
  std::vector<size_t> bundleAt_;      // where each local rank's bundle starts in messages_
  std::vector<Ticket> crossTickets_;  // cross-node receives of two rows in flight
  std::vector<Ticket> nodeTickets_;   // intra-node receives of one row
  char* messages_ = nullptr;
};

Status allGatherQuantizedTwoLevel(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  return QuantizedAllGatherTwoLevel(ctx, a, plan).run();
}

}  // namespace

extern const AlgorithmRow kAllGatherQuantizedRing =
    AlgorithmRow::of(Collective::kAllGather, Algorithm::kRing, allGatherQuantizedRing)
        .quantizedWire()
        .foldsInRankOrder()
        .costs(allGatherRingCost);
extern const AlgorithmRow kAllGatherQuantizedTwoLevel =
    AlgorithmRow::of(Collective::kAllGather, Algorithm::kTwoLevel, allGatherQuantizedTwoLevel)
        .quantizedWire()
        .twoLevels()
        .foldsInRankOrder()
        .costs(allGatherTwoLevelCost);

}  // namespace zccl
