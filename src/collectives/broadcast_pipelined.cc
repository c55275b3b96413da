// Pipelined chain broadcast: root -> root+1 -> ... in segments, each rank forwarding a
// segment as soon as it has it, so that for large messages every link is busy at once and
// the time approaches bytes / bandwidth rather than (n-1) * bytes / bandwidth.
#include <algorithm>
#include <cstring>
#include <vector>

#include "collectives/algorithms.h"

namespace zccl {

Status broadcastPipelined(Context& ctx, const void* send, void* recv, size_t bytes, int root,
                          size_t segmentBytes) {
  const size_t segment = segmentBytes > 0 ? segmentBytes : kDefaultBroadcastSegment;
  Transport& t = ctx.transport;
  const int n = t.size();
  const int position = (t.rank() - root + n) % n;
  const int next = position + 1 < n ? (t.rank() + 1) % n : -1;
  const int prev = position > 0 ? (t.rank() - 1 + n) % n : -1;
  char* out = static_cast<char*>(recv);
  const size_t segments = (bytes + segment - 1) / segment;
  const auto bytesOf = [&](size_t s) { return std::min(segment, bytes - s * segment); };

  Ticket ticket;
  if (prev < 0) {
    const char* source = static_cast<const char*>(send);
    for (size_t s = 0; next >= 0 && s < segments; ++s) {
      ZCCL_CHECK(t.postSend(source + s * segment, bytesOf(s), next, kCollectiveTag, &ticket));
    }
    if (send != recv && bytes > 0) std::memcpy(out, send, bytes);
    return t.waitAll();
  }
  std::vector<Ticket> received(segments);
  for (size_t s = 0; s < segments; ++s) {
    ZCCL_CHECK(t.postRecv(out + s * segment, bytesOf(s), prev, kCollectiveTag, &received[s]));
  }
  for (size_t s = 0; next >= 0 && s < segments; ++s) {
    ZCCL_CHECK(t.wait(received[s]));
    ZCCL_CHECK(t.postSend(out + s * segment, bytesOf(s), next, kCollectiveTag, &ticket));
  }
  return t.waitAll();
}

}  // namespace zccl
