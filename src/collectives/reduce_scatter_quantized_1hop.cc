// Quantized reduce-scatter in one hop (ZeRO++ qgZ without hierarchy): each rank quantizes
// block j of its input for rank j and sends it straight there (an all-to-all of messages),
// then dequantizes the copies of its own block and sums them in float32, in rank order, its
// own contribution unquantized. Each contribution is quantized exactly once.
#include <cstring>

#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {

Status reduceScatterQuantized1Hop(Context& ctx, const void* send, void* recv,
                                  const Partition& blocks, DataType type, RedOp op,
                                  const QuantParams& params) {
  Transport& t = ctx.transport;
  const int n = t.size();
  const int me = t.rank();
  const size_t es = elementSize(type);
  const char* in = static_cast<const char*>(send);
  const size_t mine = blocks.size(me);
  const size_t mineBytes = messageBytes(mine, params);
  const BlockBytes outgoing = messageLayout(blocks, params);
  void* sendBuffer = nullptr;
  void* recvBuffer = nullptr;
  void* accBuffer = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchQuantizedSend, outgoing.total(), &sendBuffer));
  ZCCL_CHECK(ctx.scratch.get(kScratchQuantizedReceive, mineBytes * n, &recvBuffer));
  ZCCL_CHECK(ctx.scratch.get(kScratchAccumulate, mine * sizeof(float), &accBuffer));
  char* outbox = static_cast<char*>(sendBuffer);
  char* inbox = static_cast<char*>(recvBuffer);
  Ticket ticket;
  for (int peer = 0; peer < n; ++peer) {
    if (peer != me)
      ZCCL_CHECK(t.postRecv(inbox + peer * mineBytes, mineBytes, peer, kCollectiveTag, &ticket));
  }
  const QuantParams senderMine = senderParams(params, me, 1);
  for (int distance = 1; distance < n; ++distance) {
    const int peer = (me + distance) % n;  // each message leaves as soon as it is quantized
    if (blocks.size(peer) == 0) continue;
    char* message = outbox + outgoing.offset(peer);
    ZCCL_CHECK(quantize(in + blocks.offset(peer) * es, type, blocks.size(peer), senderMine, message,
                        outgoing.size(peer)));
    ZCCL_CHECK(t.postSend(message, outgoing.size(peer), peer, kCollectiveTag, &ticket));
  }
  ZCCL_CHECK(t.waitAll());
  float* acc = static_cast<float*>(accBuffer);
  std::memset(acc, 0, mine * sizeof(float));
  for (int peer = 0; peer < n && mine > 0; ++peer) {
    if (peer == me) {
      ZCCL_CHECK(accumulateAsFloat(in + blocks.offset(me) * es, type, mine, acc));
    } else {
      ZCCL_CHECK(dequantizeAccumulate(inbox + peer * mineBytes, mineBytes, acc, mine));
    }
  }
  return storeFloatAs(acc, mine, op == RedOp::kAvg ? n : 1, type, recv);
}

}  // namespace zccl
