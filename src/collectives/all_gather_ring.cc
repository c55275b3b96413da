// Ring all-gather: n-1 steps; at step s each rank forwards the block it received at step
// s-1 (its own at s=0) to the next rank. Every block crosses each ring link once.
#include <cstring>

#include "collectives/algorithms.h"

namespace zccl {

Status allGatherRing(Context& ctx, const void* send, void* recv, const BlockBytes& layout) {
  Transport& t = ctx.transport;
  char* out = static_cast<char*>(recv);
  if (send != nullptr && layout.size(t.rank()) > 0) {
    std::memmove(out + layout.offset(t.rank()), send, layout.size(t.rank()));
  }
  return ringAllGatherUnits(t, 1, [&](int unit, int) {
    return Piece{out + layout.offset(unit), layout.size(unit)};
  });
}

}  // namespace zccl
