// Quantized reduce-scatter in one hop (ZeRO++ qgZ without hierarchy): each rank quantizes
// block j of its input for rank j and sends it straight there (an all-to-all of messages),
// then dequantizes the copies of its own block and sums them in float32: its own contribution
// (unquantized) first, then the others in the order they arrive, each as soon as it is in.
// Each contribution is quantized exactly once.
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {
namespace {

Status reduceScatterQuantized1Hop(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  Transport& t = ctx.transport;
  const Partition& blocks = a.blocks;
  const DataType type = a.type;
  const QuantParams& params = plan.quant;
  const int n = t.size();
  const int me = t.rank();
  const size_t es = elementSize(type);
  const char* in = static_cast<const char*>(a.send);
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
  // Receives in the order the messages come (peer me - 1 sends to me first), each summed as
  // soon as it is in while the later ones travel.
  std::vector<Ticket> arrivals(static_cast<size_t>(n));
  const auto sender = [&](int distance) { return (me - distance + n) % n; };
  for (int distance = 1; distance < n && mine > 0; ++distance) {
    ZCCL_CHECK(t.postRecv(inbox + sender(distance) * mineBytes, mineBytes, sender(distance),
                          ctx.tag, &arrivals[distance]));
  }
  const QuantParams senderMine = senderParams(params, me, 1);
  Ticket ticket;
  for (int distance = 1; distance < n; ++distance) {
    const int peer = (me + distance) % n;  // each message leaves as soon as it is quantized
    if (blocks.size(peer) == 0) continue;
    char* message = outbox + outgoing.offset(peer);
    ZCCL_CHECK(ctx.kernels.quantize(in + blocks.offset(peer) * es, type, blocks.size(peer),
                                    senderMine, message, outgoing.size(peer)));
    ZCCL_CHECK(t.postSend(message, outgoing.size(peer), peer, ctx.tag, &ticket));
  }
  float* acc = static_cast<float*>(accBuffer);
  if (mine > 0)
    ZCCL_CHECK(ctx.kernels.convertToFloat(in + blocks.offset(me) * es, type, mine, acc));
  for (int distance = 1; distance < n && mine > 0; ++distance) {
    ZCCL_CHECK(t.wait(arrivals[distance]));
    ZCCL_CHECK(ctx.kernels.dequantizeAccumulate(inbox + sender(distance) * mineBytes, mineBytes,
                                                params, acc, mine));
  }
  ZCCL_CHECK(t.waitAll());
  return ctx.kernels.storeFloatAs(acc, mine, a.op == RedOp::kAvg ? n : 1, type, a.recv);
}

}  // namespace

extern const AlgorithmRow kReduceScatterQuantized1Hop{
    Collective::kReduceScatter, Algorithm::kDirect,     true, 1, kAnyMemory, true,
    reduceScatterQuantized1Hop, reduceScatterDirectCost};

}  // namespace zccl
