// Direct reduce-scatter: every rank sends block j of its input straight to rank j and
// reduces the n copies of its own block in rank order. The bytes each rank sends equal the
// ring's, but the result rounds once and does not depend on where the ring starts.
#include "collectives/algorithms.h"
#include "common/reduce.h"

namespace zccl {

Status reduceScatterDirect(Context& ctx, const void* send, void* recv, const Partition& blocks,
                           DataType type, RedOp op) {
  Transport& t = ctx.transport;
  const int n = t.size();
  const int me = t.rank();
  const size_t es = elementSize(type);
  const char* in = static_cast<const char*>(send);
  const size_t mine = blocks.size(me);
  const size_t mineBytes = mine * es;

  void* received = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchReceive, mineBytes * static_cast<size_t>(n), &received));
  const void** inputs = nullptr;
  ZCCL_CHECK(scratchInputs(ctx.scratch, n, &inputs));
  Ticket ticket;
  for (int peer = 0; peer < n; ++peer) {
    char* slot = static_cast<char*>(received) + static_cast<size_t>(peer) * mineBytes;
    inputs[peer] = peer == me ? in + blocks.offset(me) * es : slot;
    if (peer != me) ZCCL_CHECK(t.postRecv(slot, mineBytes, peer, kCollectiveTag, &ticket));
  }
  for (int distance = 1; distance < n; ++distance) {
    const int peer = (me + distance) % n;  // staggered so that no rank is everyone's first
    ZCCL_CHECK(t.postSend(in + blocks.offset(peer) * es, blocks.size(peer) * es, peer,
                          kCollectiveTag, &ticket));
  }
  ZCCL_CHECK(t.waitAll());
  reduceOrdered(recv, inputs, n, mine, type, op);
  return Status::kSuccess;
}

}  // namespace zccl
