// Ring all-gather: n-1 steps; at step s each rank forwards the block it received at step
// s-1 (its own at s=0) to the next rank. Every block crosses each ring link once.
#include <cstring>

#include "collectives/algorithms.h"

namespace zccl {

Status allGatherRing(Context& ctx, const void* send, void* recv, const BlockBytes& layout) {
  Transport& t = ctx.transport;
  char* out = static_cast<char*>(recv);
  const int me = t.rank();
  const auto blockOf = [&](int unit, int) {
    return Piece{out + layout.offset(unit), layout.size(unit)};
  };
  if (send == nullptr) return ringAllGatherUnits(t, 1, blockOf);
  // Out of place: the first step sends straight from `send` while the own block is copied.
  return ringAllGatherUnits(
      t, 1, blockOf,
      [&](int) {
        return Piece{static_cast<char*>(const_cast<void*>(send)), layout.size(me)};
      },
      [&] {
        if (layout.size(me) > 0) std::memcpy(out + layout.offset(me), send, layout.size(me));
      });
}

}  // namespace zccl
