// The backend's own collectives (MPI_Allgather, ...) behind zccl's conventions: NCCL-style
// in-place layouts (which MPI does not share) are staged through scratch, and kAvg is a sum
// then a division. Their peers are hidden inside the engine, so their traffic is charged to
// the native counters at the volume a bandwidth-optimal algorithm sends.
#include "collectives/algorithms.h"
#include "transport/engine_collectives.h"

namespace zccl {
namespace {

// A copy of `bytes` at `data` in the staging slot, for when MPI forbids aliasing.
Status stage(Context& ctx, const void* data, size_t bytes, const void** copy) {
  void* staging = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchStaging, bytes, &staging));
  ZCCL_CHECK(ctx.kernels.copy(staging, data, bytes));
  *copy = staging;
  return Status::kSuccess;
}

// Callers check that the transport has them (collectives.cc).
EngineCollectives& engine(Context& ctx) { return *ctx.transport.engineCollectives(); }

RedOp wireOp(RedOp op) { return op == RedOp::kAvg ? RedOp::kSum : op; }

void charge(Context& ctx, size_t bytes) {
  ctx.native.calls += 1;
  ctx.native.bytesEstimated += bytes;
}

Status allGatherNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t count = a.blocks.size(0);
  const size_t bytes = count * elementSize(a.type);
  charge(ctx, bytes * static_cast<size_t>(ctx.transport.size() - 1));  // own block to each peer
  const void* send = a.send;
  if (send == nullptr) {
    send = static_cast<char*>(a.recv) + static_cast<size_t>(ctx.transport.rank()) * bytes;
    ZCCL_CHECK(stage(ctx, send, bytes, &send));
  }
  return engine(ctx).allGather(send, a.recv, count, a.type);
}

Status reduceScatterNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t recvCount = a.blocks.size(0);
  const size_t inBytes = a.blocks.count * elementSize(a.type);
  const size_t n = static_cast<size_t>(ctx.transport.size());
  charge(ctx, inBytes / n * (n - 1));  // the input but the own block
  const void* send = a.send;
  const char* in = static_cast<const char*>(send);
  const char* out = static_cast<const char*>(a.recv);
  if (out >= in && out < in + inBytes) ZCCL_CHECK(stage(ctx, send, inBytes, &send));
  ZCCL_CHECK(engine(ctx).reduceScatter(send, a.recv, recvCount, a.type, wireOp(a.op)));
  if (a.op == RedOp::kAvg) {
    ZCCL_CHECK(ctx.kernels.divideByCount(a.recv, recvCount, a.type, ctx.transport.size()));
  }
  return Status::kSuccess;
}

Status allReduceNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t count = a.blocks.count;
  const size_t n = static_cast<size_t>(ctx.transport.size());
  charge(ctx, 2 * (count * elementSize(a.type) / n) * (n - 1));  // reduce-scatter + all-gather
  ZCCL_CHECK(engine(ctx).allReduce(a.send, a.recv, count, a.type, wireOp(a.op)));
  if (a.op == RedOp::kAvg) {
    ZCCL_CHECK(ctx.kernels.divideByCount(a.recv, count, a.type, ctx.transport.size()));
  }
  return Status::kSuccess;
}

Status broadcastNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t count = a.blocks.count;
  const size_t bytes = count * elementSize(a.type);
  const int ranks = ctx.transport.size();
  // A chain from root: all but the last rank forward once.
  charge(ctx, (ctx.transport.rank() - a.root + ranks) % ranks < ranks - 1 ? bytes : 0);
  if (ctx.transport.rank() == a.root && a.send != a.recv && count > 0) {
    ZCCL_CHECK(ctx.kernels.copy(a.recv, a.send, bytes));
  }
  return engine(ctx).broadcast(a.recv, count, a.type, a.root);
}

Status allToAllNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t bytes = a.blocks.count * elementSize(a.type);
  const size_t n = static_cast<size_t>(ctx.transport.size());
  charge(ctx, bytes / n * (n - 1));
  const void* send = a.send;
  if (send == a.recv) ZCCL_CHECK(stage(ctx, send, bytes, &send));
  return engine(ctx).allToAll(send, a.recv, a.blocks.size(0), a.type);
}

// A ring reduce's volume: the reduce-scatter's, then one block to the root.
Status reduceNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const int me = ctx.transport.rank();
  const size_t es = elementSize(a.type);
  const size_t n = static_cast<size_t>(ctx.transport.size());
  charge(ctx, a.blocks.count * es / n * (n - 1) + (me == a.root ? 0 : a.blocks.size(me) * es));
  ZCCL_CHECK(engine(ctx).reduce(a.send, a.recv, a.blocks.count, a.type, wireOp(a.op), a.root));
  if (a.op == RedOp::kAvg && me == a.root) {
    ZCCL_CHECK(ctx.kernels.divideByCount(a.recv, a.blocks.count, a.type, ctx.transport.size()));
  }
  return Status::kSuccess;
}

// Every rank but the root sends its block; the root's own block stays (send == nullptr: in
// place, which MPI spells MPI_IN_PLACE).
Status gatherNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t block = a.blocks.size(0);
  const bool root = ctx.transport.rank() == a.root;
  charge(ctx, root ? 0 : block * elementSize(a.type));
  return engine(ctx).gather(a.send, a.recv, block, a.type, a.root);
}

Status scatterNative(Context& ctx, const CollectiveArgs& a, const Plan& /*plan*/) {
  const size_t block = a.blocks.size(0);
  const size_t es = elementSize(a.type);
  const int me = ctx.transport.rank();
  const bool root = me == a.root;
  charge(ctx, root ? block * es * static_cast<size_t>(ctx.transport.size() - 1) : 0);
  const bool inPlace =
      root && static_cast<const char*>(a.send) + static_cast<size_t>(me) * block * es == a.recv;
  return engine(ctx).scatter(a.send, inPlace ? nullptr : a.recv, block, a.type, a.root);
}

constexpr AlgorithmRow nativeRow(Collective collective, RunAlgorithm run) {
  return AlgorithmRow::of(collective, Algorithm::kNative, run);
}

}  // namespace

extern const AlgorithmRow kAllGatherNative = nativeRow(Collective::kAllGather, allGatherNative);
extern const AlgorithmRow kReduceScatterNative =
    nativeRow(Collective::kReduceScatter, reduceScatterNative);
extern const AlgorithmRow kAllReduceNative = nativeRow(Collective::kAllReduce, allReduceNative);
extern const AlgorithmRow kBroadcastNative = nativeRow(Collective::kBroadcast, broadcastNative);
extern const AlgorithmRow kAllToAllNative = nativeRow(Collective::kAllToAll, allToAllNative);
extern const AlgorithmRow kReduceNative = nativeRow(Collective::kReduce, reduceNative);
extern const AlgorithmRow kGatherNative = nativeRow(Collective::kGather, gatherNative);
extern const AlgorithmRow kScatterNative = nativeRow(Collective::kScatter, scatterNative);

}  // namespace zccl
