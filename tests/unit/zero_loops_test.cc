// The optimizer's host loops (zero/working_math.h) for each instruction set against the
// baseline's, bit for bit: conversions over random bit patterns (NaN, Inf, subnormals among
// them) and Adam updates over random states.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "zero/working_math.h"

namespace zccl::zero {
namespace {

std::vector<float> randomFloats(std::mt19937& rng, size_t n) {
  std::vector<float> values(n);
  for (auto& v : values) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    std::memcpy(&v, &bits, sizeof(v));
  }
  return values;
}

bool sameBytes(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

TEST(ZeroLoops, Avx2MatchesTheBaselineBitForBit) {
  const HostLoops* simd = avx2HostLoops();
  if (simd == nullptr) GTEST_SKIP() << "this CPU lacks AVX2";
  const HostLoops& base = baselineHostLoops();
  std::mt19937 rng(5);
  for (size_t n : {1, 7, 16, 33, 1000, 4099}) {
    const std::vector<float> in = randomFloats(rng, n);
    for (Precision p : {Precision::kFloat32, Precision::kBfloat16, Precision::kFloat16}) {
      std::vector<uint32_t> expected(n), got(n);  // room for float32
      base.toWorking(p, in.data(), n, expected.data());
      simd->toWorking(p, in.data(), n, got.data());
      ASSERT_EQ(expected, got) << "toWorking n=" << n << " precision " << static_cast<int>(p);
      std::vector<float> back(n), backSimd(n);
      base.fromWorking(p, got.data(), n, back.data());
      simd->fromWorking(p, got.data(), n, backSimd.data());
      ASSERT_TRUE(sameBytes(back.data(), backSimd.data(), n * sizeof(float)))
          << "fromWorking n=" << n << " precision " << static_cast<int>(p);
    }
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> params(n), moment1(n), moment2(n), grads(n);
    for (size_t i = 0; i < n; ++i) {
      params[i] = uniform(rng);
      moment1[i] = uniform(rng) * 0.1f;
      moment2[i] = uniform(rng) * uniform(rng) * 0.01f;
      grads[i] = uniform(rng) * 3;
    }
    AdamStep step;
    step.stepSize = 1e-3f / (1 - 0.9f * 0.9f);
    step.rootCorrection2 = 1 / std::sqrt(1 - 0.999f * 0.999f);
    step.coupledDecay = 0.01f;
    step.decoupledDecay = 1e-5f;
    step.lossScale = 128;
    auto p1 = params, m1 = moment1, v1 = moment2;
    std::vector<uint16_t> published(n), publishedSimd(n), expected(n);
    base.adamUpdate(step, Precision::kFloat32, grads.data(), n, p1.data(), m1.data(), v1.data(),
                    nullptr);
    simd->adamUpdate(step, Precision::kFloat32, grads.data(), n, params.data(), moment1.data(),
                     moment2.data(), nullptr);
    ASSERT_TRUE(sameBytes(p1.data(), params.data(), n * sizeof(float))) << "Adam n=" << n;
    ASSERT_TRUE(sameBytes(m1.data(), moment1.data(), n * sizeof(float))) << "Adam n=" << n;
    ASSERT_TRUE(sameBytes(v1.data(), moment2.data(), n * sizeof(float))) << "Adam n=" << n;
    // Publishing in the same pass gives what a separate conversion of the update gives.
    std::vector<uint16_t> bfloat16Grads(n);
    base.toWorking(Precision::kBfloat16, grads.data(), n, bfloat16Grads.data());
    auto p2 = params, m2 = moment1, v2 = moment2;
    base.adamUpdate(step, Precision::kBfloat16, bfloat16Grads.data(), n, p2.data(), m2.data(),
                    v2.data(), published.data());
    simd->adamUpdate(step, Precision::kBfloat16, bfloat16Grads.data(), n, params.data(),
                     moment1.data(), moment2.data(), publishedSimd.data());
    ASSERT_TRUE(sameBytes(p2.data(), params.data(), n * sizeof(float))) << "Adam n=" << n;
    base.toWorking(Precision::kBfloat16, p2.data(), n, expected.data());
    ASSERT_EQ(published, expected) << "published n=" << n;
    ASSERT_EQ(publishedSimd, expected) << "published n=" << n;
  }
}

}  // namespace
}  // namespace zccl::zero
