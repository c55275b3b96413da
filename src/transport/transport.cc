#include "transport/transport.h"

#include <sched.h>

#include <ctime>

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

void pauseBetweenPolls(unsigned poll) {
  constexpr unsigned kYieldingPolls = 256;
  if (poll < kYieldingPolls) {
    sched_yield();
    return;
  }
  const timespec pause{0, 20000};
  nanosleep(&pause, nullptr);
}

}  // namespace zccl
