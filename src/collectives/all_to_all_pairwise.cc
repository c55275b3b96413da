// Pairwise all-to-all: at step s each rank sends to rank+s and receives from rank-s, so
// every step is a permutation and no rank is flooded by all peers at once.
#include <cstring>

#include "collectives/algorithms.h"

namespace zccl {

Status allToAllPairwise(Context& ctx, const void* send, void* recv, size_t blockBytes) {
  Transport& t = ctx.transport;
  const int n = t.size();
  const int me = t.rank();
  const size_t total = blockBytes * static_cast<size_t>(n);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  if (send == recv && total > 0) {
    void* staging = nullptr;
    ZCCL_CHECK(ctx.scratch.get(kScratchStaging, total, &staging));
    std::memcpy(staging, send, total);
    in = static_cast<const char*>(staging);
  }
  const size_t selfOffset = static_cast<size_t>(me) * blockBytes;
  if (blockBytes > 0) std::memcpy(out + selfOffset, in + selfOffset, blockBytes);
  for (int step = 1; step < n; ++step) {
    const int to = (me + step) % n;
    const int from = (me - step + n) % n;
    Ticket ticket;
    ZCCL_CHECK(t.postRecv(out + static_cast<size_t>(from) * blockBytes, blockBytes, from,
                          kCollectiveTag, &ticket));
    ZCCL_CHECK(t.postSend(in + static_cast<size_t>(to) * blockBytes, blockBytes, to, kCollectiveTag,
                          &ticket));
    ZCCL_CHECK(t.waitAll());
  }
  return Status::kSuccess;
}

}  // namespace zccl
