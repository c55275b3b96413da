// The entry points' argument checks (validate.h).
#include "core/validate.h"

#include <cstdint>
#include <limits>

#include "common/types.h"
#include "device/device_runtime.h"

namespace zccl {

Status checkType(zcclDataType_t type, const char* name) {
  if (static_cast<int>(type) < 0 || static_cast<int>(type) >= zcclNumTypes) {
    return fail(Status::kInvalidArgument, "%s=%d: not a zcclDataType_t (0..%d)", name,
                static_cast<int>(type), zcclNumTypes - 1);
  }
  return Status::kSuccess;
}

Status checkOp(zcclRedOp_t op) {
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= zcclNumOps) {
    return fail(Status::kInvalidArgument, "op=%d: not a zcclRedOp_t (0..%d)", static_cast<int>(op),
                zcclNumOps - 1);
  }
  return Status::kSuccess;
}

Status checkStream(zcclStream_t stream) {
  if (stream != nullptr && deviceRuntime() == nullptr) {
    return fail(Status::kInvalidArgument,
                "stream=%p: device memory needs a GPU, and this process sees none (or zccl was "
                "built without CUDA); host buffers take stream=NULL",
                stream);
  }
  return Status::kSuccess;
}

Status checkBuffer(const char* name, const void* buffer, const char* countName, size_t count) {
  if (buffer == nullptr && count > 0) {
    return fail(Status::kInvalidArgument, "%s=NULL with %s=%zu", name, countName, count);
  }
  return Status::kSuccess;
}

Status checkPeer(const char* name, int peer, int ranks) {
  if (peer < 0 || peer >= ranks) {
    return fail(Status::kInvalidArgument, "%s=%d: outside the communicator's ranks [0, %d)", name,
                peer, ranks);
  }
  return Status::kSuccess;
}

Status checkBytes(const char* name, size_t count, size_t multiplier, zcclDataType_t type,
                  size_t* bytes) {
  const size_t es = elementSize(static_cast<DataType>(type));
  const size_t limit = std::numeric_limits<size_t>::max();
  if (count > 0 && (multiplier > limit / count || count * multiplier > limit / es ||
                    count * multiplier * es > static_cast<size_t>(PTRDIFF_MAX))) {
    return fail(Status::kInvalidArgument,
                "%s=%zu: %zu x %zu elements of %zu bytes overflow the address space", name, count,
                count, multiplier, es);
  }
  *bytes = count * multiplier * es;
  return Status::kSuccess;
}

Status checkInPlace(const char* operation, const void* send, size_t sendBytes, const void* recv,
                    size_t recvBytes, ptrdiff_t inPlaceOffset, bool* inPlace) {
  const auto s = reinterpret_cast<uintptr_t>(send);
  const auto r = reinterpret_cast<uintptr_t>(recv);
  *inPlace = sendBytes > 0 && s == r + static_cast<uintptr_t>(inPlaceOffset);
  const bool overlap = sendBytes > 0 && recvBytes > 0 && s < r + recvBytes && r < s + sendBytes;
  if (overlap && !*inPlace) {
    return fail(Status::kInvalidArgument,
                "%s: sendbuff=%p (%zu bytes) overlaps recvbuff=%p (%zu bytes) but is not the "
                "in-place layout sendbuff == recvbuff + (%td bytes)",
                operation, send, sendBytes, recv, recvBytes, inPlaceOffset);
  }
  return Status::kSuccess;
}

Status checkBufferMemory(const char* name, const void* buffer, void* stream) {
  DeviceRuntime* runtime = deviceRuntime();
  // Without a runtime every buffer is host memory, and a stream was refused by checkStream.
  if (buffer == nullptr || runtime == nullptr) return Status::kSuccess;
  PointerInfo info;
  ZCCL_CHECK(runtime->classify(buffer, &info));
  if (stream == nullptr) {
    if (info.kind == MemoryKind::kHost) return Status::kSuccess;
    return fail(Status::kInvalidArgument,
                "%s=%p is device memory but stream=NULL: pass the stream the collective runs on "
                "(NULL means host memory)",
                name, buffer);
  }
  if (info.kind == MemoryKind::kHost) {
    return fail(Status::kInvalidArgument,
                "%s=%p is host memory but stream=%p was given: host buffers take stream=NULL", name,
                buffer, stream);
  }
  int current = -1;
  ZCCL_CHECK(runtime->currentDevice(&current));
  if (info.device != current) {
    return fail(Status::kInvalidArgument, "%s=%p is on device %d, but the current device is %d",
                name, buffer, info.device, current);
  }
  return Status::kSuccess;
}

Status checkHeader(const char* owner, unsigned magic, size_t size, unsigned wantMagic,
                   size_t wantSize, const char* initializer) {
  if (magic != wantMagic || size != wantSize) {
    return fail(Status::kInvalidArgument,
                "%s: magic=0x%x size=%zu, expected 0x%x and %zu; initialise it with %s", owner,
                magic, size, wantMagic, wantSize, initializer);
  }
  return Status::kSuccess;
}

}  // namespace zccl
