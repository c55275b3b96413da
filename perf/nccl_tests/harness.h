// The nccl-tests-style perf binaries (all_gather_perf, ...), one main each around a shared
// driver (harness.cc), launched by mpiexec or by zcclrun.
#pragma once

namespace zccl_perf {

enum class Collective {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kAllToAll,
  kBroadcast,
  kSendRecv,
  kReduce,
  kGather,
  kScatter,
};

// Runs the binary for `collective`; returns the process exit status (non-zero when a check
// failed or an argument was wrong).
int runPerf(int argc, char** argv, Collective collective);

}  // namespace zccl_perf
