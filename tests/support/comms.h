// The job a multi-rank test runs in, whichever way it was launched: under mpiexec (MPI
// transport, support/mpi_world.cc) or under zcclrun (UCX, support/env_world.cc). Tests use
// only these and the public API, so that the same assertions run on both transports.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>

#include "zccl/zccl.h"

namespace zccl_test {

struct NamedComm {
  const char* name;
  zcclComm_t comm;
};

int worldRank();
int worldSize();
void barrier();
// values[i] summed over ranks, on every rank.
void sumOverRanks(double* values, int count);
void broadcastBytes(void* data, size_t bytes, int root);
// A communicator over every rank of the job, as the launch makes one:
// zcclCommInitMPI(MPI_COMM_WORLD) under mpiexec, zcclCommInitFromEnv under zcclrun.
zcclResult_t initWorldComm(const zcclConfig* config, zcclComm_t* comm);

inline zcclComm_t makeComm(int algorithm, int ranksPerNode = ZCCL_CONFIG_UNDEF_INT) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = algorithm;
  config.ranksPerNode = ranksPerNode;
  config.timeoutSeconds = 120;  // a broken test fails instead of hanging the suite
  zcclComm_t comm = nullptr;
  EXPECT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
  return comm;
}

// Runs the tests on every rank: rank 0 prints the usual report, the others only their
// failures; the exit status is the worst of all ranks.
int runAllTests(int rank);

}  // namespace zccl_test
