// Two-level all-gather, pipelined in rows of chunks of Kernels::pipelineElements() elements:
// row c of my block goes straight to my local rank on every other node, so that each block
// crosses between nodes once per node; once those of row c are in, row c of my local rank's
// block on every node goes to each node peer, while the next rows cross between nodes. Per
// rank: inter-node (nodes - 1) blocks, intra-node (ranksPerNode - 1) * nodes blocks, against
// a flat ring whose boundary ranks send (n - 1) blocks across nodes; the two levels' transfers
// overlap instead of following each other, and every message lands in place in recv.
//
// Rows keep the messages small and few in flight: over TCP, where the engine moves bytes only
// while it is polled, one block-sized message per step leaves the link idle for much of the
// time once several ranks of a node cross at once (docs/measurements.md). Each row's receives
// are posted before any wait that could need them, in the same row on every rank (the NCCL
// transport launches what was posted at each wait).
#include <algorithm>
#include <vector>

#include "collectives/algorithms.h"

namespace zccl {
namespace {

class TwoLevelAllGather {
 public:
  TwoLevelAllGather(Context& ctx, const void* send, void* recv, const BlockBytes& layout,
                    size_t chunkBytes)
      : ctx_(ctx),
        lv_(*ctx.levels),
        me_(ctx.transport.rank()),
        send_(static_cast<const char*>(send)),
        out_(static_cast<char*>(recv)),
        layout_(layout),
        chunk_(chunkBytes),
        crossTickets_(2 * static_cast<size_t>(lv_.numNodes)),
        nodeTickets_(static_cast<size_t>(lv_.ranksPerNode * lv_.numNodes)) {
    size_t largest = 0;
    for (int r = 0; r < ctx.transport.size(); ++r) largest = std::max(largest, layout.size(r));
    rows_ = (largest + chunk_ - 1) / chunk_;
  }

  Status run() {
    if (rows_ > 0) ZCCL_CHECK(sendCrossRow(0));
    for (size_t row = 0; row < rows_; ++row) {
      if (row + 1 < rows_) ZCCL_CHECK(sendCrossRow(row + 1));
      ZCCL_CHECK(shareRow(row));
    }
    ZCCL_CHECK(lv_.cross->waitAll());
    return lv_.node->waitAll();
  }

 private:
  // Chunk `row` of rank `rank`'s block in recv (no bytes past the block's end).
  Piece chunk(int rank, size_t row) const {
    const size_t size = layout_.size(rank), at = std::min(size, row * chunk_);
    return Piece{out_ + layout_.offset(rank) + at, std::min(chunk_, size - at)};
  }
  Ticket& crossTicket(size_t row, int node) {
    return crossTickets_[(row % 2) * static_cast<size_t>(lv_.numNodes) + node];
  }

  // Row `row` of my block to my local rank on every other node; theirs to me. Out of place,
  // the send reads the input and my chunk is copied into recv meanwhile.
  Status sendCrossRow(size_t row) {
    for (int node = 0; node < lv_.numNodes; ++node) {
      const Piece theirs = chunk(lv_.rankAt(node, lv_.myLocal), row);
      if (node == lv_.myNode || theirs.bytes == 0) continue;
      ZCCL_CHECK(
          lv_.cross->postRecv(theirs.data, theirs.bytes, node, ctx_.tag, &crossTicket(row, node)));
    }
    const Piece mine = chunk(me_, row);
    if (mine.bytes == 0) return Status::kSuccess;
    const char* source = send_ != nullptr ? send_ + row * chunk_ : mine.data;
    for (int distance = 1; distance < lv_.numNodes; ++distance) {
      Ticket ticket;
      ZCCL_CHECK(lv_.cross->postSend(source, mine.bytes, (lv_.myNode + distance) % lv_.numNodes,
                                     ctx_.tag, &ticket));
    }
    return send_ != nullptr ? copyAlongside(ctx_, *lv_.cross, mine.data, source, mine.bytes)
                            : Status::kSuccess;
  }

  // Once row `row` of my local rank's blocks is in, it goes to every node peer, and theirs
  // comes to me.
  Status shareRow(size_t row) {
    for (int node = 0; node < lv_.numNodes; ++node) {
      if (node != lv_.myNode && chunk(lv_.rankAt(node, lv_.myLocal), row).bytes > 0)
        ZCCL_CHECK(lv_.cross->wait(crossTicket(row, node)));
    }
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      for (int node = 0; node < lv_.numNodes && local != lv_.myLocal; ++node) {
        const Piece theirs = chunk(lv_.rankAt(node, local), row);
        if (theirs.bytes == 0) continue;
        ZCCL_CHECK(lv_.node->postRecv(theirs.data, theirs.bytes, local, ctx_.tag,
                                      &nodeTickets_[nodeTicket(local, node)]));
      }
    }
    for (int distance = 1; distance < lv_.ranksPerNode; ++distance) {
      const int peer = (lv_.myLocal + distance) % lv_.ranksPerNode;
      for (int node = 0; node < lv_.numNodes; ++node) {
        const Piece mine = chunk(lv_.rankAt(node, lv_.myLocal), row);
        if (mine.bytes == 0) continue;
        Ticket ticket;
        ZCCL_CHECK(lv_.node->postSend(mine.data, mine.bytes, peer, ctx_.tag, &ticket));
      }
    }
    for (int local = 0; local < lv_.ranksPerNode; ++local) {
      for (int node = 0; node < lv_.numNodes && local != lv_.myLocal; ++node) {
        if (chunk(lv_.rankAt(node, local), row).bytes > 0)
          ZCCL_CHECK(lv_.node->wait(nodeTickets_[nodeTicket(local, node)]));
      }
    }
    return Status::kSuccess;
  }
  size_t nodeTicket(int local, int node) const {
    return static_cast<size_t>(local) * static_cast<size_t>(lv_.numNodes) +
           static_cast<size_t>(node);
  }

  Context& ctx_;
  const NodeLevels& lv_;
  const int me_;
  const char* const send_;  // nullptr in place
  char* const out_;
  const BlockBytes& layout_;
  const size_t chunk_;
  size_t rows_ = 0;
  std::vector<Ticket> crossTickets_;  // cross-node receives of two rows in flight
  std::vector<Ticket> nodeTickets_;   // intra-node receives of one row, by local rank and node
};

Status run(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t es = elementSize(a.type);
  const BlockBytes layout = BlockBytes::elements(a.blocks, es);
  return TwoLevelAllGather(ctx, a.send, a.recv, layout, ctx.kernels.pipelineElements() * es).run();
}

}  // namespace

double allGatherTwoLevelCost(const CostTerms& t, Plan* /*plan*/) {
  const double n = t.c.ranks(), N = t.c.nodes, L = t.c.ranksPerNode;
  // Both levels and the kernels run in rows, each beside the others; a row's messages of
  // each level are posted together.
  return t.pipelined(
      t.pipelined(t.crossNodeStep((N - 1) * t.wireBlock, N - 1),
                  CostTerms::step(t.c.intra, (L - 1) * N * t.wireBlock, (L - 1) * N)),
      t.quantize(1) + t.dequantize(n));
}

extern const AlgorithmRow kAllGatherTwoLevel =
    AlgorithmRow::of(Collective::kAllGather, Algorithm::kTwoLevel, run)
        .twoLevels()
        .foldsInRankOrder()
        .costs(allGatherTwoLevelCost);

}  // namespace zccl
