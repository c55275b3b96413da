// The common driver of the nccl-tests-style perf binaries (all_gather_perf, ...): nccl-tests'
// flags and output format, zccl's wire format and hierarchy flags, the backend's native
// collective timed side by side (-B), result checks against exact values or the analytic
// error bound of quantized paths, and a JSON copy of the results (-J).
#pragma once

namespace zccl_perf {

enum class Collective { kAllGather, kReduceScatter, kAllReduce, kAllToAll, kBroadcast, kSendRecv };

// Runs the binary for `collective` under mpiexec; returns the process exit status (non-zero
// when a check failed or an argument was wrong).
int runPerf(int argc, char** argv, Collective collective);

}  // namespace zccl_perf
