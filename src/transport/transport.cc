#include "transport/transport.h"

namespace zccl {
namespace {

Status noNativeCollectives() {
  return fail(Status::kInvalidUsage,
              "this transport has no native collectives; zccl's algorithms run instead");
}

}  // namespace

Status Transport::nativeAllGather(const void*, void*, size_t, DataType) {
  return noNativeCollectives();
}
Status Transport::nativeReduceScatter(const void*, void*, size_t, DataType, RedOp) {
  return noNativeCollectives();
}
Status Transport::nativeAllReduce(const void*, void*, size_t, DataType, RedOp) {
  return noNativeCollectives();
}
Status Transport::nativeBroadcast(void*, size_t, DataType, int) { return noNativeCollectives(); }
Status Transport::nativeAllToAll(const void*, void*, size_t, DataType) {
  return noNativeCollectives();
}
Status Transport::nativeReduce(const void*, void*, size_t, DataType, RedOp, int) {
  return noNativeCollectives();
}
Status Transport::nativeGather(const void*, void*, size_t, DataType, int) {
  return noNativeCollectives();
}
Status Transport::nativeScatter(const void*, void*, size_t, DataType, int) {
  return noNativeCollectives();
}

}  // namespace zccl
