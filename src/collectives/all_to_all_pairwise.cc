// Pairwise all-to-all: at step s each rank sends to rank+s and receives from rank-s, so
// every step is a permutation and no rank is flooded by all peers at once.
#include "collectives/algorithms.h"

namespace zccl {
namespace {

// send == recv is allowed (staged through scratch).
Status allToAllPairwise(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  Transport& t = ctx.transport;
  const int n = t.size();
  const int me = t.rank();
  const size_t blockBytes = a.blocks.size(0) * elementSize(a.type);
  const size_t total = blockBytes * static_cast<size_t>(n);
  const char* in = static_cast<const char*>(a.send);
  char* out = static_cast<char*>(a.recv);
  if (a.send == a.recv && total > 0) {
    void* staging = nullptr;
    ZCCL_CHECK(ctx.scratch.get(kScratchStaging, total, &staging));
    ZCCL_CHECK(ctx.kernels.copy(staging, a.send, total));
    in = static_cast<const char*>(staging);
  }
  const size_t selfOffset = static_cast<size_t>(me) * blockBytes;
  ZCCL_CHECK(ctx.kernels.copy(out + selfOffset, in + selfOffset, blockBytes));
  for (int step = 1; step < n; ++step) {
    const int to = (me + step) % n;
    const int from = (me - step + n) % n;
    Ticket ticket;
    ZCCL_CHECK(t.postRecv(out + static_cast<size_t>(from) * blockBytes, blockBytes, from, ctx.tag,
                          &ticket));
    ZCCL_CHECK(
        t.postSend(in + static_cast<size_t>(to) * blockBytes, blockBytes, to, ctx.tag, &ticket));
    ZCCL_CHECK(t.waitAll());
  }
  return Status::kSuccess;
}

double allToAllPairwiseCost(const CostTerms& t, Plan* /*plan*/) { return t.direct(t.block); }

}  // namespace

extern const AlgorithmRow kAllToAllPairwise =
    AlgorithmRow::of(Collective::kAllToAll, Algorithm::kPairwise, allToAllPairwise)
        .foldsInRankOrder()
        .costs(allToAllPairwiseCost);

}  // namespace zccl
