// Two-level reduce-scatter: inside the node first, so that what crosses between nodes is
// already reduced ranksPerNode-fold. Each rank sends node peer m the blocks that local rank
// m owns on every node and reduces its node's copies of its own bundle; then, among the
// ranks of its local rank on every node, it sends node j's partial to its owner and reduces
// the partials of its own block. Per rank: intra-node (ranksPerNode - 1) * nodes blocks,
// inter-node (nodes - 1) blocks. Each level reduces in a fixed order (local rank, then
// node), half precision in float32 rounding once per level; kAvg divides by the number of
// ranks once, at the end.
//
// Pipelined in rows, as the quantized two hops: row c's intra-node messages (chunk c of each
// block) leave while row c - 1 is reduced,
// each of row c's partials for another node leaves as soon as it is reduced, and row c - 1 of
// my block is reduced over the nodes while row c crosses the link; every reduction of an
// element is the unpipelined one. Each row's receives are posted before any wait that could
// need them, in the same row on every rank (the NCCL transport launches what was posted at
// each wait).
#include <algorithm>
#include <vector>

#include "collectives/algorithms.h"

namespace zccl {
namespace {

// A row is this many of the kernels' rows (Kernels::pipelineElements()): a reduction costs
// the CPU less than quantizing, so rows of the kernels' length let the engine's cost per
// message dominate where the link is fast, while much longer rows no longer keep a slow link
// full (docs/measurements.md, "Row lengths").
constexpr size_t kKernelRowsPerRow = 4;

class TwoLevelReduceScatter {
 public:
  TwoLevelReduceScatter(Context& ctx, const CollectiveArgs& a)
      : ctx_(ctx),
        a_(a),
        lv_(*ctx.levels),
        me_(ctx.transport.rank()),
        es_(elementSize(a.type)),
        levelOp_(a.op == RedOp::kAvg ? RedOp::kSum : a.op),
        chunk_(std::max<size_t>(1, ctx.kernels.pipelineElements() * kKernelRowsPerRow)),
        rows_((a.blocks.largest() + chunk_ - 1) / chunk_),
        rowTickets_(2 * static_cast<size_t>(lv_.ranksPerNode * lv_.numNodes)),
        crossTickets_(2 * static_cast<size_t>(lv_.numNodes)) {}

  Status run() {
    ZCCL_CHECK(layOut());
    if (rows_ > 0) ZCCL_CHECK(sendRow(0));
    for (size_t row = 0; row < rows_; ++row) {
      if (row + 1 < rows_) ZCCL_CHECK(sendRow(row + 1));
      ZCCL_CHECK(postCrossReceives(row));
      ZCCL_CHECK(reduceRow(row));
      if (row > 0) ZCCL_CHECK(sumCrossRow(row - 1));
    }
    if (rows_ > 0) ZCCL_CHECK(sumCrossRow(rows_ - 1));
    ZCCL_CHECK(lv_.node->waitAll());
    return lv_.cross->waitAll();
  }

 private:
  // Elements of chunk `row` of rank `owner`'s block.
  size_t chunkSize(int owner, size_t row) const {
    const size_t block = a_.blocks.size(owner);
    return row * chunk_ < block ? std::min(chunk_, block - row * chunk_) : 0;
  }
  size_t rowOffset(size_t row) const { return row * chunk_ * es_; }
  const char* input(int owner, size_t row) const {
    return static_cast<const char*>(a_.send) + a_.blocks.offset(owner) * es_ + rowOffset(row);
  }
  // Where node `node`'s block starts in a bundle of my local rank's blocks.
  size_t pieceOffset(int node) const {
    return bundleOffset(lv_, lv_.myLocal, node,
                        [&](int rank) { return a_.blocks.size(rank) * es_; });
  }
  // Chunk `row` of node `node`'s block of my bundle, as node peer `local` sent it.
  char* fromPeer(int local, int node, size_t row) const {
    return inbox_ + local * bundleBytes_ + pieceOffset(node) + rowOffset(row);
  }
  char* partial(int node, size_t row) const {
    return partial_ + pieceOffset(node) + rowOffset(row);
  }
  char* fromNode(int node, size_t row) const {
    return crossInbox_ + node * a_.blocks.size(me_) * es_ + rowOffset(row);
  }
  Ticket& rowTicket(size_t row, int local, int node) {
    return rowTickets_[((row % 2) * static_cast<size_t>(lv_.ranksPerNode) + local) *
                           static_cast<size_t>(lv_.numNodes) +
                       node];
  }
  Ticket& crossTicket(size_t row, int node) {
    return crossTickets_[(row % 2) * static_cast<size_t>(lv_.numNodes) + node];
  }

  Status layOut() {
    bundleBytes_ = pieceOffset(lv_.numNodes);
    const size_t mineBytes = a_.blocks.size(me_) * es_;
    void* buffers[2];
    ZCCL_CHECK(ctx_.scratch.get(
        kScratchReceive, bundleBytes_ * lv_.ranksPerNode + mineBytes * lv_.numNodes, &buffers[0]));
    ZCCL_CHECK(ctx_.scratch.get(kScratchPartial, bundleBytes_, &buffers[1]));
    inbox_ = static_cast<char*>(buffers[0]);
    crossInbox_ = inbox_ + bundleBytes_ * lv_.ranksPerNode;
    partial_ = static_cast<char*>(buffers[1]);
    inputs_.resize(static_cast<size_t>(std::max(lv_.ranksPerNode, lv_.numNodes)));
    return Status::kSuccess;
  }

