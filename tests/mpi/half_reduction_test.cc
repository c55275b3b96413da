// Half-precision sums across ranks equal: convert each rank's input to float32, sum in rank
// order, round once. Inputs are random (sums are not exact), so any per-hop rounding or
// other summation order shows up as a mismatch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "support/comms.h"
#include "testsupport/values.h"

namespace zccl_test {
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

void checkHalfSum(zcclDataType_t type, zcclRedOp_t op, bool allReduce) {
  const int rank = worldRank(), n = worldSize();
  zcclComm_t comm = makeComm(zcclAlgoAuto);
  const size_t perRank = 4099;
  const size_t total = perRank * n;
  std::vector<uint16_t> send(total), recv(allReduce ? total : perRank);
  for (size_t i = 0; i < total; ++i) send[i] = randomInput(type, rank, i);
  const zcclResult_t result =
      allReduce ? zcclAllReduce(send.data(), recv.data(), total, type, op, comm, nullptr)
                : zcclReduceScatter(send.data(), recv.data(), perRank, type, op, comm, nullptr);
  ASSERT_EQ(result, zcclSuccess) << zcclGetLastError(comm);
  const size_t first = allReduce ? 0 : rank * perRank;
  size_t wrong = 0;
  for (size_t i = 0; i < recv.size(); ++i) {
    float sum = 0.0f;
    for (int r = 0; r < n; ++r) sum += widen(type, randomInput(type, r, first + i));
    if (op == zcclAvg) sum /= static_cast<float>(n);
    if (recv[i] != narrow(type, sum) && wrong++ == 0) {
      ADD_FAILURE() << "element " << i << ": got " << widen(type, recv[i]) << " expected "
                    << widen(type, narrow(type, sum));
    }
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(HalfReduction, Bfloat16ReduceScatterRoundsOnceInRankOrder) {
  checkHalfSum(zcclBfloat16, zcclSum, false);
}
TEST(HalfReduction, Bfloat16AllReduceRoundsOnceInRankOrder) {
  checkHalfSum(zcclBfloat16, zcclSum, true);
}
TEST(HalfReduction, Float16AllReduceRoundsOnceInRankOrder) {
  checkHalfSum(zcclFloat16, zcclSum, true);
}
TEST(HalfReduction, Bfloat16AverageDividesOnceAfterTheSum) {
  checkHalfSum(zcclBfloat16, zcclAvg, false);
}

}  // namespace
}  // namespace zccl_test
