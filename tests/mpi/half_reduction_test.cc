// Half-precision sums across ranks equal, on flat paths: convert each rank's input to float32,
// sum in rank order, round once; on two-level paths, the same inside each node (local rank
// order), then over the nodes' rounded partials (node order), rounding once per level.
// Inputs are random (sums are not exact), so any other rounding or order shows up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "harness/gtest.h"
#include "harness/values.h"
#include "zccl/zccl_introspect.h"

namespace zccl_harness {
namespace {

float widen(zcclDataType_t type, uint16_t bits) {
  if (type == zcclBfloat16) return static_cast<float>(bf16ToDouble(bits));
  _Float16 h;
  std::memcpy(&h, &bits, sizeof(h));
  return static_cast<float>(h);
}

// float -> half, nearest with ties to even, computed independently of the library.
uint16_t narrow(zcclDataType_t type, float value) {
  if (type == zcclFloat16) {
    const _Float16 h = static_cast<_Float16>(value);
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof(bits));
    return bits;
  }
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint16_t below = static_cast<uint16_t>(bits >> 16);
  const uint16_t above = static_cast<uint16_t>(below + 1);
  const double low = bf16ToDouble(below), high = bf16ToDouble(above);
  const double dLow = std::fabs(value - low), dHigh = std::fabs(value - high);
  if (dLow != dHigh) return dLow < dHigh ? below : above;
  return (below & 1u) ? above : below;
}

uint16_t randomInput(zcclDataType_t type, int rank, size_t i) {
  std::mt19937_64 rng(mix(static_cast<uint64_t>(type), static_cast<uint64_t>(rank), i));
  std::normal_distribution<float> normal(0.0f, 3.0f);
  return narrow(type, normal(rng));
}

// What the sum of element i must be: rounded once over all ranks (flat), or once inside each
// node and once over the nodes (two-level; nodeOf[r] is r's node, ranks of a node in order).
float reference(zcclDataType_t type, zcclRedOp_t op, size_t i, const std::vector<int>& nodeOf,
                bool twoLevel) {
  const int n = static_cast<int>(nodeOf.size());
  float sum = 0.0f;
  if (!twoLevel) {
    for (int r = 0; r < n; ++r) sum += widen(type, randomInput(type, r, i));
    return op == zcclAvg ? sum / static_cast<float>(n) : sum;
  }
  const int nodes = *std::max_element(nodeOf.begin(), nodeOf.end()) + 1;
  for (int node = 0; node < nodes; ++node) {
    float partial = 0.0f;
    for (int r = 0; r < n; ++r) {
      if (nodeOf[r] == node) partial += widen(type, randomInput(type, r, i));
    }
    sum += widen(type, narrow(type, partial));
  }
  // The average divides the rounded total, once.
  return op == zcclAvg ? widen(type, narrow(type, sum)) / static_cast<float>(n) : sum;
}

void checkHalfSum(zcclDataType_t type, zcclRedOp_t op, bool allReduce, zcclHierarchy_t hierarchy) {
  const int rank = worldRank(), n = worldSize();
  const bool twoLevel = hierarchy == zcclHierarchyTwoLevel;
  // Two levels: two nodes where the ranks split evenly, else nodes of one rank.
  zcclComm_t comm = makeComm(zcclAlgoAuto, twoLevel ? (n % 2 == 0 ? n / 2 : 1) : 0);
  std::vector<int> nodeOf(static_cast<size_t>(n));
  ASSERT_EQ(zcclCommGetNodeMap(comm, nodeOf.data()), zcclSuccess);
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.hierarchy = hierarchy;
  const size_t perRank = 4099;
  const size_t total = perRank * n;
  std::vector<uint16_t> send(total), recv(allReduce ? total : perRank);
  for (size_t i = 0; i < total; ++i) send[i] = randomInput(type, rank, i);
  const zcclResult_t result = allReduce ? zcclAllReduceEx(send.data(), recv.data(), total, type, op,
                                                          comm, nullptr, &options)
                                        : zcclReduceScatterEx(send.data(), recv.data(), perRank,
                                                              type, op, comm, nullptr, &options);
  ASSERT_EQ(result, zcclSuccess) << zcclGetLastError(comm);
  const size_t first = allReduce ? 0 : rank * perRank;
  size_t wrong = 0;
  for (size_t i = 0; i < recv.size(); ++i) {
    const uint16_t expected = narrow(type, reference(type, op, first + i, nodeOf, twoLevel));
    if (recv[i] != expected && wrong++ == 0) {
      ADD_FAILURE() << "element " << i << ": got " << widen(type, recv[i]) << " expected "
                    << widen(type, expected);
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(HalfReduction, Bfloat16ReduceScatterRoundsOnceInRankOrder) {
  checkHalfSum(zcclBfloat16, zcclSum, false, zcclHierarchyFlat);
}
TEST(HalfReduction, Bfloat16AllReduceRoundsOnceInRankOrder) {
  checkHalfSum(zcclBfloat16, zcclSum, true, zcclHierarchyFlat);
}
TEST(HalfReduction, Float16AllReduceRoundsOnceInRankOrder) {
  checkHalfSum(zcclFloat16, zcclSum, true, zcclHierarchyFlat);
}
TEST(HalfReduction, Bfloat16AverageDividesOnceAfterTheSum) {
  checkHalfSum(zcclBfloat16, zcclAvg, false, zcclHierarchyFlat);
}
TEST(HalfReduction, TwoLevelRoundsOncePerLevel) {
  checkHalfSum(zcclBfloat16, zcclSum, false, zcclHierarchyTwoLevel);
  checkHalfSum(zcclFloat16, zcclSum, true, zcclHierarchyTwoLevel);
  checkHalfSum(zcclBfloat16, zcclAvg, false, zcclHierarchyTwoLevel);
}

}  // namespace
}  // namespace zccl_harness
