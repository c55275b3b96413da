// What every algorithm runs on: a transport, the communicator's scratch pool, the node
// levels for two-level algorithms, and how a buffer is cut into one block per rank.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/paths.h"
#include "common/scratch.h"
#include "common/types.h"
#include "kernels/kernels.h"
#include "transport/transport.h"

namespace zccl {

// Tags keep collective traffic apart from the application's zcclSend/zcclRecv.
constexpr int kPointToPointTag = 0;
constexpr int kCollectiveTag = 1;

// Scratch slots, so that algorithms that nest (all-reduce = reduce-scatter + all-gather)
// never hand out the same memory twice. Scratch is in the call's memory (a GPU's for device
// calls): what the host itself reads or writes, such as an ordered reduction's input
// pointers, is kept apart from it.
enum ScratchSlot : size_t {
  kScratchStaging = 0,  // a copy of the input for in-place forms
  kScratchReceive = 1,
  kScratchAccumulate = 2,
  kScratchQuantizedSend = 3,
  kScratchQuantizedReceive = 4,
  kScratchPartial = 5,     // a two-level reduction's intra-node result
  kScratchReduced = 6,     // a reduce's block of a rank other than the root
  kScratchFeedback = 7,    // float32 values being quantized with error feedback
  kScratchDifference = 8,  // a rank's block's change from its reference (float32)
  kScratchGathered = 9,    // every block's change in float32 (decoding's work space)
};

// The two levels of a job whose nodes all hold the same number of ranks: `node` joins the
// ranks of this rank's node (member i = local rank i), `cross` joins this rank's local rank
// on every node (member j = node j).
struct NodeLevels {
  Transport* node = nullptr;
  Transport* cross = nullptr;
  int numNodes = 1;
  int ranksPerNode = 1;
  int myNode = 0;
  int myLocal = 0;
  std::vector<int> ranks;  // ranks[node * ranksPerNode + local]

  int rankAt(int node, int local) const {
    return ranks[static_cast<size_t>(node) * static_cast<size_t>(ranksPerNode) +
                 static_cast<size_t>(local)];
  }
};

// What the native algorithm moved (its peers are hidden inside the engine).
struct NativeCounters {
  uint64_t bytesEstimated = 0;
  uint64_t calls = 0;
};

struct ClusterModel;
class PlanTuner;

struct Context {
  Transport& transport;
  ScratchPool& scratch;
  const NodeLevels* levels;  // nullptr when the nodes differ in size
  NativeCounters& native;
  const ClusterModel* cluster;  // nullptr: plan by rule, without a cost model
  Kernels& kernels;             // of the memory the call's buffers live in
  int tag;                      // every message of this call, on every level's transport
  // Times the candidate paths of calls that allow a lossy format (nullptr: the model alone).
  PlanTuner* tuner = nullptr;
  // Error feedback of a quantized reduction (qgZ-EF; no values: none): one residual per
  // element of the call's input, what quantizing it (or the partial sum this rank sends for
  // it) lost last time, added before it is quantized again.
  Residuals residual = {};
  // Where runCollective records the path it takes (nullptr: nobody asks), for the call's
  // trace (ZCCL_DEBUG=TRACE, ZCCL_TRACE).
  Plan* ran = nullptr;

  MemoryKind memory() const { return kernels.memory(); }
};

// `count` elements cut into `parts` contiguous blocks; the first count % parts blocks hold
// one element more, so that no count has to divide by the number of ranks.
struct Partition {
  size_t count;
  int parts;

  size_t size(int part) const {
    const size_t base = count / static_cast<size_t>(parts);
    return base + (static_cast<size_t>(part) < count % static_cast<size_t>(parts) ? 1 : 0);
  }
  size_t offset(int part) const {
    const size_t base = count / static_cast<size_t>(parts);
    const size_t extra = count % static_cast<size_t>(parts);
    const size_t index = static_cast<size_t>(part);
    return index * base + (index < extra ? index : extra);
  }
  size_t largest() const { return size(0); }
};

// Where each rank's block of a Partition lies in a byte buffer, when a block of k elements
// takes bytesOf(k) bytes: k * element size, or a quantized message of k elements. A
// Partition has only two block sizes, so offsets are closed-form.
struct BlockBytes {
  Partition blocks;
  size_t smallBytes;  // a block of count / parts elements
  size_t largeBytes;  // a block of one element more

