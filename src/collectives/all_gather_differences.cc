// All-gather of weight differences (SDP4Bit's qWD): each rank quantizes only its block's change
// since the last gathered values, which every rank holds alike. Every rank decodes every
// block's message, its own too, and adds the same values to the same reference with the same
// arithmetic, so that the references stay equal to the bit on every rank however many calls
// follow; the error of a result is the quantization error of one change, not of the weights.
#include "collectives/collectives.h"

namespace zccl {

Status allGatherDifferences(Context& ctx, const CollectiveArgs& a, const CollectiveOptions& options,
                            GatherReference* reference) {
  const size_t total = a.blocks.count;
  const size_t es = elementSize(a.type);
  const int me = ctx.transport.rank();
  char* values = static_cast<char*>(reference->values);
  // A call the policy leaves unquantized (below its minBytes, say) gathers the values: their
  // float32 differences would only cost more.
  const bool exact = reference->calls == 0 || options.wire == WireFormat::kNone ||
                     (reference->resyncEvery > 0 &&
                      reference->calls % static_cast<uint64_t>(reference->resyncEvery) == 0);
  ++reference->calls;
  // In place the own block sits in recv: it is read before recv is written.
  const char* mine = a.send != nullptr
                         ? static_cast<const char*>(a.send)
                         : static_cast<const char*>(a.recv) + a.blocks.offset(me) * es;
  if (exact) {
    CollectiveOptions plain = options;
    plain.wire = WireFormat::kNone;
    plain.wireAllowedOnly = false;
    ZCCL_CHECK(runCollective(ctx, Collective::kAllGather,
                             CollectiveArgs{mine, values, a.blocks, a.type}, plain));
    return ctx.kernels.copy(a.recv, values, total * es);
  }
  void* difference = nullptr;
  void* gathered = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchDifference, a.blocks.largest() * sizeof(float), &difference));
  ZCCL_CHECK(ctx.scratch.get(kScratchGathered, total * sizeof(float), &gathered));
  auto* change = static_cast<float*>(difference);
  auto* changes = static_cast<float*>(gathered);
  const size_t count = a.blocks.size(me);
  ZCCL_CHECK(ctx.kernels.differenceAsFloat(mine, values + a.blocks.offset(me) * es, a.type, count,
                                           change));
  // The quantized paths decode each change straight onto the reference; a path that gathers
  // the float32 changes themselves leaves them in `changes`.
  GatherOnto onto{SumTarget{values, a.type, values, a.recv}};
  CollectiveArgs gather{change, changes, a.blocks, DataType::kFloat32};
  gather.onto = &onto;
  ZCCL_CHECK(runCollective(ctx, Collective::kAllGather, gather, options));
  if (onto.applied) return Status::kSuccess;
  return ctx.kernels.storeSumAs(values, a.type, total, changes, values, a.recv);
}

}  // namespace zccl
