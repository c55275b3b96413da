// Communicators shared by the tests of one binary, one per algorithm family.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "zccl/zccl.h"

namespace zccl_test {

struct NamedComm {
  const char* name;
  zcclComm_t comm;
};

inline zcclComm_t makeComm(int algorithm, int ranksPerNode = ZCCL_CONFIG_UNDEF_INT) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = algorithm;
  config.ranksPerNode = ranksPerNode;
  config.timeoutSeconds = 120;  // a broken test fails instead of hanging the suite
  zcclComm_t comm = nullptr;
  EXPECT_EQ(zcclCommInitMPI(MPI_COMM_WORLD, &config, &comm), zcclSuccess)
      << zcclGetLastError(nullptr);
  return comm;
}

inline int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int worldSize() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

}  // namespace zccl_test
