// Quantized all-gather (ZeRO++ qwZ): each rank quantizes its block once, the messages
// (codes, scales and header in one buffer) travel over the flat or the two-level ring
// unchanged, and every rank dequantizes every block, its own too, so that all ranks hold
// identical values.
#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {
namespace {

Status allGatherQuantized(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  const Partition& blocks = a.blocks;
  const int me = ctx.transport.rank();
  const size_t es = elementSize(a.type);
  char* out = static_cast<char*>(a.recv);
  const BlockBytes wire = messageLayout(blocks, plan.quant);
  void* buffer = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchQuantizedReceive, wire.total(), &buffer));
  char* messages = static_cast<char*>(buffer);
  const void* mine = a.send != nullptr ? a.send : out + blocks.offset(me) * es;
  if (blocks.size(me) > 0) {
    ZCCL_CHECK(ctx.kernels.quantize(mine, a.type, blocks.size(me), senderParams(plan.quant, me, 0),
                                    messages + wire.offset(me), wire.size(me)));
  }
  ZCCL_CHECK(plan.algorithm == Algorithm::kTwoLevel
                 ? allGatherTwoLevel(ctx, nullptr, messages, wire)
                 : allGatherRing(ctx, nullptr, messages, wire));
  for (int r = 0; r < blocks.parts; ++r) {
    if (blocks.size(r) == 0) continue;
    ZCCL_CHECK(ctx.kernels.dequantize(messages + wire.offset(r), wire.size(r), plan.quant,
                                      out + blocks.offset(r) * es, a.type, blocks.size(r)));
  }
  return Status::kSuccess;
}

}  // namespace

extern const AlgorithmRow kAllGatherQuantizedRing{
    Collective::kAllGather, Algorithm::kRing, true, 1, kAnyMemory, true,
    allGatherQuantized,     allGatherRingCost};
extern const AlgorithmRow kAllGatherQuantizedTwoLevel{
    Collective::kAllGather, Algorithm::kTwoLevel, true, 2, kAnyMemory, true,
    allGatherQuantized,     allGatherTwoLevelCost};

}  // namespace zccl
