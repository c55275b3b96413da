// One rank of a job in which the last rank is killed (SIGKILL) in the middle of a collective.
// Every survivor must get zcclRemoteError or zcclTimeout within ZCCL_TIMEOUT_S + 5 s, with a
// message that names the operation and the rank that stopped answering; zcclCommAbort must
// then return promptly and the process exit cleanly. Each survivor prints one line that
// peer_death_test.py checks:
//   survivor rank=R result=N call_s=S abort_s=A message=...
//
//   peer_death all-gather|qgz-reduce-scatter|two-level-all-reduce
// Built for mpiexec (ZCCL_TEST_MPI) and for zcclrun.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
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

zcclResult_t runOperation(const std::string& operation, zcclComm_t comm, int ranks) {
  const size_t count = size_t{8} << 20;  // 32 MiB of float32 per rank: still running at the kill
  std::vector<float> send(count * static_cast<size_t>(ranks), 1.0f), recv(send.size());
  if (operation == "all-gather") {
    return zcclAllGather(send.data(), recv.data(), count, zcclFloat32, comm, nullptr);
  }
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.hierarchy = zcclHierarchyTwoLevel;
  if (operation == "qgz-reduce-scatter") {
    options.wireFormat = zcclWireInt4;
    return zcclReduceScatterEx(send.data(), recv.data(), count, zcclFloat32, zcclSum, comm, nullptr,
                               &options);
  }
  return zcclAllReduceEx(send.data(), recv.data(), count, zcclFloat32, zcclSum, comm, nullptr,
                         &options);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: peer_death all-gather|qgz-reduce-scatter|two-level-all-reduce\n");
    return 2;
  }
  const std::string operation = argv[1];
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
    std::thread killer([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      kill(getpid(), SIGKILL);
    });
    runOperation(operation, comm, ranks);
    killer.join();
    return 0;  // not reached
  }
  const auto start = Clock::now();
  const zcclResult_t result = runOperation(operation, comm, ranks);
  const double callSeconds = secondsSince(start);
  const std::string message = zcclGetLastError(comm);
  const auto aborting = Clock::now();
  const zcclResult_t aborted = zcclCommAbort(comm);
  const double abortSeconds = secondsSince(aborting);
  std::printf("survivor rank=%d result=%d call_s=%.2f abort_s=%.2f aborted=%d message=%s\n", rank,
              static_cast<int>(result), callSeconds, abortSeconds, static_cast<int>(aborted),
              message.c_str());
  std::fflush(stdout);
  // Exits cleanly without MPI_Finalize, which would wait for the dead rank.
  return 0;
}
