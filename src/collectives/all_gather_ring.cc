// Ring all-gather: n-1 steps; at step s each rank forwards the block it received at step
// s-1 (its own at s=0) to the next rank. Every block crosses each ring link once.
#include <cstring>

#include "collectives/algorithms.h"

namespace zccl {

Status allGatherRing(Context& ctx, const void* send, void* recv, const Partition& blocks,
                     size_t elementSize) {
  Transport& t = ctx.transport;
  const int n = t.size();
  char* out = static_cast<char*>(recv);
  const auto blockPtr = [&](int block) { return out + blocks.offset(block) * elementSize; };
  const auto blockBytes = [&](int block) { return blocks.size(block) * elementSize; };
  if (send != nullptr && blockBytes(t.rank()) > 0) {
    std::memmove(blockPtr(t.rank()), send, blockBytes(t.rank()));
  }
  for (int step = 0; step < n - 1; ++step) {
    const int sendBlock = ringBlock(t.rank(), step, n);
    const int recvBlock = ringBlock(t.rank(), step + 1, n);
    Ticket ticket;
    ZCCL_CHECK(t.postRecv(blockPtr(recvBlock), blockBytes(recvBlock), ringPrev(t), kCollectiveTag,
                          &ticket));
    ZCCL_CHECK(t.postSend(blockPtr(sendBlock), blockBytes(sendBlock), ringNext(t), kCollectiveTag,
                          &ticket));
    ZCCL_CHECK(t.waitAll());
  }
  return Status::kSuccess;
}

}  // namespace zccl
