// Ring all-gather: n-1 steps; at step s each rank forwards the block it received at step
// s-1 (its own at s=0) to the next rank. Every block crosses each ring link once.
#include <algorithm>

#include "collectives/algorithms.h"

namespace zccl {

Status allGatherRing(Context& ctx, const void* send, void* recv, const BlockBytes& layout) {
  Transport& t = ctx.transport;
  char* out = static_cast<char*>(recv);
  const int me = t.rank();
  const auto blockOf = [&](int unit, int) {
    return Piece{out + layout.offset(unit), layout.size(unit)};
  };
  if (send == nullptr) return ringAllGatherUnits(t, ctx.tag, 1, blockOf);
  // Out of place: the first step sends straight from `send` while the own block is copied.
  return ringAllGatherUnits(
      t, ctx.tag, 1, blockOf,
      [&](int) {
        return Piece{static_cast<char*>(const_cast<void*>(send)), layout.size(me)};
      },
      [&] { return copyAlongside(ctx, t, out + layout.offset(me), send, layout.size(me)); });
}

Status copyAlongside(Context& ctx, Transport& t, void* to, const void* from, size_t bytes) {
  constexpr size_t kPiece = size_t{256} << 10;  // a tenth of a ms of copying
  auto* out = static_cast<char*>(to);
  const auto* in = static_cast<const char*>(from);
  for (size_t offset = 0; offset < bytes; offset += kPiece) {
    ZCCL_CHECK(ctx.kernels.copy(out + offset, in + offset, std::min(kPiece, bytes - offset)));
    t.progress();
  }
  return Status::kSuccess;
}

double allGatherRingCost(const CostTerms& t, Plan* /*plan*/) {
  const double n = t.c.ranks();
  return t.overlapped(t.ring(n - 1, t.wireBlock), t.quantize(1) + t.dequantize(n));
}

namespace {

Status run(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  return allGatherRing(ctx, a.send, a.recv, BlockBytes::elements(a.blocks, elementSize(a.type)));
}

}  // namespace

extern const AlgorithmRow kAllGatherRing =
    AlgorithmRow::of(Collective::kAllGather, Algorithm::kRing, run)
        .foldsInRankOrder()
        .costs(allGatherRingCost);

}  // namespace zccl
