// One rank of the job trace_test.py traces (ZCCL_TRACE, ZCCL_DEBUG=TRACE), under zcclrun:
// a blocking all-reduce, a queued all-gather waited for after some work of the caller's own,
// and a queued INT8 reduce-scatter. After each call it prints what the communicator's counts
// say the call sent, for the test to hold the trace to:
//   rank R call K inter-node BYTES intra-node BYTES
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "zccl/zccl.h"

namespace {

zcclComm_t comm = nullptr;
int rank = 0;

void check(zcclResult_t result, const char* what) {
  if (result == zcclSuccess) return;
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, zcclGetLastError(comm));
  std::exit(1);
}

zcclStats statsNow() {
  zcclStats stats;
  check(zcclCommGetStats(comm, &stats), "zcclCommGetStats");
  return stats;
}

void report(int call, const zcclStats& before) {
  const zcclStats after = statsNow();
  std::printf("rank %d call %d inter-node %llu intra-node %llu\n", rank, call,
              static_cast<unsigned long long>(after.bytesSent[zcclLinkInterNode] -
                                              before.bytesSent[zcclLinkInterNode]),
              static_cast<unsigned long long>(after.bytesSent[zcclLinkIntraNode] -
                                              before.bytesSent[zcclLinkIntraNode]));
  std::fflush(stdout);
}

// The caller's own work while a queued call runs: 20 ms of it, so that the trace shows the
// call running beside it.
void work() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

int main() {
  check(zcclCommInitFromEnv(&comm, nullptr), "zcclCommInitFromEnv");
  int ranks = 0;
  check(zcclCommUserRank(comm, &rank), "zcclCommUserRank");
  check(zcclCommCount(comm, &ranks), "zcclCommCount");
  const size_t n = static_cast<size_t>(ranks);

  std::vector<float> reduced(6000, 1.0f);
  zcclStats before = statsNow();
  check(zcclAllReduce(reduced.data(), reduced.data(), reduced.size(), zcclFloat32, zcclSum, comm,
                      nullptr),
        "zcclAllReduce");
  report(0, before);

  std::vector<float> mine(5000, static_cast<float>(rank)), all(5000 * n);
  zcclRequest_t request = nullptr;
  zcclCollOptions queued = ZCCL_COLL_OPTIONS_INITIALIZER;
  queued.request = &request;
  before = statsNow();
  check(zcclAllGatherEx(mine.data(), all.data(), mine.size(), zcclFloat32, comm, nullptr, &queued),
        "zcclAllGatherEx");
  work();
  check(zcclWait(request), "zcclWait (all-gather)");
  report(1, before);

  std::vector<uint16_t> gradients(4096 * n, 0x3f80);  // bfloat16 ones
  std::vector<uint16_t> shard(4096);
  queued.wireFormat = zcclWireInt8;
  before = statsNow();
  check(zcclReduceScatterEx(gradients.data(), shard.data(), shard.size(), zcclBfloat16, zcclSum,
                            comm, nullptr, &queued),
        "zcclReduceScatterEx");
  check(zcclWait(request), "zcclWait (reduce-scatter)");
  report(2, before);

  check(zcclCommDestroy(comm), "zcclCommDestroy");
  return 0;
}
