// One rank of a job in which the last rank is killed (SIGKILL) in the middle of a collective.
// Every survivor must get zcclRemoteError or zcclTimeout within ZCCL_TIMEOUT_S + 15 s, with a
// message that names the operation and the rank that stopped answering; zcclCommAbort must
// then return promptly and the process exit cleanly. Each survivor reports one line that
// peer_death_test.py checks:
//   survivor rank=R result=N call_s=S abort_s=A message=...
// The victim dies PEER_DEATH_KILL_MS (default 200) after entering its call; where the call
// ended before that (a fast host), it says so, and the test runs the case again with an earlier
// kill:
//   victim: the call ended before the kill
// A report goes to stdout and, with PEER_DEATH_REPORT_DIR, to a file of the rank's own there
// (rank-R): the launchers merge the ranks' stdout with UCX's warnings, which can cut a line.
//
//   peer_death OPERATION large|small blocking|request
// OPERATION: all-gather, qgz-reduce-scatter, two-level-all-reduce, broadcast, all-to-all,
// reduce, gather, scatter.
// Built for mpiexec (ZCCL_TEST_MPI) and for zcclrun.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef ZCCL_TEST_MPI
#include "zccl/zccl_mpi.h"
#else
#include "zccl/zccl.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One call of `operation` on buffers of `count` elements per rank, queued with a request and
// waited for where `queued`.
zcclResult_t callOnce(const std::string& operation, zcclComm_t comm, int ranks, size_t count,
                      bool queued, std::vector<float>* send, std::vector<float>* recv) {
  zcclRequest_t request = nullptr;
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.hierarchy = zcclHierarchyTwoLevel;
  if (queued) options.request = &request;
  float* in = send->data();
  float* out = recv->data();
  zcclResult_t result = zcclInvalidUsage;
  if (operation == "all-gather") {
    result = zcclAllGatherEx(in, out, count, zcclFloat32, comm, nullptr, &options);
  } else if (operation == "qgz-reduce-scatter") {
    options.wireFormat = zcclWireInt4;
    result = zcclReduceScatterEx(in, out, count, zcclFloat32, zcclSum, comm, nullptr, &options);
  } else if (operation == "two-level-all-reduce") {
    result = zcclAllReduceEx(in, out, count, zcclFloat32, zcclSum, comm, nullptr, &options);
  } else {
    options.hierarchy = ZCCL_CONFIG_UNDEF_INT;
    if (operation == "broadcast") {
      result = zcclBroadcastEx(in, out, count, zcclFloat32, 0, comm, nullptr, &options);
    } else if (operation == "all-to-all") {
      result = zcclAllToAllEx(in, out, count, zcclFloat32, comm, nullptr, &options);
    } else if (operation == "reduce") {
      result = zcclReduceEx(in, out, count, zcclFloat32, zcclSum, 0, comm, nullptr, &options);
    } else if (operation == "gather") {
      result = zcclGatherEx(in, out, count, zcclFloat32, 0, comm, nullptr, &options);
    } else if (operation == "scatter") {
      result = zcclScatterEx(in, out, count, zcclFloat32, 0, comm, nullptr, &options);
    }
  }
  (void)ranks;
  if (!queued || result != zcclSuccess) return result;
  return zcclWait(request);
}

// Large: one call of 32 MiB per rank, still running at the kill. Small: calls of 4 KiB, one
// after the other, until one fails.
zcclResult_t runOperation(const std::string& operation, const std::string& size, bool queued,
                          zcclComm_t comm, int ranks) {
  const bool large = size == "large";
  const size_t count = large ? size_t{8} << 20 : 1024;
  std::vector<float> send(count * static_cast<size_t>(ranks), 1.0f), recv(send.size());
  for (int call = 0;; ++call) {
    const zcclResult_t result = callOnce(operation, comm, ranks, count, queued, &send, &recv);
    if (large || result != zcclSuccess) return result;
  }
}

// Prints a report line, and writes it to the rank's file where PEER_DEATH_REPORT_DIR names a
// folder.
__attribute__((format(printf, 2, 3))) void report(int rank, const char* format, ...) {
  char line[4096];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof(line), format, args);
  va_end(args);
  std::printf("%s\n", line);
  std::fflush(stdout);
  const char* folder = std::getenv("PEER_DEATH_REPORT_DIR");
  if (folder == nullptr) return;
  const std::string path = std::string(folder) + "/rank-" + std::to_string(rank);
  if (FILE* file = std::fopen(path.c_str(), "w")) {
    std::fprintf(file, "%s\n", line);
    std::fclose(file);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: peer_death OPERATION large|small blocking|request\n");
    return 2;
  }
  const std::string operation = argv[1];
  const std::string size = argv[2];
  const bool queued = std::string(argv[3]) == "request";
  zcclComm_t comm = nullptr;
#ifdef ZCCL_TEST_MPI
  MPI_Init(&argc, &argv);
  const zcclResult_t created = zcclCommInitMPI(MPI_COMM_WORLD, nullptr, &comm);
#else
  const zcclResult_t created = zcclCommInitFromEnv(&comm, nullptr);
#endif
  if (created != zcclSuccess) {
    std::fprintf(stderr, "init: %s\n", zcclGetLastError(nullptr));
    return 1;
  }
  int rank = 0, ranks = 0;
  zcclCommUserRank(comm, &rank);
  zcclCommCount(comm, &ranks);
  if (rank == ranks - 1) {
    // The victim enters the collective and dies in it.
    const char* killMs = std::getenv("PEER_DEATH_KILL_MS");
    const std::chrono::milliseconds killAfter(killMs != nullptr ? std::atoi(killMs) : 200);
    std::thread killer([killAfter] {
      std::this_thread::sleep_for(killAfter);
      kill(getpid(), SIGKILL);
    });
    runOperation(operation, size, queued, comm, ranks);
    report(rank, "victim: the call ended before the kill");
    killer.join();
    return 0;  // not reached
  }
  const auto start = Clock::now();
  const zcclResult_t result = runOperation(operation, size, queued, comm, ranks);
  const double callSeconds = secondsSince(start);
  // A queued call's failure is the waiting thread's error.
  const std::string message = queued ? zcclGetLastError(nullptr) : zcclGetLastError(comm);
  const auto aborting = Clock::now();
  const zcclResult_t aborted = zcclCommAbort(comm);
  const double abortSeconds = secondsSince(aborting);
  report(rank, "survivor rank=%d result=%d call_s=%.2f abort_s=%.2f aborted=%d message=%s", rank,
         static_cast<int>(result), callSeconds, abortSeconds, static_cast<int>(aborted),
         message.c_str());
  // Exits cleanly without MPI_Finalize, which would wait for the dead rank.
  return 0;
}