  // Row `row` inside the node: chunk `row` of my bundle from every node peer, and of theirs
  // from my input to them.
  Status sendRow(size_t row) {
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      for (int node = 0; node < lv_.numNodes && local != lv_.myLocal; ++node) {
        const size_t count = chunkSize(lv_.rankAt(node, lv_.myLocal), row);
        if (count == 0) continue;
        ZCCL_CHECK(lv_.node->postRecv(fromPeer(local, node, row), count * es_, local, ctx_.tag,
                                      &rowTicket(row, local, node)));
      }
    }
    for (int distance = 1; distance < lv_.ranksPerNode; ++distance) {
      const int peer = (lv_.myLocal + distance) % lv_.ranksPerNode;
      for (int node = 0; node < lv_.numNodes; ++node) {
        const int owner = lv_.rankAt(node, peer);
        const size_t count = chunkSize(owner, row);
        if (count == 0) continue;
        Ticket ticket;
        ZCCL_CHECK(lv_.node->postSend(input(owner, row), count * es_, peer, ctx_.tag, &ticket));
      }
    }
    return Status::kSuccess;
  }

  Status postCrossReceives(size_t row) {
    const size_t count = chunkSize(me_, row);
    for (int node = 0; node < lv_.numNodes && count > 0; ++node) {
      if (node == lv_.myNode) continue;
      ZCCL_CHECK(lv_.cross->postRecv(fromNode(node, row), count * es_, node, ctx_.tag,
                                     &crossTicket(row, node)));
    }
    return Status::kSuccess;
  }

  // Row `row` of my bundle reduced over my node; the other nodes' partials leave at once.
  Status reduceRow(size_t row) {
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      for (int node = 0; node < lv_.numNodes && local != lv_.myLocal; ++node) {
        if (chunkSize(lv_.rankAt(node, lv_.myLocal), row) > 0)
          ZCCL_CHECK(lv_.node->wait(rowTicket(row, local, node)));
      }
    }
    for (int distance = 1; distance <= lv_.numNodes; ++distance) {
      const int node = (lv_.myNode + distance) % lv_.numNodes;  // my own node's chunk last
      const int owner = lv_.rankAt(node, lv_.myLocal);
      const size_t count = chunkSize(owner, row);
      if (count == 0) continue;
      for (int local = 0; local < lv_.ranksPerNode; ++local) {
        inputs_[local] = local == lv_.myLocal ? input(owner, row) : fromPeer(local, node, row);
      }
      ZCCL_CHECK(ctx_.kernels.reduceOrdered(partial(node, row), inputs_.data(), lv_.ranksPerNode,
                                            count, a_.type, levelOp_));
      if (node == lv_.myNode) continue;
      Ticket ticket;
      ZCCL_CHECK(lv_.cross->postSend(partial(node, row), count * es_, node, ctx_.tag, &ticket));
    }
    return Status::kSuccess;
  }

  // Row `row` of my block reduced over the nodes and stored: the input it overwrites, when
  // the call is in place, was read when the row was reduced inside the node.
  Status sumCrossRow(size_t row) {
    const size_t count = chunkSize(me_, row);
    if (count == 0) return Status::kSuccess;
    for (int node = 0; node < lv_.numNodes; ++node) {
      if (node != lv_.myNode) ZCCL_CHECK(lv_.cross->wait(crossTicket(row, node)));
      inputs_[node] = node == lv_.myNode ? partial(node, row) : fromNode(node, row);
    }
    char* out = static_cast<char*>(a_.recv) + rowOffset(row);
    ZCCL_CHECK(
        ctx_.kernels.reduceOrdered(out, inputs_.data(), lv_.numNodes, count, a_.type, levelOp_));
    if (a_.op != RedOp::kAvg) return Status::kSuccess;
    return ctx_.kernels.divideByCount(out, count, a_.type, ctx_.transport.size());
  }

  Context& ctx_;
  const CollectiveArgs& a_;
  const NodeLevels& lv_;
  const int me_;
  const size_t es_;
  const RedOp levelOp_;
  const size_t chunk_;  // elements
  const size_t rows_;
  std::vector<Ticket> rowTickets_;    // intra-node receives of two rows in flight
  std::vector<Ticket> crossTickets_;  // inter-node receives of two rows in flight
  size_t bundleBytes_ = 0;
  char* inbox_ = nullptr;       // my bundle from each node peer
  char* crossInbox_ = nullptr;  // my block's partial from each node
  char* partial_ = nullptr;     // my bundle reduced over my node
  std::vector<const void*> inputs_;
};

Status reduceScatterTwoLevel(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  return TwoLevelReduceScatter(ctx, a).run();
}

}  // namespace

double reduceScatterTwoLevelCost(const CostTerms& t, Plan* /*plan*/) {
  const double N = t.c.nodes, L = t.c.ranksPerNode;
  const double hop1 = (L - 1) * N, hop2 = N - 1;
  // The quantized form packs each node peer's pieces of a row into one message. Both levels
  // and the kernels run in rows, each beside the others.
  const double messages1 = t.quantized ? L - 1 : hop1;
  return t.pipelined(t.pipelined(CostTerms::step(t.c.intra, hop1 * t.wireBlock, messages1),
                                 t.crossNodeStep(hop2 * t.wireBlock, hop2)),
                     t.quantize(hop1 + hop2) + t.dequantize(hop1 + hop2) +
                         (t.quantized ? 0 : t.reduce(hop1 + hop2)));
}

extern const AlgorithmRow kReduceScatterTwoLevel =
    AlgorithmRow::of(Collective::kReduceScatter, Algorithm::kTwoLevel, reduceScatterTwoLevel)
        .twoLevels()
        .costs(reduceScatterTwoLevelCost);

}  // namespace zccl
