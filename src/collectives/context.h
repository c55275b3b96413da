// What every algorithm runs on: a transport, the communicator's scratch pool, and how
// a buffer of elements is cut into one block per rank.
#pragma once

#include <cstddef>

#include "common/scratch.h"
#include "common/types.h"
#include "transport/transport.h"

namespace zccl {

// Tags keep collective traffic apart from the application's zcclSend/zcclRecv.
constexpr int kPointToPointTag = 0;
constexpr int kCollectiveTag = 1;

// Scratch slots, so that algorithms that nest (all-reduce = reduce-scatter + all-gather)
// never hand out the same memory twice.
enum ScratchSlot : size_t {
  kScratchStaging = 0,  // a copy of the input for in-place forms
  kScratchReceive = 1,
  kScratchAccumulate = 2,
};

struct Context {
  Transport& transport;
  ScratchPool& scratch;
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

inline int ringNext(const Transport& t) { return (t.rank() + 1) % t.size(); }
inline int ringPrev(const Transport& t) { return (t.rank() + t.size() - 1) % t.size(); }
// The block index `distance` places before `rank` on the ring.
inline int ringBlock(int rank, int distance, int size) {
  return ((rank - distance) % size + size) % size;
}

}  // namespace zccl
