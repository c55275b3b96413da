// Direct reduce-scatter: every rank sends block j of its input straight to rank j and
// reduces the n copies of its own block in rank order, accumulating in float32 for half
// precision and rounding once. The bytes each rank sends equal the ring's, but the result
// does not depend on where the ring starts.
#include <vector>

#include "collectives/algorithms.h"

namespace zccl {
namespace {

Status reduceScatterDirect(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  Transport& t = ctx.transport;
  const Partition& blocks = a.blocks;
  const int n = t.size();
  const int me = t.rank();
  const size_t es = elementSize(a.type);
  const char* in = static_cast<const char*>(a.send);
  const size_t mine = blocks.size(me);
  const size_t mineBytes = mine * es;

  void* received = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchReceive, mineBytes * static_cast<size_t>(n), &received));
  std::vector<const void*> inputs(static_cast<size_t>(n));
  Ticket ticket;
  for (int peer = 0; peer < n; ++peer) {
    char* slot = static_cast<char*>(received) + static_cast<size_t>(peer) * mineBytes;
    inputs[peer] = peer == me ? in + blocks.offset(me) * es : slot;
    if (peer != me) ZCCL_CHECK(t.postRecv(slot, mineBytes, peer, ctx.tag, &ticket));
  }
  for (int distance = 1; distance < n; ++distance) {
    const int peer = (me + distance) % n;  // staggered so that no rank is everyone's first
    ZCCL_CHECK(
        t.postSend(in + blocks.offset(peer) * es, blocks.size(peer) * es, peer, ctx.tag, &ticket));
  }
  ZCCL_CHECK(t.waitAll());
  ZCCL_CHECK(ctx.kernels.reduceOrdered(a.recv, inputs.data(), n, mine, a.type, a.op));
  return Status::kSuccess;
}

}  // namespace

double reduceScatterDirectCost(const CostTerms& t, Plan* /*plan*/) {
  const double n = t.c.ranks();
  return t.overlapped(t.direct(t.wireBlock), t.quantize(n - 1) + t.dequantize(n - 1) +
                                                 (t.quantized ? 0 : t.reduce(n - 1)));
}

extern const AlgorithmRow kReduceScatterDirect =
    AlgorithmRow::of(Collective::kReduceScatter, Algorithm::kDirect, reduceScatterDirect)
        .foldsInRankOrder()
        .costs(reduceScatterDirectCost);

}  // namespace zccl
