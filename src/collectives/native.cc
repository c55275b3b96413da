// The backend's own collectives behind zccl's conventions: NCCL-style in-place layouts
// (which MPI does not share) are staged through scratch, and kAvg is a sum then a division.
#include <cstring>

#include "collectives/algorithms.h"
#include "common/reduce.h"

namespace zccl {
namespace {

// A copy of `bytes` at `data` in the staging slot, for when MPI forbids aliasing.
Status stage(Context& ctx, const void* data, size_t bytes, const void** copy) {
  void* staging = nullptr;
  ZCCL_CHECK(ctx.scratch.get(kScratchStaging, bytes, &staging));
  if (bytes > 0) std::memcpy(staging, data, bytes);
  *copy = staging;
  return Status::kSuccess;
}

RedOp wireOp(RedOp op) { return op == RedOp::kAvg ? RedOp::kSum : op; }

}  // namespace

Status allGatherNative(Context& ctx, const void* send, void* recv, size_t count, DataType type) {
  const size_t bytes = count * elementSize(type);
  if (send == nullptr) {
    send = static_cast<char*>(recv) + static_cast<size_t>(ctx.transport.rank()) * bytes;
    ZCCL_CHECK(stage(ctx, send, bytes, &send));
  }
  return ctx.transport.nativeAllGather(send, recv, count, type);
}

Status reduceScatterNative(Context& ctx, const void* send, void* recv, size_t recvCount,
                           DataType type, RedOp op) {
  const size_t inBytes = recvCount * elementSize(type) * static_cast<size_t>(ctx.transport.size());
  const char* in = static_cast<const char*>(send);
  const char* out = static_cast<const char*>(recv);
  if (out >= in && out < in + inBytes) ZCCL_CHECK(stage(ctx, send, inBytes, &send));
  ZCCL_CHECK(ctx.transport.nativeReduceScatter(send, recv, recvCount, type, wireOp(op)));
  if (op == RedOp::kAvg) divideByCount(recv, recvCount, type, ctx.transport.size());
  return Status::kSuccess;
}

Status allReduceNative(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                       RedOp op) {
  ZCCL_CHECK(ctx.transport.nativeAllReduce(send, recv, count, type, wireOp(op)));
  if (op == RedOp::kAvg) divideByCount(recv, count, type, ctx.transport.size());
  return Status::kSuccess;
}

Status broadcastNative(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                       int root) {
  if (ctx.transport.rank() == root && send != recv && count > 0) {
    std::memcpy(recv, send, count * elementSize(type));
  }
  return ctx.transport.nativeBroadcast(recv, count, type, root);
}

Status allToAllNative(Context& ctx, const void* send, void* recv, size_t count, DataType type) {
  if (send == recv) {
    const size_t bytes = count * elementSize(type) * static_cast<size_t>(ctx.transport.size());
    ZCCL_CHECK(stage(ctx, send, bytes, &send));
  }
  return ctx.transport.nativeAllToAll(send, recv, count, type);
}

}  // namespace zccl
