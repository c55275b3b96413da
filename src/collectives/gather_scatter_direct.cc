// Direct gather and scatter: the root posts one receive (gather) or one send (scatter) per
// peer at once and every other rank one message of its own block, so the root's link is
// the only bottleneck and no block is forwarded twice. The root's own block is copied while
// the transfers run. Blocks follow a Partition (they may differ by one element, or be empty:
// an empty block sends no message).
#include "collectives/algorithms.h"

namespace zccl {

namespace {

enum class Direction { kToRoot, kFromRoot };

// Gather: `source` is this rank's block (nullptr at a root whose block already sits in
// place) and `target` the root's buffer of every block. Scatter: `source` is the root's
// buffer of every block and `target` this rank's block.
Status exchangeWithRoot(Context& ctx, const Partition& blocks, size_t elementBytes, int root,
                        Direction direction, const char* source, char* target) {
  Transport& t = ctx.transport;
  const int me = t.rank();
  const bool toRoot = direction == Direction::kToRoot;
  const auto bytesOf = [&](int rank) { return blocks.size(rank) * elementBytes; };
  const auto blockOffset = [&](int rank) { return blocks.offset(rank) * elementBytes; };
  Ticket ticket;
  if (me != root) {
    if (bytesOf(me) == 0) return Status::kSuccess;
    ZCCL_CHECK(toRoot ? t.postSend(source, bytesOf(me), root, ctx.tag, &ticket)
                      : t.postRecv(target, bytesOf(me), root, ctx.tag, &ticket));
    return t.waitAll();
  }
  for (int peer = 0; peer < t.size(); ++peer) {
    if (peer == me || bytesOf(peer) == 0) continue;
    ZCCL_CHECK(toRoot
                   ? t.postRecv(target + blockOffset(peer), bytesOf(peer), peer, ctx.tag, &ticket)
                   : t.postSend(source + blockOffset(peer), bytesOf(peer), peer, ctx.tag, &ticket));
  }
  const char* from = toRoot ? source : source + blockOffset(me);
  char* to = toRoot ? target + blockOffset(me) : target;
  if (from != nullptr) ZCCL_CHECK(copyAlongside(ctx, t, to, from, bytesOf(me)));
  return t.waitAll();
}

Status gatherDirectRow(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  return gatherDirect(ctx, a);
}

// `send` is read on the root only; recv gets this rank's block.
Status scatterDirect(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  return exchangeWithRoot(ctx, a.blocks, elementSize(a.type), a.root, Direction::kFromRoot,
                          static_cast<const char*>(a.send), static_cast<char*>(a.recv));
}

double gatherScatterDirectCost(const CostTerms& t, Plan* /*plan*/) { return t.direct(t.block); }

}  // namespace

Status gatherDirect(Context& ctx, const CollectiveArgs& a) {
  return exchangeWithRoot(ctx, a.blocks, elementSize(a.type), a.root, Direction::kToRoot,
                          static_cast<const char*>(a.send), static_cast<char*>(a.recv));
}

double gatherDirectCost(const CostTerms& t) { return gatherScatterDirectCost(t, nullptr); }

extern const AlgorithmRow kGatherDirect =
    AlgorithmRow::of(Collective::kGather, Algorithm::kDirect, gatherDirectRow)
        .foldsInRankOrder()
        .costs(gatherScatterDirectCost);
extern const AlgorithmRow kScatterDirect =
    AlgorithmRow::of(Collective::kScatter, Algorithm::kDirect, scatterDirect)
        .foldsInRankOrder()
        .costs(gatherScatterDirectCost);

}  // namespace zccl
