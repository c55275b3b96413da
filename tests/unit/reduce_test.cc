// Element-wise reductions against straightforward double-precision references.
#include "kernels/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "kernels/reduce_math.h"

namespace zccl {
namespace {

TEST(Reduce, OrderedBfloat16SumRoundsOnceInInputOrder) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 100.0f);
  constexpr int kInputs = 5;
  constexpr size_t kCount = 3001;
  std::vector<std::vector<bfloat16_t>> inputs(kInputs, std::vector<bfloat16_t>(kCount));
  for (auto& input : inputs)
    for (auto& v : input) v = toBfloat16(normal(rng));
  std::vector<const void*> pointers;
  pointers.reserve(inputs.size());
  for (auto& input : inputs) pointers.push_back(input.data());
  std::vector<bfloat16_t> out(kCount);
  reduceOrdered(out.data(), pointers.data(), kInputs, kCount, DataType::kBfloat16, RedOp::kSum);
  for (size_t i = 0; i < kCount; ++i) {
    float sum = 0.0f;
    for (int k = 0; k < kInputs; ++k) sum += toFloat(inputs[k][i]);
    ASSERT_EQ(out[i].bits, toBfloat16(sum).bits) << i;
  }
}

TEST(Reduce, OrderedOutputMayAliasAnInput) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  const void* inputs[] = {a.data(), b.data()};
  reduceOrdered(b.data(), inputs, 2, 3, DataType::kFloat32, RedOp::kAvg);
  EXPECT_EQ(b, (std::vector<float>{5.5f, 11.0f, 16.5f}));
}

TEST(Reduce, IntegersWrapAndAverageTruncates) {
  std::vector<int8_t> x = {120, -128, 7, -7}, y = {10, -1, 0, 0};
  reduceInto(x.data(), y.data(), x.size(), DataType::kInt8, RedOp::kSum);
  EXPECT_EQ(x, (std::vector<int8_t>{-126, 127, 7, -7}));
  divideByCount(x.data(), x.size(), DataType::kInt8, 2);
  EXPECT_EQ(x, (std::vector<int8_t>{-63, 63, 3, -3}));
  std::vector<uint8_t> big = {200};
  divideByCount(big.data(), 1, DataType::kUint8, 200);  // a divisor beyond int8's range
  EXPECT_EQ(big[0], 1);
  std::vector<uint8_t> p = {16}, q = {17};
  reduceInto(p.data(), q.data(), 1, DataType::kUint8, RedOp::kProd);
  EXPECT_EQ(p[0], static_cast<uint8_t>(16 * 17));
  std::vector<int64_t> m = {INT64_MAX}, n = {2};
  reduceInto(m.data(), n.data(), 1, DataType::kInt64, RedOp::kProd);
  EXPECT_EQ(m[0], -2);
}

TEST(Reduce, MaxAndMinPropagateNaN) {
  for (RedOp op : {RedOp::kMax, RedOp::kMin}) {
    std::vector<float> a = {NAN, 1.0f, 2.0f}, b = {1.0f, NAN, 3.0f};
    reduceInto(a.data(), b.data(), 3, DataType::kFloat32, op);
    EXPECT_TRUE(std::isnan(a[0]));
    EXPECT_TRUE(std::isnan(a[1]));
    EXPECT_EQ(a[2], op == RedOp::kMax ? 3.0f : 2.0f);
  }
}

TEST(Reduce, EveryTypeAndOpAgainstDouble) {
  const DataType types[] = {DataType::kInt32, DataType::kUint64, DataType::kFloat16,
                            DataType::kFloat64};
  for (DataType type : types) {
    for (int o = 0; o < static_cast<int>(RedOp::kCount); ++o) {
      const RedOp op = static_cast<RedOp>(o);
      // Values 1..4 keep every result exact in every type.
      std::vector<double> a = {1, 2, 3, 4}, b = {4, 3, 2, 1};
      std::vector<char> bufA(32), bufB(32);
      const auto put = [&](std::vector<char>& buf, size_t i, double v) {
        switch (type) {
          case DataType::kInt32:
            reinterpret_cast<int32_t*>(buf.data())[i] = static_cast<int32_t>(v);
            break;
          case DataType::kUint64:
            reinterpret_cast<uint64_t*>(buf.data())[i] = static_cast<uint64_t>(v);
            break;
          case DataType::kFloat16:
            reinterpret_cast<float16_t*>(buf.data())[i] = toFloat16(static_cast<float>(v));
            break;
          default:
            reinterpret_cast<double*>(buf.data())[i] = v;
            break;
        }
      };
      const auto get = [&](const std::vector<char>& buf, size_t i) -> double {
        switch (type) {
          case DataType::kInt32:
            return reinterpret_cast<const int32_t*>(buf.data())[i];
          case DataType::kUint64:
            return static_cast<double>(reinterpret_cast<const uint64_t*>(buf.data())[i]);
          case DataType::kFloat16:
            return toFloat(reinterpret_cast<const float16_t*>(buf.data())[i]);
          default:
            return reinterpret_cast<const double*>(buf.data())[i];
        }
      };
      for (size_t i = 0; i < 4; ++i) {
        put(bufA, i, a[i]);
        put(bufB, i, b[i]);
      }
      reduceInto(bufA.data(), bufB.data(), 4, type, op);
      for (size_t i = 0; i < 4; ++i) {
        const double want = op == RedOp::kProd  ? a[i] * b[i]
                            : op == RedOp::kMax ? std::max(a[i], b[i])
                            : op == RedOp::kMin ? std::min(a[i], b[i])
                                                : a[i] + b[i];
        EXPECT_EQ(get(bufA, i), want) << dataTypeName(type) << " " << redOpName(op);
      }
    }
  }
}

