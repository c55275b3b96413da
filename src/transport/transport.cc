#include "transport/transport.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

namespace zccl {
namespace {

std::atomic<bool> ranksOutnumberCpus{false};

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

void noteRanksOnThisMachine(int ranks) {
  // Online CPUs, not this process's affinity mask: a launcher that binds each rank to a core of
  // its own leaves every rank a mask of one CPU without any core being shared.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 0 && ranks > cpus) ranksOutnumberCpus.store(true, std::memory_order_relaxed);
}

void pauseBetweenPolls(unsigned poll) {
  constexpr unsigned kYieldingPolls = 256;
  if (!ranksOutnumberCpus.load(std::memory_order_relaxed) || poll < kYieldingPolls) {
    sched_yield();
    return;
  }
  const timespec pause{0, 20000};
  nanosleep(&pause, nullptr);
}

}  // namespace zccl