  template <typename BytesOf>
  static BlockBytes of(const Partition& blocks, BytesOf&& bytesOf) {
    const size_t base = blocks.count / static_cast<size_t>(blocks.parts);
    return BlockBytes{blocks, bytesOf(base), bytesOf(base + 1)};
  }
  static BlockBytes elements(const Partition& blocks, size_t elementSize) {
    return of(blocks, [&](size_t k) { return k * elementSize; });
  }
  size_t size(int part) const {
    return static_cast<size_t>(part) < extra() ? largeBytes : smallBytes;
  }
  size_t offset(int part) const {
    const size_t index = static_cast<size_t>(part);
    return index * smallBytes + std::min(index, extra()) * (largeBytes - smallBytes);
  }
  size_t total() const { return offset(blocks.parts); }

 private:
  size_t extra() const { return blocks.count % static_cast<size_t>(blocks.parts); }
};

// A bundle packs, in node order, one piece per node for a given local rank: the blocks that
// local rank owns on every node. Returns where node `node`'s piece starts (node = numNodes:
// the bundle's size), a piece of rank r being sizeOf(r) long.
template <typename SizeOf>
size_t bundleOffset(const NodeLevels& levels, int local, int node, SizeOf&& sizeOf) {
  size_t offset = 0;
  for (int k = 0; k < node; ++k) offset += sizeOf(levels.rankAt(k, local));
  return offset;
}

// A byte range of a buffer: one message.
struct Piece {
  char* data;
  size_t bytes;
};

inline int ringNext(const Transport& t) { return (t.rank() + 1) % t.size(); }
inline int ringPrev(const Transport& t) { return (t.rank() + t.size() - 1) % t.size(); }
// The block index `distance` places before `rank` on the ring.
inline int ringBlock(int rank, int distance, int size) {
  return ((rank - distance) % size + size) % size;
}

// Ring all-gather of one unit per member of `t`: at step s each member forwards the unit it
// received at step s-1 (its own at s=0) to the next. A unit is `pieces` byte ranges,
// pieceOf(unit, k) -> {pointer, bytes}, one message each. This member's own unit is sent
// from ownPiece(k) at step 0; `whileFirstStep` (returning a Status) runs while that step is
// in flight (copying the own unit into place overlaps the first transfer).
template <typename PieceOf, typename OwnPiece, typename Work>
Status ringAllGatherUnits(Transport& t, int tag, int pieces, PieceOf&& pieceOf, OwnPiece&& ownPiece,
                          Work&& whileFirstStep) {
  const int n = t.size();
  for (int step = 0; step < n - 1; ++step) {
    const int sendUnit = ringBlock(t.rank(), step, n);
    const int recvUnit = ringBlock(t.rank(), step + 1, n);
    Ticket ticket;
    for (int k = 0; k < pieces; ++k) {
      const auto [data, bytes] = pieceOf(recvUnit, k);
      ZCCL_CHECK(t.postRecv(data, bytes, ringPrev(t), tag, &ticket));
    }
    for (int k = 0; k < pieces; ++k) {
      const auto [data, bytes] = step == 0 ? ownPiece(k) : pieceOf(sendUnit, k);
      ZCCL_CHECK(t.postSend(data, bytes, ringNext(t), tag, &ticket));
    }
    if (step == 0) ZCCL_CHECK(whileFirstStep());
    ZCCL_CHECK(t.waitAll());
  }
  return n == 1 ? whileFirstStep() : Status::kSuccess;
}

// The same with this member's unit already in place.
template <typename PieceOf>
Status ringAllGatherUnits(Transport& t, int tag, int pieces, PieceOf&& pieceOf) {
  return ringAllGatherUnits(
      t, tag, pieces, pieceOf, [&](int k) { return pieceOf(t.rank(), k); },
      [] { return Status::kSuccess; });
}

}  // namespace zccl