bool isNan(DataType type, const unsigned char* element) {
  return withType(type, [element](auto zero) {
    using T = decltype(zero);
    T value;
    std::memcpy(&value, element, sizeof(T));
    const auto loaded = Traits<T>::load(value);
    if constexpr (std::is_floating_point_v<decltype(loaded)>) {
      return std::isnan(loaded);
    } else {
      return false;
    }
  });
}

// The same bytes element by element, or NaN in both: which of two NaN operands an addition
// passes on is the compiler's choice of operand order (one source built twice may differ).
::testing::AssertionResult sameValues(DataType type, const std::vector<unsigned char>& expected,
                                      const std::vector<unsigned char>& got) {
  const size_t es = elementSize(type);
  for (size_t i = 0; i < expected.size(); i += es) {
    const unsigned char* a = expected.data() + i;
    const unsigned char* b = got.data() + i;
    if (std::memcmp(a, b, es) != 0 && !(isNan(type, a) && isNan(type, b))) {
      return ::testing::AssertionFailure() << "element " << i / es << " differs";
    }
  }
  return ::testing::AssertionSuccess();
}

// Random bit patterns (NaN, Inf, subnormals, both zeros among them), every type and op, tails
// of every length: each instruction set's loops give the baseline's bytes (NaN's payload
// aside).
class ReduceLoopsOf : public ::testing::TestWithParam<const ReduceLoops* (*)()> {};

TEST_P(ReduceLoopsOf, MatchTheBaseline) {
  const ReduceLoops* simd = GetParam()();
  if (simd == nullptr) GTEST_SKIP() << "this CPU lacks the instruction set";
  const ReduceLoops& base = baselineReduceLoops();
  std::mt19937 rng(11);
  const auto randomBytes = [&](size_t n) {
    std::vector<unsigned char> bytes(n);
    for (auto& b : bytes) b = static_cast<unsigned char>(rng());
    return bytes;
  };
  for (int t = 0; t < static_cast<int>(DataType::kCount); ++t) {
    const DataType type = static_cast<DataType>(t);
    const size_t es = elementSize(type);
    for (int o = 0; o < static_cast<int>(RedOp::kCount); ++o) {
      const RedOp op = static_cast<RedOp>(o);
      for (size_t count : {1, 7, 16, 17, 63, 1000, 2053}) {
        const auto in = randomBytes(count * es), start = randomBytes(count * es);
        auto expected = start, got = start;
        base.reduceInto(expected.data(), in.data(), count, type, op);
        simd->reduceInto(got.data(), in.data(), count, type, op);
        ASSERT_TRUE(sameValues(type, expected, got))
            << "reduceInto " << dataTypeName(type) << " " << redOpName(op) << " count " << count;
        const auto third = randomBytes(count * es);
        const void* inputs[] = {start.data(), in.data(), third.data()};
        base.reduceOrdered(expected.data(), inputs, 3, count, type, op);
        simd->reduceOrdered(got.data(), inputs, 3, count, type, op);
        ASSERT_TRUE(sameValues(type, expected, got))
            << "reduceOrdered " << dataTypeName(type) << " " << redOpName(op) << " count " << count;
      }
      if (op != RedOp::kSum) continue;
      auto expected = randomBytes(1000 * es), got = expected;
      base.divideByCount(expected.data(), 1000, type, 7);
      simd->divideByCount(got.data(), 1000, type, 7);
      ASSERT_TRUE(sameValues(type, expected, got)) << "divideByCount " << dataTypeName(type);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Reduce, ReduceLoopsOf,
                         ::testing::Values(&avx2ReduceLoops, &avx512ReduceLoops),
                         [](const auto& info) { return info.index == 0 ? "avx2" : "avx512"; });

}  // namespace
}  // namespace zccl
