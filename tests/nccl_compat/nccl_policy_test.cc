// The drop-in's policy for NCCL programs (ZCCL_NCCL_QUANT_*), on 2 ranks on 2 emulated nodes:
// lossless unless asked; asked, the quantized calls stay within the analytic error bound of
// src/quant/quantize.h and the statistics show the cut in inter-node bytes; integer types,
// max/min and calls under the threshold stay exact; a malformed variable is an error naming
// it. The reference is computed here, in double.
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/gtest.h"
#include "zccl/zccl_nccl.h"

namespace {

using zccl_harness::worldRank;
using zccl_harness::worldSize;

constexpr size_t kGroup = 512;  // zccl's default elements per scale

class Policy : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"ZCCL_NCCL_QUANT_ALLGATHER", "ZCCL_NCCL_QUANT_REDUCESCATTER",
                             "ZCCL_NCCL_QUANT_ALLREDUCE", "ZCCL_NCCL_QUANT_MIN_BYTES"}) {
      unsetenv(name);
    }
  }
};

// A drop-in communicator over the job; the policy is read when it is made.
ncclComm_t dropInComm() {
  ncclUniqueId id{};
  if (worldRank() == 0) {
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  }
  zccl_harness::broadcastBytes(&id, sizeof(id), 0);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, worldSize(), id, worldRank()), ncclSuccess)
      << ncclGetLastError(nullptr);
  return comm;
}

uint64_t interNodeBytes(ncclComm_t comm) {
  zcclComm_t carrier = nullptr;
  EXPECT_EQ(zcclNcclGetComm(comm, &carrier), zcclSuccess);
  zcclStats stats;
  EXPECT_EQ(zcclCommGetStats(carrier, &stats), zcclSuccess);
  return stats.bytesSent[zcclLinkInterNode];
}

float valueAt(int rank, size_t i) {
  return std::sin(0.37f * static_cast<float>(i) + static_cast<float>(rank)) *
         static_cast<float>(1 + i % 7);
}

std::vector<float> block(int rank, size_t count, size_t offset = 0) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = valueAt(rank, offset + i);
  return values;
}

// The largest |x| of the group of kGroup elements that holds element i of rank's values.
double groupAbsmax(int rank, size_t i) {
  const size_t start = i / kGroup * kGroup;
  double absmax = 0;
  for (size_t j = start; j < start + kGroup; ++j) {
    absmax = std::max(absmax, std::fabs(static_cast<double>(valueAt(rank, j))));
  }
  return absmax;
}

TEST_F(Policy, AllGatherAskedForInt8StaysInTheBoundAndSendsAQuarter) {
  const size_t count = 8 * kGroup;
  setenv("ZCCL_NCCL_QUANT_ALLGATHER", "int8", 1);
  ncclComm_t quantized = dropInComm();
  unsetenv("ZCCL_NCCL_QUANT_ALLGATHER");
  ncclComm_t exact = dropInComm();
  const std::vector<float> mine = block(worldRank(), count);
  std::vector<float> fromQuantized(count * worldSize());
  std::vector<float> fromExact(count * worldSize());
  ASSERT_EQ(
      ncclAllGather(mine.data(), fromQuantized.data(), count, ncclFloat32, quantized, nullptr),
      ncclSuccess);
  ASSERT_EQ(ncclAllGather(mine.data(), fromExact.data(), count, ncclFloat32, exact, nullptr),
            ncclSuccess);
  for (int r = 0; r < worldSize(); ++r) {
    for (size_t i = 0; i < count; ++i) {
      const double x = valueAt(r, i);
      const double bound = groupAbsmax(r, i) / 127 / 2 + std::ldexp(std::fabs(x), -21) + 1e-30;
      ASSERT_LE(std::fabs(fromQuantized[r * count + i] - x), bound) << "rank " << r << " " << i;
      ASSERT_EQ(fromExact[r * count + i], static_cast<float>(x));
    }
  }
  // INT8 codes and a float32 scale per 512 elements: a quarter of float32, and a little.
  const double ratio =
      static_cast<double>(interNodeBytes(quantized)) / static_cast<double>(interNodeBytes(exact));
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.27);
  ncclCommDestroy(quantized);
  ncclCommDestroy(exact);
}

