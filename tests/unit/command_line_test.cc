// The programs' number parsing (harness/command_line.h): whole text or nothing, in range or
// nothing, against what strtol and strtod would have let through.
#include "harness/command_line.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace zccl_harness {
namespace {

TEST(CommandLine, IntegersAreWholeAndInRange) {
  int value = -7;
  EXPECT_TRUE(parseInteger("42", 1, 100, &value));
  EXPECT_EQ(value, 42);
  EXPECT_TRUE(parseInteger("-3", -5, 5, &value));
  EXPECT_EQ(value, -3);
  EXPECT_TRUE(parseInteger("100", 1, 100, &value));  // the bounds are in range
  EXPECT_TRUE(parseInteger("1", 1, 100, &value));
  value = -7;
  for (const char* refused : {"", "abc", "2x", "4.5", " 4", "101", "0", "1e3", "0x10"}) {
    EXPECT_FALSE(parseInteger(refused, 1, 100, &value)) << refused;
  }
  const int most = std::numeric_limits<int>::max();
  EXPECT_FALSE(parseInteger("2147483648", 1, most, &value)) << "past int";
  EXPECT_FALSE(parseInteger("99999999999999999999", 1, most, &value)) << "past long long";
  EXPECT_EQ(value, -7) << "a refused text leaves the value as it was";
}

TEST(CommandLine, UnsignedIntegersRefuseMinus) {
  uint64_t value = 5;
  EXPECT_TRUE(parseInteger("18446744073709551615", uint64_t{0},
                           std::numeric_limits<uint64_t>::max(), &value));
  EXPECT_EQ(value, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(parseInteger("-1", uint64_t{0}, std::numeric_limits<uint64_t>::max(), &value));
  EXPECT_FALSE(parseInteger("18446744073709551616", uint64_t{0},
                            std::numeric_limits<uint64_t>::max(), &value));
  EXPECT_EQ(value, std::numeric_limits<uint64_t>::max());
}

TEST(CommandLine, RealsAreWholeFiniteAndInRange) {
  double value = -1;
  EXPECT_TRUE(parseReal("0.25", 0, 1, &value));
  EXPECT_EQ(value, 0.25);
  EXPECT_TRUE(parseReal("1e-3", 0, 1, &value));
  EXPECT_EQ(value, 1e-3);
  value = -1;
  for (const char* refused : {"", "x", "0.5s", "nan", "inf", "1.5", "-0.1"}) {
    EXPECT_FALSE(parseReal(refused, 0, 1, &value)) << refused;
  }
  EXPECT_EQ(value, -1);
}

TEST(CommandLine, SizesTakeBinaryUnits) {
  size_t value = 0;
  EXPECT_TRUE(parseSize("32", &value));
  EXPECT_EQ(value, 32u);
  EXPECT_TRUE(parseSize("4k", &value));
  EXPECT_EQ(value, 4096u);
  EXPECT_TRUE(parseSize("1.5M", &value));
  EXPECT_EQ(value, 1572864u);
  EXPECT_TRUE(parseSize("2G", &value));
  EXPECT_EQ(value, size_t{2} << 30);
  value = 9;
  for (const char* refused : {"", "M", "-1", "1Q", "1MB", "nan", "1e30"}) {
    EXPECT_FALSE(parseSize(refused, &value)) << refused;
  }
  EXPECT_EQ(value, 9u);
}

TEST(CommandLine, ExpectationsInWords) {
  EXPECT_EQ(wholeNumberFrom(1, 3), "a whole number from 1 to 3");
  EXPECT_EQ(numberFrom(0, 1e9), "a number from 0 to 1e+09");
  const option options[] = {{"steps", required_argument, nullptr, 'n'}, {nullptr, 0, nullptr, 0}};
  EXPECT_EQ(optionName(options, 'n'), "--steps");
  EXPECT_EQ(optionName(options, 'x'), "-x");
}

}  // namespace
}  // namespace zccl_harness
