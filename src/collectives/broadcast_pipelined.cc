// Pipelined chain broadcast: root -> root+1 -> ... in segments, each rank forwarding a
// segment as soon as it has it, so that for large messages every link is busy at once and
// the time approaches bytes / bandwidth rather than (n-1) * bytes / bandwidth.
#include <algorithm>
#include <cmath>
#include <vector>

#include "collectives/algorithms.h"

namespace zccl {
namespace {

// Small enough to pipeline over a handful of ranks, large enough to amortise latency: the
// segment when no cost model chooses one.
constexpr size_t kDefaultSegment = size_t{512} << 10;

// `send` is read on root only; it may equal recv. Every rank must use the same segment.
Status broadcastPipelined(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  const size_t segment = plan.chunkBytes > 0 ? plan.chunkBytes : kDefaultSegment;
  const size_t bytes = a.blocks.count * elementSize(a.type);
  Transport& t = ctx.transport;
  const int n = t.size();
  const int position = (t.rank() - a.root + n) % n;
  const int next = position + 1 < n ? (t.rank() + 1) % n : -1;
  const int prev = position > 0 ? (t.rank() - 1 + n) % n : -1;
  char* out = static_cast<char*>(a.recv);
  const size_t segments = (bytes + segment - 1) / segment;
  const auto bytesOf = [&](size_t s) { return std::min(segment, bytes - s * segment); };

  Ticket ticket;
  if (prev < 0) {
    const char* source = static_cast<const char*>(a.send);
    for (size_t s = 0; next >= 0 && s < segments; ++s) {
      ZCCL_CHECK(t.postSend(source + s * segment, bytesOf(s), next, ctx.tag, &ticket));
    }
    ZCCL_CHECK(copyAlongside(ctx, t, out, a.send, bytes));
    return t.waitAll();
  }
  std::vector<Ticket> received(segments);
  for (size_t s = 0; s < segments; ++s) {
    ZCCL_CHECK(t.postRecv(out + s * segment, bytesOf(s), prev, ctx.tag, &received[s]));
  }
  for (size_t s = 0; next >= 0 && s < segments; ++s) {
    ZCCL_CHECK(t.wait(received[s]));
    ZCCL_CHECK(t.postSend(out + s * segment, bytesOf(s), next, ctx.tag, &ticket));
  }
  return t.waitAll();
}

// The chain's time is (n - 2 + bytes / s) * (latency + s / bandwidth), least at
// s = sqrt(bytes * latency * bandwidth / (n - 2)): a power of two in [64 KiB, 64 MiB].
size_t bestSegment(const CostTerms& t) {
  const LinkModel& link = t.flatLink();
  const double hops = std::max(1, t.c.ranks() - 2);
  const double best = std::sqrt(static_cast<double>(t.bytes) * link.loneMessageSeconds() *
                                link.bytesPerSecond / hops);
  size_t segment = size_t{64} << 10;
  while (segment < (size_t{64} << 20) && static_cast<double>(segment) * 1.5 < best) segment *= 2;
  return segment;
}

double broadcastPipelinedCost(const CostTerms& t, Plan* plan) {
  if (plan->chunkBytes == 0) plan->chunkBytes = bestSegment(t);
  const double bytes = static_cast<double>(t.bytes);
  const double segment = std::min(bytes, static_cast<double>(plan->chunkBytes));
  const double segments = std::max(1.0, bytes / segment);
  return (t.c.ranks() - 2 + segments) * CostTerms::step(t.flatLink(), segment);
}

}  // namespace

extern const AlgorithmRow kBroadcastPipelined =
    AlgorithmRow::of(Collective::kBroadcast, Algorithm::kPipelined, broadcastPipelined)
        .foldsInRankOrder()
        .costs(broadcastPipelinedCost);

}  // namespace zccl