TEST_F(Policy, ReduceScatterAskedForInt4StaysInTheBound) {
  const size_t recvcount = 8 * kGroup;
  const size_t total = recvcount * worldSize();
  setenv("ZCCL_NCCL_QUANT_REDUCESCATTER", "int4", 1);
  ncclComm_t quantized = dropInComm();
  unsetenv("ZCCL_NCCL_QUANT_REDUCESCATTER");
  ncclComm_t exact = dropInComm();
  const std::vector<float> mine = block(worldRank(), total);
  std::vector<float> reduced(recvcount);
  std::vector<float> exactlyReduced(recvcount);
  ASSERT_EQ(ncclReduceScatter(mine.data(), reduced.data(), recvcount, ncclFloat32, ncclSum,
                              quantized, nullptr),
            ncclSuccess);
  ASSERT_EQ(ncclReduceScatter(mine.data(), exactlyReduced.data(), recvcount, ncclFloat32, ncclSum,
                              exact, nullptr),
            ncclSuccess);
  for (size_t i = 0; i < recvcount; ++i) {
    const size_t element = worldRank() * recvcount + i;
    double sum = 0;
    double bound = 1e-5;
    for (int r = 0; r < worldSize(); ++r) {
      sum += valueAt(r, element);
      // Quantized once per hop (at most two), each time within half a step of its group.
      bound += 2 * groupAbsmax(r, element) / 7 / 2;
    }
    ASSERT_LE(std::fabs(reduced[i] - sum), bound) << i;
    ASSERT_NEAR(exactlyReduced[i], sum, 1e-5);
  }
  EXPECT_LT(interNodeBytes(quantized), interNodeBytes(exact) / 7);
  ncclCommDestroy(quantized);
  ncclCommDestroy(exact);
}

TEST_F(Policy, IntegersMaxAndSmallCallsStayExact) {
  setenv("ZCCL_NCCL_QUANT_ALLGATHER", "int8", 1);
  setenv("ZCCL_NCCL_QUANT_ALLREDUCE", "int4", 1);
  setenv("ZCCL_NCCL_QUANT_MIN_BYTES", "65536", 1);
  ncclComm_t comm = dropInComm();
  const size_t small = 1024;  // 4 KiB of float32: under the threshold
  const std::vector<float> mine = block(worldRank(), small);
  std::vector<float> gathered(small * worldSize());
  ASSERT_EQ(ncclAllGather(mine.data(), gathered.data(), small, ncclFloat32, comm, nullptr),
            ncclSuccess);
  for (int r = 0; r < worldSize(); ++r) {
    for (size_t i = 0; i < small; ++i) ASSERT_EQ(gathered[r * small + i], valueAt(r, i));
  }
  const size_t large = 64 * 1024;  // over it, but max and integers are never quantized
  std::vector<float> maxima = block(worldRank(), large);
  ASSERT_EQ(ncclAllReduce(maxima.data(), maxima.data(), large, ncclFloat32, ncclMax, comm, nullptr),
            ncclSuccess);
  std::vector<int32_t> integers(large);
  for (size_t i = 0; i < large; ++i) integers[i] = static_cast<int32_t>(i) * (worldRank() + 1);
  ASSERT_EQ(
      ncclAllReduce(integers.data(), integers.data(), large, ncclInt32, ncclSum, comm, nullptr),
      ncclSuccess);
  const int32_t weights = worldSize() * (worldSize() + 1) / 2;
  for (size_t i = 0; i < large; ++i) {
    float expected = valueAt(0, i);
    for (int r = 1; r < worldSize(); ++r) expected = std::max(expected, valueAt(r, i));
    ASSERT_EQ(maxima[i], expected);
    ASSERT_EQ(integers[i], static_cast<int32_t>(i) * weights);
  }
  ncclCommDestroy(comm);
}

TEST_F(Policy, AMalformedVariableFailsCreationNamingIt) {
  setenv("ZCCL_NCCL_QUANT_ALLGATHER", "int3", 1);
  ncclUniqueId id{};
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, worldSize(), id, worldRank()), ncclInvalidArgument);
  EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "ZCCL_NCCL_QUANT_ALLGATHER=int3"), nullptr)
      << ncclGetLastError(nullptr);
  unsetenv("ZCCL_NCCL_QUANT_ALLGATHER");
  setenv("ZCCL_NCCL_QUANT_MIN_BYTES", "-5", 1);
  EXPECT_EQ(ncclCommInitRank(&comm, worldSize(), id, worldRank()), ncclInvalidArgument);
  EXPECT_NE(std::strstr(ncclGetLastError(nullptr), "ZCCL_NCCL_QUANT_MIN_BYTES=-5"), nullptr)
      << ncclGetLastError(nullptr);
}

}  // namespace
