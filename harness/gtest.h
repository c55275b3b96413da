// What the multi-rank GoogleTest suites use of the harness's world (harness/world.h): every
// test binary is built twice, for mpiexec (MPI transport) and for zcclrun (UCX, no MPI), and
// the tests use only these and the public API, so that the same assertions run on both.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "harness/world.h"
#include "zccl/zccl.h"

namespace zccl_harness {

struct NamedComm {
  const char* name;
  zcclComm_t comm;
};

inline int worldRank() { return world().rank(); }
inline int worldSize() { return world().ranks(); }
inline void barrier() { world().barrier(); }
// values[i] summed over ranks, on every rank.
inline void sumOverRanks(double* values, int count) { world().sum(values, count); }
inline void broadcastBytes(void* data, size_t bytes, int root) {
  world().broadcastBytes(data, bytes, root);
}
// A communicator over every rank of the job, as the launch makes one.
inline zcclResult_t initWorldComm(const zcclConfig* config, zcclComm_t* comm) {
  return world().makeComm(config, World::Engine::kDefault, comm);
}

// The bytes `comm` has sent so far, every link class together (zcclCommGetStats).
inline uint64_t bytesSent(zcclComm_t comm) {
  zcclStats stats;
  EXPECT_EQ(zcclCommGetStats(comm, &stats), zcclSuccess);
  uint64_t total = 0;
  for (uint64_t bytes : stats.bytesSent) total += bytes;
  return total;
}

// Shared-memory segments of this process's making left in /dev/shm (zcclSharedMemoryCreate
// names them after the creating process).
inline int sharedSegmentsLeft() {
  const std::string prefix = "zccl-" + std::to_string(getpid()) + "-";
  int left = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    left += entry.path().filename().string().rfind(prefix, 0) == 0 ? 1 : 0;
  }
  return left;
}

inline zcclComm_t makeComm(int algorithm, int ranksPerNode = ZCCL_CONFIG_UNDEF_INT) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = algorithm;
  config.ranksPerNode = ranksPerNode;
  config.timeoutSeconds = 120;  // a broken test fails instead of hanging the suite
  zcclComm_t comm = nullptr;
  EXPECT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
  return comm;
}

}  // namespace zccl_harness
