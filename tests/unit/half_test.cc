// float16 against the compiler's _Float16 (exhaustively from half, widely to half);
// bfloat16 against a nearest-value search in double precision.
#include "common/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace zccl {
namespace {

uint16_t halfBits(_Float16 value) {
  uint16_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

TEST(Float16, EveryHalfConvertsToTheSameFloat) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    _Float16 reference;
    const uint16_t b = static_cast<uint16_t>(bits);
    std::memcpy(&reference, &b, sizeof(b));
    const float want = static_cast<float>(reference);
    const float got = toFloat(float16_t{b});
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << bits;
    } else {
      ASSERT_EQ(floatBits(got), floatBits(want)) << "bits 0x" << std::hex << bits;
    }
  }
}

void expectSameHalf(float value) {
  const _Float16 reference = static_cast<_Float16>(value);
  const float16_t got = toFloat16(value);
  if (std::isnan(value)) {
    EXPECT_EQ(got.bits & 0x7c00u, 0x7c00u);
    EXPECT_NE(got.bits & 0x3ffu, 0u) << "NaN must stay NaN";
    return;
  }
  ASSERT_EQ(got.bits, halfBits(reference))
      << "value " << value << " bits 0x" << std::hex << floatBits(value);
}

TEST(Float16, FloatsRoundToNearestEvenLikeTheCompiler) {
  // Every float whose exponent can land in half's range or near it, sampled densely,
  // plus ties, subnormals, overflow and specials.
  std::mt19937 rng(12345);
  for (int exponent = -30; exponent <= 17; ++exponent) {
    for (int k = 0; k < 20000; ++k) {
      const float value =
          std::ldexp(1.0f + static_cast<float>(rng() % (1u << 23)) / (1u << 23), exponent);
      expectSameHalf(value);
      expectSameHalf(-value);
    }
  }
  for (uint32_t mantissa = 0; mantissa < (1u << 10); ++mantissa) {
    // Exactly halfway between two halves, in the normal and the subnormal range.
    expectSameHalf(bitsToFloat(0x3f800000u | (mantissa << 13) | 0x1000u));
    expectSameHalf(std::ldexp(static_cast<float>(mantissa) + 0.5f, -24));
  }
  for (float special : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, INFINITY, -INFINITY, NAN,
                        5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-30f}) {
    expectSameHalf(special);
  }
}

// The bfloat16 nearest to `value`, ties to even, found by comparing the two neighbours.
uint16_t nearestBfloat16(float value) {
  const uint32_t bits = floatBits(value);
  const uint16_t below = static_cast<uint16_t>(bits >> 16);
  const uint16_t above = static_cast<uint16_t>(below + 1);
  const double low = bitsToFloat(static_cast<uint32_t>(below) << 16);
  const double high = bitsToFloat(static_cast<uint32_t>(above) << 16);
  const double distanceLow = std::fabs(static_cast<double>(value) - low);
  const double distanceHigh =
      std::isinf(high) && !std::isinf(value)
          ? std::fabs(static_cast<double>(value) - std::ldexp(1.0, 128) * (value < 0 ? -1 : 1))
          : std::fabs(static_cast<double>(value) - high);
  if (distanceLow < distanceHigh) return below;
  if (distanceHigh < distanceLow) return above;
  return (below & 1u) ? above : below;
}

TEST(Bfloat16, FloatsRoundToNearestEven) {
  std::mt19937 rng(777);
  for (int k = 0; k < 2000000; ++k) {
    const float value = bitsToFloat(rng());
    if (std::isnan(value)) continue;
    ASSERT_EQ(toBfloat16(value).bits, nearestBfloat16(value)) << value;
  }
  for (uint32_t high = 0; high < 0x10000; high += 7) {
    const float tie = bitsToFloat((high << 16) | 0x8000u);
    if (std::isnan(tie)) continue;
    ASSERT_EQ(toBfloat16(tie).bits, nearestBfloat16(tie)) << tie;
  }
}

TEST(Bfloat16, SpecialsAndRoundTrip) {
  EXPECT_TRUE(std::isnan(toFloat(toBfloat16(NAN))));
  EXPECT_TRUE(std::isnan(toFloat(toBfloat16(bitsToFloat(0x7f800001u)))))
      << "a NaN whose payload sits in the dropped bits must not become Inf";
  EXPECT_EQ(toFloat(toBfloat16(INFINITY)), INFINITY);
  EXPECT_EQ(toFloat(toBfloat16(-INFINITY)), -INFINITY);
  EXPECT_EQ(toFloat(toBfloat16(3.4e38f)), INFINITY) << "overflow rounds to Inf";
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const bfloat16_t value{static_cast<uint16_t>(bits)};
    if (std::isnan(toFloat(value))) continue;
    ASSERT_EQ(toBfloat16(toFloat(value)).bits, value.bits);
  }
}

}  // namespace
}  // namespace zccl
