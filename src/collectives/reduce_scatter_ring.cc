// Ring reduce-scatter: at step s each rank sends its partial result for block
// (rank - s - 1) to the next rank and folds its own input into the partial it receives for
// block (rank - s - 2); after n-1 steps the partial for its own block is complete.
// Half-precision partial sums are rounded at every hop.
#include <utility>

#include "collectives/algorithms.h"

namespace zccl {
namespace {

Status reduceScatterRing(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  Transport& t = ctx.transport;
  const Partition& blocks = a.blocks;
  const int n = t.size();
  const size_t es = elementSize(a.type);
  const char* in = static_cast<const char*>(a.send);
  const auto inputBlock = [&](int block) { return in + blocks.offset(block) * es; };
  const size_t maxBytes = blocks.largest() * es;

  void* incoming = nullptr;
  void* partial = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchReceive, maxBytes, &incoming));
  ZCCL_CHECK(ctx.scratch.get(kScratchAccumulate, maxBytes, &partial));

  const void* outgoing = inputBlock(ringBlock(t.rank(), 1, n));  // step 0 sends raw input
  for (int step = 0; step < n - 1; ++step) {
    const int sendBlock = ringBlock(t.rank(), step + 1, n);
    const int recvBlock = ringBlock(t.rank(), step + 2, n);
    Ticket ticket;
    ZCCL_CHECK(t.postRecv(incoming, blocks.size(recvBlock) * es, ringPrev(t), ctx.tag, &ticket));
    ZCCL_CHECK(t.postSend(outgoing, blocks.size(sendBlock) * es, ringNext(t), ctx.tag, &ticket));
    ZCCL_CHECK(t.waitAll());
    ZCCL_CHECK(ctx.kernels.reduceInto(incoming, inputBlock(recvBlock), blocks.size(recvBlock),
                                      a.type, a.op));
    std::swap(incoming, partial);
    outgoing = partial;
  }
  const size_t mine = blocks.size(t.rank());
  if (n == 1) {
    ZCCL_CHECK(ctx.kernels.copy(a.recv, inputBlock(0), mine * es));
  } else {
    ZCCL_CHECK(ctx.kernels.copy(a.recv, partial, mine * es));
  }
  if (a.op == RedOp::kAvg) ZCCL_CHECK(ctx.kernels.divideByCount(a.recv, mine, a.type, n));
  return Status::kSuccess;
}

double reduceScatterRingCost(const CostTerms& t, Plan* /*plan*/) {
  return t.ring(t.c.ranks() - 1, t.block, t.reduce(1));
}

}  // namespace

extern const AlgorithmRow kReduceScatterRing =
    AlgorithmRow::of(Collective::kReduceScatter, Algorithm::kRing, reduceScatterRing)
        .roundsAtEveryHop()
        .costs(reduceScatterRingCost);

}  // namespace zccl
