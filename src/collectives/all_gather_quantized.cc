// Quantized all-gather (ZeRO++ qwZ): each rank quantizes its block once, the messages
// (codes, scales and header in one buffer) travel over the flat or the two-level ring
// unchanged, and every rank dequantizes every block, its own too, so that all ranks hold
// identical values.
#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {

Status allGatherQuantized(Context& ctx, const void* send, void* recv, const Partition& blocks,
                          DataType type, const QuantParams& params, bool twoLevel) {
  const int me = ctx.transport.rank();
  const size_t es = elementSize(type);
  char* out = static_cast<char*>(recv);
  const BlockBytes wire = messageLayout(blocks, params);
  void* buffer = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchQuantizedReceive, wire.total(), &buffer));
  char* messages = static_cast<char*>(buffer);
  const void* mine = send != nullptr ? send : out + blocks.offset(me) * es;
  if (blocks.size(me) > 0) {
    ZCCL_CHECK(quantize(mine, type, blocks.size(me), senderParams(params, me, 0),
                        messages + wire.offset(me), wire.size(me)));
  }
  ZCCL_CHECK(twoLevel ? allGatherTwoLevel(ctx, nullptr, messages, wire)
                      : allGatherRing(ctx, nullptr, messages, wire));
  for (int r = 0; r < blocks.parts; ++r) {
    if (blocks.size(r) == 0) continue;
    ZCCL_CHECK(dequantize(messages + wire.offset(r), wire.size(r), out + blocks.offset(r) * es,
                          type, blocks.size(r)));
  }
  return Status::kSuccess;
}

}  // namespace zccl
