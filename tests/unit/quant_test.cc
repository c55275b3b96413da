// Quantization against its analytic error bounds, never against itself: per-element bound,
// unbiased stochastic rounding, relative RMS on N(0,1) against the model, specials, header
// validation, and SIMD kernels bit-identical to the scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/half.h"
#include "kernels/kernels.h"
#include "kernels/reduce_math.h"
#include "quant/group_math.h"
#include "quant/kernels.h"
#include "quant/quantize.h"
#include "quant/rotation.h"

namespace zccl {
namespace {

struct Format {
  int bits;
  QuantScheme scheme;
};
constexpr Format kFormats[] = {{8, QuantScheme::kSymmetric}, {8, QuantScheme::kAsymmetric},
                               {4, QuantScheme::kSymmetric}, {4, QuantScheme::kAsymmetric},
                               {2, QuantScheme::kSymmetric}, {2, QuantScheme::kAsymmetric}};
constexpr size_t kNumFormats = sizeof(kFormats) / sizeof(kFormats[0]);

// The group parameters, read from the message by the documented layout.
struct Parsed {
  std::vector<float> scales, offsets;
};
Parsed parse(const std::vector<unsigned char>& m, size_t count, const QuantParams& p) {
  const size_t groups = (count + p.groupSize - 1) / p.groupSize;
  const size_t payload = (count * static_cast<size_t>(p.bits) + 7) / 8;
  const size_t at = 24 + (payload + 3) / 4 * 4;
  Parsed r;
  r.scales.resize(groups);
  std::memcpy(r.scales.data(), m.data() + at, 4 * groups);
  if (p.scheme == QuantScheme::kAsymmetric) {
    r.offsets.resize(groups);
    std::memcpy(r.offsets.data(), m.data() + at + 4 * groups, 4 * groups);
  }
  return r;
}

std::vector<unsigned char> quantizeOrDie(const void* in, DataType type, size_t count,
                                         const QuantParams& p) {
  std::vector<unsigned char> m(quantizedBytes(count, p));
  EXPECT_EQ(quantize(in, type, count, p, m.data(), m.size()), Status::kSuccess)
      << lastThreadError();
  return m;
}

std::vector<float> roundTrip(const std::vector<float>& x, const QuantParams& p, Parsed* parsed) {
  const auto m = quantizeOrDie(x.data(), DataType::kFloat32, x.size(), p);
  std::vector<float> y(x.size());
  EXPECT_EQ(dequantize(m.data(), m.size(), y.data(), DataType::kFloat32, y.size()),
            Status::kSuccess)
      << lastThreadError();
  *parsed = parse(m, x.size(), p);
  return y;
}

// The documented bound; stochastic rounding may move a full step.
double bound(double scale, double x, double offset, Rounding rounding) {
  const double step = rounding == Rounding::kNearestEven ? scale / 2 : scale;
  return step + std::ldexp(std::max(std::fabs(x), std::fabs(offset)), -21) + std::ldexp(1.0, -140);
}

// Checks every element against the bound; groups holding NaN/Inf must decode to NaN.
void expectWithinBound(const std::vector<float>& x, const QuantParams& p, const char* what) {
  Parsed parsed;
  const std::vector<float> y = roundTrip(x, p, &parsed);
  size_t bad = 0;
  for (size_t g = 0; g < parsed.scales.size(); ++g) {
    const size_t first = g * p.groupSize, last = std::min(x.size(), first + p.groupSize);
    bool finite = true;
    for (size_t i = first; i < last; ++i) finite &= std::isfinite(x[i]);
    const double offset = parsed.offsets.empty() ? 0.0 : parsed.offsets[g];
    for (size_t i = first; i < last; ++i) {
      const bool ok = finite ? std::fabs(double(x[i]) - y[i]) <=
                                   bound(parsed.scales[g], x[i], offset, p.rounding)
                             : std::isnan(y[i]);
      if (!ok && bad++ < 3) {
        ADD_FAILURE() << what << " bits=" << p.bits << " scheme=" << int(p.scheme)
                      << " group=" << p.groupSize << " element " << i << ": x=" << x[i]
                      << " x^=" << y[i] << " scale=" << parsed.scales[g];
      }
    }
  }
  EXPECT_EQ(bad, 0u) << what;
}

std::vector<float> sample(const char* distribution, size_t n, std::mt19937& rng) {
  std::vector<float> x(n);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(-3.0f, 5.0f);
  std::cauchy_distribution<float> cauchy;
  for (size_t i = 0; i < n; ++i) {
    if (!std::strcmp(distribution, "normal"))
      x[i] = normal(rng);
    else if (!std::strcmp(distribution, "uniform"))
      x[i] = uniform(rng);
    else if (!std::strcmp(distribution, "heavy"))
      x[i] = std::max(-1e30f, std::min(1e30f, cauchy(rng)));
    else if (!std::strcmp(distribution, "denormal"))
      x[i] = normal(rng) * 1e-39f;
    else if (!std::strcmp(distribution, "huge"))
      x[i] = normal(rng) * 1e38f;
    else if (!std::strcmp(distribution, "zeros"))
      x[i] = (i / 64) % 2 ? normal(rng) : 0.0f;
  }
  if (!std::strcmp(distribution, "huge") && n > 1) {
    x[0] = std::numeric_limits<float>::max();
    x[n - 1] = -std::numeric_limits<float>::max();
  }
  return x;
}

TEST(Quant, PerElementBoundOverLengthsGroupsAndDistributions) {
  std::mt19937 rng(2024);
  const char* distributions[] = {"normal", "uniform", "heavy", "denormal", "huge", "zeros"};
  const size_t lengths[] = {1, 7, 31, 33, 1000, 4097, 65537, 1000000};
  for (const Format& f : kFormats) {
    for (uint32_t group = 32; group <= 4096; group *= 2) {
      for (const char* d : distributions) {
        const size_t n = lengths[rng() % (sizeof(lengths) / sizeof(lengths[0]))];
        QuantParams p;
        p.bits = f.bits;
        p.scheme = f.scheme;
        p.groupSize = group;
        expectWithinBound(sample(d, n, rng), p, d);
      }
    }
  }
}

TEST(Quant, RandomLengthsUpToAMillionWithStochasticRounding) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 12; ++trial) {
    const size_t n = 1 + static_cast<size_t>(std::exp(
                             std::uniform_real_distribution<double>(0, std::log(1e6))(rng)));
    QuantParams p;
    p.bits = kFormats[trial % kNumFormats].bits;
    p.scheme = kFormats[trial % kNumFormats].scheme;
    p.groupSize = 32u << (rng() % 8);
    p.rounding = (trial / kNumFormats) % 2 ? Rounding::kStochastic : Rounding::kNearestEven;
    p.seed = rng();
    expectWithinBound(sample("normal", n, rng), p, "random length");
  }
}

TEST(Quant, NonFiniteValuesPoisonOnlyTheirGroup) {
  for (const Format& f : kFormats) {
    std::vector<float> x(300, 0.5f);
    x[5] = NAN;
    x[70] = INFINITY;
    x[140] = -INFINITY;
    QuantParams p;
    p.bits = f.bits;
    p.scheme = f.scheme;
    p.groupSize = 64;
    Parsed parsed;
    const auto y = roundTrip(x, p, &parsed);
    for (size_t i = 0; i < x.size(); ++i) {
      if (i < 192) {
        EXPECT_TRUE(std::isnan(y[i])) << i;
      } else {
        EXPECT_NEAR(y[i], 0.5f, 1e-6f) << i;
      }
    }
  }
}

TEST(Quant, StochasticRoundingIsUnbiasedAndReproducible) {
  for (const Format& f : kFormats) {
    // One element fixes the range; the others sit between two codes.
    std::vector<float> x(4096, 0.3f);
    x[0] = 1.0f;
    x[1] = -1.0f;
    QuantParams p;
    p.bits = f.bits;
    p.scheme = f.scheme;
    p.groupSize = 4096;
    p.rounding = Rounding::kStochastic;
    double sum = 0.0;
    size_t samples = 0;
    double scale = 0.0;
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      p.seed = seed * 0x9e3779b97f4a7c15ull;
      Parsed parsed;
      const auto y = roundTrip(x, p, &parsed);
      scale = parsed.scales[0];
      for (size_t i = 2; i < y.size(); ++i, ++samples) sum += y[i];
      Parsed again;
      EXPECT_EQ(roundTrip(x, p, &again), y) << "same seed, same result";
    }
    // Each sample is one of two codes a step apart: standard deviation <= scale / 2.
    const double mean = sum / static_cast<double>(samples);
    const double tolerance = 5.0 * (scale / 2) / std::sqrt(static_cast<double>(samples));
    EXPECT_NEAR(mean, 0.3, tolerance) << "bits=" << f.bits << " scheme=" << int(f.scheme);
  }
}

// E[M^2] of M = max |X_i| over g iid N(0,1), and E[(max - min)^2], by quadrature of the
// exact order-statistic distributions.
double expectedAbsMaxSquared(int g) {
  double sum = 0.0;
  const double dt = 1e-3;
  for (double t = dt / 2; t < 12.0; t += dt)
    sum += 2 * t * (1 - std::pow(std::erf(t / std::sqrt(2.0)), g)) * dt;
  return sum;
}
double expectedRangeSquared(int g) {
  const auto phi = [](double v) { return std::exp(-v * v / 2) / std::sqrt(2 * M_PI); };
  const auto Phi = [](double v) { return 0.5 * std::erfc(-v / std::sqrt(2.0)); };
  const double h = 0.01;
  double sum = 0.0;
  for (double a = -7; a < 7; a += h)
    for (double b = a + h / 2; b < 7; b += h)
      sum += g * (g - 1.0) * phi(a) * phi(b) * std::pow(Phi(b) - Phi(a), g - 2) * (b - a) *
             (b - a) * h * h;
  return sum;
}

TEST(Quant, RelativeRmsErrorOnGaussianDataMatchesTheModel) {
  std::mt19937 rng(5);
  const uint32_t group = 256;
  const std::vector<float> x = sample("normal", 1 << 20, rng);
  for (const Format& f : kFormats) {
    if (f.bits == 2) continue;  // three or four levels: the error is not uniform over a step
    QuantParams p;
    p.bits = f.bits;
    p.scheme = f.scheme;
    p.groupSize = group;
    Parsed parsed;
    const auto y = roundTrip(x, p, &parsed);
    double err = 0.0, energy = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
      energy += double(x[i]) * x[i];
    }
    const double measured = std::sqrt(err / energy);
    // Rounding error uniform over one step: variance E[scale^2] / 12.
    const double levels =
        f.scheme == QuantScheme::kSymmetric ? (1 << (f.bits - 1)) - 1 : (1 << f.bits) - 1;
    const double spread = f.scheme == QuantScheme::kSymmetric ? expectedAbsMaxSquared(group)
                                                              : expectedRangeSquared(group);
    const double model = std::sqrt(spread / (levels * levels) / 12.0);
    EXPECT_NEAR(measured, model, 0.1 * model) << "bits=" << f.bits << " scheme=" << int(f.scheme);
    std::printf("relative RMS, %d-bit %s, group %u: measured %.5f, model %.5f\n", f.bits,
                f.scheme == QuantScheme::kSymmetric ? "symmetric" : "asymmetric", group, measured,
                model);
  }
}

TEST(Quant, HalfPrecisionInputAndOutput) {
  std::mt19937 rng(8);
  const std::vector<float> x = sample("normal", 10007, rng);
  std::vector<uint16_t> h(x.size()), b(x.size());
  std::vector<float> hx(x.size()), bx(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    h[i] = toFloat16(x[i]).bits;
    b[i] = toBfloat16(x[i]).bits;
    hx[i] = toFloat(float16_t{h[i]});
    bx[i] = toFloat(bfloat16_t{b[i]});
  }
  QuantParams p;
  for (auto [type, input, widened] :
       {std::tuple{DataType::kFloat16, &h, &hx}, std::tuple{DataType::kBfloat16, &b, &bx}}) {
    // Quantizing half input equals quantizing its exact float32 widening: in every format the
    // groups are widened a group ahead for, at group sizes of their own, and with a NaN in one
    // group, after which the next group's statistics are read before its codes.
    std::vector<uint16_t> poisoned = *input;
    poisoned[3000] = type == DataType::kFloat16 ? toFloat16(NAN).bits : toBfloat16(NAN).bits;
    std::vector<float> poisonedWide = *widened;
    poisonedWide[3000] = type == DataType::kFloat16 ? toFloat(float16_t{poisoned[3000]})
                                                    : toFloat(bfloat16_t{poisoned[3000]});
    for (auto [bits, scheme, groupSize] :
         {std::tuple{8, QuantScheme::kSymmetric, 512u}, std::tuple{4, QuantScheme::kSymmetric, 64u},
          std::tuple{2, QuantScheme::kSymmetric, 4096u},
          std::tuple{8, QuantScheme::kAsymmetric, 256u}}) {
      QuantParams q;
      q.bits = bits, q.scheme = scheme, q.groupSize = groupSize;
      const std::string what = std::string(dataTypeName(type)) + " bits=" + std::to_string(bits) +
                               " group " + std::to_string(groupSize);
      EXPECT_EQ(quantizeOrDie(input->data(), type, x.size(), q),
                quantizeOrDie(widened->data(), DataType::kFloat32, x.size(), q))
          << what;
      EXPECT_EQ(quantizeOrDie(poisoned.data(), type, x.size(), q),
                quantizeOrDie(poisonedWide.data(), DataType::kFloat32, x.size(), q))
          << what << ", a NaN";
    }
    // Half output is the float32 result rounded once to the half type.
    const auto m = quantizeOrDie(widened->data(), DataType::kFloat32, x.size(), p);
    std::vector<float> wide(x.size());
    std::vector<uint16_t> narrow(x.size());
    ASSERT_EQ(dequantize(m.data(), m.size(), wide.data(), DataType::kFloat32, x.size()),
              Status::kSuccess);
    ASSERT_EQ(dequantize(m.data(), m.size(), narrow.data(), type, x.size()), Status::kSuccess);
    for (size_t i = 0; i < x.size(); ++i) {
      const float got = type == DataType::kFloat16 ? toFloat(float16_t{narrow[i]})
                                                   : toFloat(bfloat16_t{narrow[i]});
      const double halfUlp = std::ldexp(std::fabs(wide[i]), type == DataType::kFloat16 ? -11 : -8) +
                             std::ldexp(1.0, -24);
      ASSERT_LE(std::fabs(got - wide[i]), halfUlp) << i;
    }
  }
}

// Groups of zeros of either sign store +0.0 scales and offsets whatever sign the kernel set's
// min and max come out with (SIMD and CUDA reductions order -0 and +0 differently), so that
// messages compare byte for byte across kernel sets and devices.
TEST(Quant, SignedZeroGroupsStorePositiveZeroParameters) {
  constexpr uint32_t kGroup = 32;
  std::vector<float> x(3 * kGroup, -0.0f);  // all -0, then -0/+0 alternating, then +0/-0
  for (size_t i = kGroup; i < x.size(); ++i)
    x[i] = ((i / kGroup == 1) == (i % 2 == 0)) ? -0.0f : 0.0f;
  std::vector<uint16_t> half(x.size());
  for (size_t i = 0; i < x.size(); ++i) half[i] = toFloat16(x[i]).bits;
  for (QuantScheme scheme : {QuantScheme::kSymmetric, QuantScheme::kAsymmetric}) {
    for (int bits : {8, 4, 2}) {
      const QuantParams p{bits, scheme, kGroup, Rounding::kNearestEven, 0};
      for (auto [type, input] : {std::pair<DataType, const void*>{DataType::kFloat32, x.data()},
                                 {DataType::kFloat16, half.data()}}) {
        const auto m = quantizeOrDie(input, type, x.size(), p);
        const QuantLayout layout = quantLayoutOf(x.size(), bits, scheme, kGroup);
        for (size_t at = layout.parametersOffset; at < layout.totalBytes; ++at) {
          ASSERT_EQ(m[at], 0) << "parameter byte " << at - layout.parametersOffset << ", "
                              << dataTypeName(type) << " int" << bits
                              << (scheme == QuantScheme::kSymmetric ? " sym" : " asym");
        }
      }
    }
  }
}

TEST(Quant, DequantizeAccumulateAddsInFloat32) {
  std::mt19937 rng(11);
  const std::vector<float> x = sample("normal", 5000, rng);
  QuantParams p;
  p.bits = 4;
  const auto m = quantizeOrDie(x.data(), DataType::kFloat32, x.size(), p);
  std::vector<float> y(x.size()), acc(x.size(), 1.5f);
  ASSERT_EQ(dequantize(m.data(), m.size(), y.data(), DataType::kFloat32, y.size()),
            Status::kSuccess);
  ASSERT_EQ(dequantizeAccumulate(m.data(), m.size(), acc.data(), acc.size()), Status::kSuccess);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(acc[i], 1.5f + y[i]);
}

// Values of `type` (its bits, two or four bytes each) from float32, and back, by the
// library's scalar conversions (Traits), not the kernels under test.
std::vector<unsigned char> stored(const std::vector<float>& x, DataType type) {
  std::vector<unsigned char> out(x.size() * elementSize(type));
  withType(type, [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < x.size(); ++i) {
      const T value = Traits<T>::store(x[i]);
      std::memcpy(out.data() + i * sizeof(T), &value, sizeof(T));
    }
  });
  return out;
}
float loaded(const std::vector<unsigned char>& v, DataType type, size_t i) {
  return withType(type, [&](auto zero) {
    using T = decltype(zero);
    T value;
    std::memcpy(&value, v.data() + i * sizeof(T), sizeof(T));
    return static_cast<float>(Traits<T>::load(value));
  });
}

constexpr DataType kFloatTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16};
constexpr DataType kResidualTypes[] = {DataType::kFloat32, DataType::kBfloat16, DataType::kInt8};

// Error feedback's residuals of one message of n elements, kept by their definition, computed
// here: float32 and bfloat16 as stored(); int8, each block of kResidualBlock from the first as
// its largest magnitude over 127 and the codes round(value x (127 / largest)), ties to even,
// in float32.
std::vector<unsigned char> keptResiduals(const std::vector<float>& lost, DataType type) {
  if (type != DataType::kInt8) return stored(lost, type);
  const size_t n = lost.size();
  std::vector<unsigned char> bytes(residualBytes(type, n, 1));
  const Residuals r = residualsIn(bytes.data(), type, n);
  for (size_t b = 0; b * kResidualBlock < n; ++b) {
    const size_t begin = b * kResidualBlock, end = std::min(n, begin + kResidualBlock);
    float largest = 0;
    for (size_t i = begin; i < end; ++i) largest = std::max(largest, std::fabs(lost[i]));
    r.scales[b] = largest / 127.0f;
    const float inverse = 127.0f / largest;
    for (size_t i = begin; i < end && largest > 0; ++i) {
      const float code = std::clamp(std::nearbyint(lost[i] * inverse), -127.0f, 127.0f);
      static_cast<int8_t*>(r.values)[i] = static_cast<int8_t>(code);
    }
  }
  return bytes;
}
// Residual i of those, as the next call adds it.
float residualAt(std::vector<unsigned char>& kept, DataType type, size_t n, size_t i) {
  if (type != DataType::kInt8) return loaded(kept, type, i);
  const Residuals r = residualsIn(kept.data(), type, n);
  return static_cast<float>(static_cast<int8_t*>(r.values)[i]) * r.scales[i / kResidualBlock];
}
// The most keeping residual i of `kept` may drop: half a bfloat16's last place, or half its
// int8 block's scale (with the division's and the product's float32 roundings).
double residualRounding(std::vector<unsigned char>& kept, DataType type, size_t n, size_t i,
                        float lost) {
  if (type != DataType::kInt8) return std::fabs(lost) * 0x1p-8;
  const Residuals r = residualsIn(kept.data(), type, n);
  return r.scales[i / kResidualBlock] * (0.5 + 1e-5) + std::fabs(lost) * 1e-7;
}

// The fused sum of a gathered change and its reference: the float32 sum rounded once to the
// type, computed here one element at a time, in place or not, with its copy.
TEST(Quant, StoreSumAsIsTheFloatSumRoundedOnceWithItsCopy) {
  std::mt19937 rng(21);
  const size_t n = 2 * kMaxGroupSize + 123;  // chunks and a remainder
  std::vector<float> x = sample("normal", n, rng), addend = sample("normal", n, rng);
  x[5] = -0.0f, addend[5] = 0.0f, x[6] = INFINITY, addend[7] = NAN, x[8] = 65000, addend[8] = 100;
  for (DataType type : kFloatTypes) {
    const auto in = stored(x, type);
    std::vector<float> expected(n);
    for (size_t i = 0; i < n; ++i) expected[i] = loaded(in, type, i) + addend[i];
    const auto want = stored(expected, type);
    std::vector<unsigned char> out(in.size()), copy(in.size());
    ASSERT_EQ(storeSumAs(in.data(), type, n, addend.data(), out.data(), copy.data()),
              Status::kSuccess);
    EXPECT_EQ(out, want) << dataTypeName(type);
    EXPECT_EQ(copy, want) << dataTypeName(type);
    auto inPlace = in;
    ASSERT_EQ(storeSumAs(inPlace.data(), type, n, addend.data(), inPlace.data(), nullptr),
              Status::kSuccess);
    EXPECT_EQ(inPlace, want) << dataTypeName(type) << " in place";
  }
  EXPECT_EQ(storeSumAs(x.data(), DataType::kInt32, n, addend.data(), x.data(), nullptr),
            Status::kInvalidArgument);
  EXPECT_NE(std::string(lastThreadError()).find("type=int32"), std::string::npos);
  EXPECT_EQ(storeSumAs(x.data(), DataType::kFloat32, n, nullptr, x.data(), nullptr),
            Status::kInvalidArgument);
}

// A gathered change decoded onto its reference: the decoded float32 change (dequantize, whose
// error is bounded above) plus the reference, summed and rounded once here element by element,
// for every format, type and smoothing, in place (as the weight differences' all-gather runs
// it) or not, with its copy.
TEST(Quant, DequantizeOntoIsTheDecodedChangePlusTheReferenceRoundedOnce) {
  std::mt19937 rng(24);
  const size_t n = 3 * 256 + 100;  // a short last group, which is not smoothed
  for (const Format& f : kFormats) {
    for (bool smoothing : {false, true}) {
      QuantParams p{f.bits, f.scheme, 256, Rounding::kNearestEven, 3};
      p.smoothing = smoothing;
      std::vector<float> change = sample("normal", n, rng);
      for (auto& c : change) c *= 0.01f;
      const auto message = quantizeOrDie(change.data(), DataType::kFloat32, n, p);
      std::vector<float> decoded(n);
      ASSERT_EQ(dequantize(message.data(), message.size(), decoded.data(), DataType::kFloat32, n),
                Status::kSuccess);
      for (DataType type : kFloatTypes) {
        const std::string what = std::string(dataTypeName(type)) + " int" + std::to_string(f.bits) +
                                 (smoothing ? " smoothed" : "");
        const auto reference = stored(sample("normal", n, rng), type);
        std::vector<float> sum(n);
        for (size_t i = 0; i < n; ++i) sum[i] = loaded(reference, type, i) + decoded[i];
        const auto want = stored(sum, type);
        std::vector<unsigned char> out(reference.size()), copy(reference.size());
        ASSERT_EQ(dequantizeOnto(message.data(), message.size(), n,
                                 SumTarget{reference.data(), type, out.data(), copy.data()}),
                  Status::kSuccess)
            << lastThreadError();
        EXPECT_EQ(out, want) << what;
        EXPECT_EQ(copy, want) << what;
        auto inPlace = reference;
        ASSERT_EQ(dequantizeOnto(message.data(), message.size(), n,
                                 SumTarget{inPlace.data(), type, inPlace.data(), nullptr}),
                  Status::kSuccess);
        EXPECT_EQ(inPlace, want) << what << " in place";
      }
    }
  }
  std::vector<float> x(100);
  const auto message = quantizeOrDie(x.data(), DataType::kFloat32, 100, QuantParams{});
  EXPECT_EQ(dequantizeOnto(message.data(), message.size(), 100,
                           SumTarget{x.data(), DataType::kInt8, x.data(), nullptr}),
            Status::kInvalidArgument);
  EXPECT_NE(std::string(lastThreadError()).find("type=int8"), std::string::npos);
  EXPECT_EQ(dequantizeOnto(message.data(), message.size(), 99,
                           SumTarget{x.data(), DataType::kFloat32, x.data(), nullptr}),
            Status::kInvalidArgument)
      << "count differs from the message's";
  EXPECT_EQ(dequantizeOnto(message.data(), message.size(), 100,
                           SumTarget{nullptr, DataType::kFloat32, x.data(), nullptr}),
            Status::kInvalidArgument);
}

// Error feedback against its definition, computed here: the message is the quantization of
// x + the residual as kept, the new residual what decoding it lost (to the bit, signed zeros
// too) rounded once to the residuals' type (exact for float32; int8 by blocks, keptResiduals),
// and over calls nothing is lost but what those roundings dropped: the decoded messages sum to
// the inputs' sum plus the first residual minus the last (fp64, to float32 rounding).
TEST(Quant, ErrorFeedbackQuantizesTheCompensatedValuesAndKeepsWhatWasLost) {
  std::mt19937 rng(22);
  const size_t n = kMaxGroupSize + 1000;
  for (const Format& f : kFormats) {
    for (DataType type : kFloatTypes) {
      for (bool smoothing : {false, true}) {
        for (DataType residualType : kResidualTypes) {
          QuantParams p{f.bits, f.scheme, 256, Rounding::kNearestEven, 9};
          p.smoothing = smoothing;
          const std::string what = std::string(dataTypeName(type)) + " int" +
                                   std::to_string(f.bits) + (smoothing ? " smoothed" : "") + ", " +
                                   dataTypeName(residualType) + " residuals";
          std::vector<float> start = sample("normal", n, rng), work(n);
          for (auto& r : start) r *= 0.01f;
          auto residual = keptResiduals(start, residualType);
          auto first = residual;
          const auto at = [&](std::vector<unsigned char>& kept, size_t i) {
            return residualAt(kept, residualType, n, i);
          };
          std::vector<double> sent(n, 0.0), given(n, 0.0), dropped(n, 0.0);
          std::vector<unsigned char> message(quantizedBytes(n, p));
          for (int call = 0; call < 4; ++call) {
            const auto in = stored(sample("normal", n, rng), type);
            std::vector<float> compensated(n), decoded(n), lost(n);
            for (size_t i = 0; i < n; ++i) {
              compensated[i] = loaded(in, type, i) + at(residual, i);
            }
            const auto want = quantizeOrDie(compensated.data(), DataType::kFloat32, n, p);
            ASSERT_EQ(dequantize(want.data(), want.size(), decoded.data(), DataType::kFloat32, n),
                      Status::kSuccess);
            for (size_t i = 0; i < n; ++i) lost[i] = -(-compensated[i] + decoded[i]);
            auto kept = keptResiduals(lost, residualType);
            ASSERT_EQ(
                quantizeWithFeedback(in.data(), type, n, p, message.data(), message.size(),
                                     residualsIn(residual.data(), residualType, n), work.data()),
                Status::kSuccess)
                << lastThreadError();
            ASSERT_EQ(message, want) << what << " call " << call;
            ASSERT_EQ(residual, kept) << what << " call " << call;
            for (size_t i = 0; i < n; ++i) {
              const double rounding = std::fabs(double(lost[i]) - at(kept, i));
              ASSERT_LE(rounding, residualRounding(kept, residualType, n, i, lost[i]))
                  << what << " element " << i << ": rounded once";
              sent[i] += decoded[i];
              given[i] += loaded(in, type, i);
              dropped[i] += rounding;
            }
          }
          for (size_t i = 0; i < n; ++i) {
            const double kept = given[i] + at(first, i) - at(residual, i);
            ASSERT_LE(std::fabs(sent[i] - kept), dropped[i] + 1e-5 * (1 + std::fabs(kept)))
                << what << " element " << i;
          }
        }
      }
    }
  }
  std::vector<float> x(100, 1.0f), residual(100, 0.0f);
  std::vector<unsigned char> message(quantizedBytes(100, QuantParams{}));
  EXPECT_EQ(quantizeWithFeedback(x.data(), DataType::kBfloat16, 100, QuantParams{}, message.data(),
                                 message.size(), Residuals{residual.data()}, x.data()),
            Status::kInvalidArgument)
      << "float32 work cannot be the bfloat16 input";
  std::vector<float> work(100);
  EXPECT_EQ(quantizeWithFeedback(x.data(), DataType::kFloat32, 100, QuantParams{}, message.data(),
                                 message.size(), Residuals{residual.data(), DataType::kFloat16},
                                 work.data()),
            Status::kInvalidArgument);
  EXPECT_NE(std::string(lastThreadError()).find("residual type=float16"), std::string::npos)
      << lastThreadError();
}

// int8 residuals: whatever the blocks' sizes and the messages' length (a multiple of
// kResidualBlock but the last of a block), every block of every owner's messages takes a
// scale of its own, inside what residualBytes counted, after the codes.
TEST(Quant, Int8ResidualBlocksOfEveryMessageTakeScalesOfTheirOwn) {
  for (size_t owners : {1, 2, 3, 5, 8}) {
    for (size_t each : {1, 31, 33, 1000}) {
      for (size_t chunk : {32, 64, 1024}) {
        std::vector<size_t> sizes;
        size_t count = 0;
        for (size_t k = 0; k < owners; ++k) count += sizes.emplace_back(each + k % 3);
        std::vector<unsigned char> storage(residualBytes(DataType::kInt8, count, owners));
        const Residuals all = residualsIn(storage.data(), DataType::kInt8, count);
        const auto* end = reinterpret_cast<const float*>(storage.data() + storage.size());
        std::set<const float*> taken;
        size_t offset = 0;
        for (size_t k = 0; k < owners; offset += sizes[k++]) {
          for (size_t first = offset; first < offset + sizes[k]; first += chunk) {
            const size_t length = std::min(chunk, offset + sizes[k] - first);
            const Residuals message = all.at(first, k);
            ASSERT_LE(static_cast<const char*>(message.values) + length,
                      reinterpret_cast<const char*>(all.scales));
            for (size_t b = 0; b * kResidualBlock < length; ++b) {
              const float* scale = message.scales + b;
              ASSERT_TRUE(scale >= all.scales && scale < end) << owners << " " << each;
              ASSERT_TRUE(taken.insert(scale).second)
                  << "owners " << owners << " of " << each << ", chunk " << chunk << ": owner " << k
                  << " at " << first << " block " << b << " shares a scale";
            }
          }
        }
      }
    }
  }
}

// What an int8 block keeps of values it cannot scale: NaN or Inf read back as NaN, as a float
// residual's NaN would, only in their block; zeros and values below 2^-119 as zeros.
TEST(Quant, Int8ResidualBlocksKeepNaNInTheirBlockAndDropTheTiny) {
  std::vector<float> lost(4 * kResidualBlock, 0.5f);
  lost[3] = NAN;
  lost[kResidualBlock + 1] = -INFINITY;
  std::fill_n(lost.begin() + 2 * kResidualBlock, kResidualBlock, 1e-38f);
  std::vector<unsigned char> kept(residualBytes(DataType::kInt8, lost.size(), 1));
  const Residuals r = residualsIn(kept.data(), DataType::kInt8, lost.size());
  keepInt8Residuals(lost.data(), lost.size(), r);
  std::vector<float> back(lost.size(), 0.0f);
  accumulateInt8Residuals(r, back.size(), back.data());
  for (size_t i = 0; i < lost.size(); ++i) {
    const size_t block = i / kResidualBlock;
    if (block < 2) {
      EXPECT_TRUE(std::isnan(back[i])) << i;
    } else {
      EXPECT_EQ(back[i], block == 2 ? 0.0f : 0.5f) << i;
    }
  }
}

// A device's kernels fall back on Kernels' unfused defaults for these three: they give the
// host's fused results to the bit.
TEST(Quant, UnfusedDefaultsGiveTheFusedKernelsResults) {
  std::mt19937 rng(23);
  const size_t n = kMaxGroupSize + 777;
  Kernels& unfused = unfusedHostKernels();
  Kernels& fused = hostKernels();
  for (DataType type : kFloatTypes) {
    const auto x = stored(sample("normal", n, rng), type);
    const std::vector<float> addend = sample("uniform", n, rng);
    std::vector<unsigned char> out1(x.size()), out2(x.size()), copy1(x.size()), copy2(x.size());
    auto scratch = addend;
    ASSERT_EQ(unfused.storeSumAs(x.data(), type, n, scratch.data(), out1.data(), copy1.data()),
              Status::kSuccess);
    scratch = addend;
    ASSERT_EQ(fused.storeSumAs(x.data(), type, n, scratch.data(), out2.data(), copy2.data()),
              Status::kSuccess);
    EXPECT_EQ(out1, out2) << dataTypeName(type);
    EXPECT_EQ(copy1, copy2) << dataTypeName(type);
    // A change from a reference, equal values (signed zeros) and specials among them.
    auto reference = sample("normal", n, rng);
    auto changed = sample("normal", n, rng);
    changed[3] = reference[3];
    changed[4] = reference[4] = -0.0f;
    changed[5] = NAN;
    reference[6] = INFINITY;
    const auto ref = stored(reference, type), now = stored(changed, type);
    std::vector<float> d1(n), d2(n), back(n);
    ASSERT_EQ(unfused.differenceAsFloat(now.data(), ref.data(), type, n, d1.data()),
              Status::kSuccess);
    ASSERT_EQ(fused.differenceAsFloat(now.data(), ref.data(), type, n, d2.data()),
              Status::kSuccess);
    EXPECT_EQ(0, std::memcmp(d1.data(), d2.data(), n * sizeof(float))) << dataTypeName(type);
    ASSERT_EQ(convertToFloat(now.data(), type, n, back.data()), Status::kSuccess);
    std::vector<float> from(n);
    ASSERT_EQ(convertToFloat(ref.data(), type, n, from.data()), Status::kSuccess);
    for (size_t i = 0; i < n; ++i) {
      const float expected = back[i] - from[i];
      if (!std::isnan(expected)) {
        ASSERT_EQ(floatBits(expected), floatBits(d2[i])) << dataTypeName(type) << " " << i;
      }
    }
    for (const Format& f : kFormats) {
      QuantParams p{f.bits, f.scheme, 128, Rounding::kStochastic, 5};
      p.smoothing = f.bits != 8;
      std::vector<unsigned char> m1(quantizedBytes(n, p)), m2(m1.size());
      for (DataType kept : kResidualTypes) {
        auto r1 = keptResiduals(addend, kept), r2 = r1;
        std::vector<float> w1(n), w2(n);
        ASSERT_EQ(unfused.quantizeWithFeedback(x.data(), type, n, p, m1.data(), m1.size(),
                                               residualsIn(r1.data(), kept, n), w1.data()),
                  Status::kSuccess);
        ASSERT_EQ(fused.quantizeWithFeedback(x.data(), type, n, p, m2.data(), m2.size(),
                                             residualsIn(r2.data(), kept, n), w2.data()),
                  Status::kSuccess);
        EXPECT_EQ(m1, m2) << dataTypeName(type) << " int" << f.bits << " " << dataTypeName(kept);
        EXPECT_EQ(r1, r2) << dataTypeName(type) << " " << dataTypeName(kept);
      }
      std::vector<unsigned char> sum1 = x, sum2 = x;
      std::vector<float> work(n);
      ASSERT_EQ(unfused.dequantizeOnto(m1.data(), m1.size(), p, n,
                                       SumTarget{sum1.data(), type, sum1.data(), copy1.data()},
                                       work.data()),
                Status::kSuccess);
      ASSERT_EQ(
          fused.dequantizeOnto(m1.data(), m1.size(), p, n,
                               SumTarget{sum2.data(), type, sum2.data(), copy2.data()}, nullptr),
          Status::kSuccess)
          << "the fused kernel needs no work space";
      EXPECT_EQ(sum1, sum2) << dataTypeName(type) << " int" << f.bits;
      EXPECT_EQ(copy1, copy2) << dataTypeName(type) << " int" << f.bits;
    }
  }
}

TEST(Quant, MalformedOrShortMessagesAreRejectedWithoutOverreading) {
  std::vector<float> x(1000, 1.0f);
  QuantParams p;
  p.bits = 4;
  p.scheme = QuantScheme::kAsymmetric;
  p.groupSize = 64;
  const auto m = quantizeOrDie(x.data(), DataType::kFloat32, x.size(), p);
  std::vector<float> y(x.size());
  for (size_t length = 0; length < m.size(); ++length) {
    // An exact-size heap copy: AddressSanitizer reports any read past its end.
    std::vector<unsigned char> shortCopy(m.begin(), m.begin() + static_cast<long>(length));
    ASSERT_EQ(
        dequantize(shortCopy.data(), shortCopy.size(), y.data(), DataType::kFloat32, y.size()),
        Status::kInvalidArgument)
        << length;
  }
  const auto corrupt = [&](size_t at, unsigned char value) {
    auto bad = m;
    bad[at] = value;
    return dequantize(bad.data(), bad.size(), y.data(), DataType::kFloat32, y.size());
  };
  EXPECT_EQ(corrupt(0, 0), Status::kInvalidArgument);      // magic
  EXPECT_EQ(corrupt(5, 3), Status::kInvalidArgument);      // bits
  EXPECT_EQ(corrupt(6, 9), Status::kInvalidArgument);      // scheme
  EXPECT_EQ(corrupt(8, 65), Status::kInvalidArgument);     // group size not a power of two
  EXPECT_EQ(corrupt(23, 0xff), Status::kInvalidArgument);  // count far beyond the buffer
  EXPECT_NE(lastThreadError().find("count="), std::string::npos) << lastThreadError();
  EXPECT_EQ(dequantize(m.data(), m.size(), y.data(), DataType::kFloat32, 999),
            Status::kInvalidArgument);
  EXPECT_EQ(dequantize(m.data(), m.size(), y.data(), DataType::kInt32, 1000),
            Status::kInvalidArgument);
  p.groupSize = 48;
  std::vector<unsigned char> out(100000);
  EXPECT_EQ(quantize(x.data(), DataType::kFloat32, x.size(), p, out.data(), out.size()),
            Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("groupSize=48"), std::string::npos);
  p.groupSize = 64;
  EXPECT_EQ(quantize(x.data(), DataType::kFloat32, x.size(), p, out.data(), 10),
            Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("capacity=10"), std::string::npos);
}

// Inside a collective a message is decoded against the plan's format: a message of another
// format (or count) is refused before anything is decoded.
TEST(Quant, KernelsRefuseAMessageOfAnotherFormatThanThePlans) {
  const std::vector<float> x(1000, 0.25f);
  QuantParams p;
  p.bits = 8;
  p.groupSize = 128;
  const auto m = quantizeOrDie(x.data(), DataType::kFloat32, x.size(), p);
  std::vector<float> y(x.size(), -1.0f);
  Kernels& k = hostKernels();
  ASSERT_EQ(k.dequantize(m.data(), m.size(), p, y.data(), DataType::kFloat32, y.size()),
            Status::kSuccess);
  EXPECT_EQ(y[999], 0.25f);
  QuantParams other = p;
  other.bits = 4;
  std::fill(y.begin(), y.end(), -1.0f);
  EXPECT_EQ(k.dequantize(m.data(), m.size(), other, y.data(), DataType::kFloat32, y.size()),
            Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("INT8 scheme 0 group 128, where the plan expects 1000 "
                                   "elements, INT4"),
            std::string::npos)
      << lastThreadError();
  EXPECT_EQ(y[0], -1.0f) << "nothing is decoded from a message of another format";
  other = p;
  other.groupSize = 256;
  EXPECT_EQ(k.dequantizeAccumulate(m.data(), m.size(), other, y.data(), y.size()),
            Status::kInvalidArgument);
  EXPECT_EQ(k.dequantizeAccumulate(m.data(), m.size(), p, y.data(), 999), Status::kInvalidArgument);
  EXPECT_EQ(k.dequantizeOnto(m.data(), m.size(), other, y.size(),
                             SumTarget{y.data(), DataType::kFloat32, y.data(), nullptr}, nullptr),
            Status::kInvalidArgument);
  EXPECT_EQ(y[0], -1.0f) << "nothing is added from a message of another format";
}

class SimdKernels : public ::testing::TestWithParam<const QuantKernels* (*)()> {};

// The SIMD set packs `codes` as `bits`-bit codes (4: nibbles, 2: crumbs) to the reference's
// bytes, and, where the codes fit in `bits`, unpacks them back, signed or not, to the bit.
void expectPackingMatches(const QuantKernels& ref, const QuantKernels& simd, int bits,
                          const std::vector<uint8_t>& codes, int lo, int hi) {
  const auto pack = bits == 4 ? &QuantKernels::packNibbles : &QuantKernels::packCrumbs;
  const auto unpack = bits == 4 ? &QuantKernels::unpackNibbles : &QuantKernels::unpackCrumbs;
  const size_t n = codes.size(), perByte = 8 / static_cast<size_t>(bits);
  const std::string what = "bits=" + std::to_string(bits) + " n=" + std::to_string(n);
  std::vector<uint8_t> p1((n + perByte - 1) / perByte), p2(p1.size());
  (ref.*pack)(codes.data(), n, p1.data());
  (simd.*pack)(codes.data(), n, p2.data());
  EXPECT_EQ(p1, p2) << "pack " << what << " lo=" << lo;
  if (hi >= (1 << bits)) return;  // the codes do not come back from `bits` bits
  for (bool isSigned : {false, true}) {
    std::vector<uint8_t> u1(n), u2(n);
    (ref.*unpack)(p1.data(), n, isSigned, u1.data());
    (simd.*unpack)(p1.data(), n, isSigned, u2.data());
    EXPECT_EQ(u1, u2) << "unpack " << what << " signed=" << isSigned;
    if (isSigned == (lo < 0)) {
      EXPECT_EQ(u2, codes) << "round trip " << what << " lo=" << lo;
    }
  }
}

// The same with the next group given in half precision (`next` rounded to bfloat16 and to
// float16): the codes, the next group widened, and its statistics as the reference's widening,
// codes and absmaxStats give them.
void expectBesideWidenAbsmaxMatches(const QuantKernels& ref, const QuantKernels& simd,
                                    const std::vector<float>& x, const std::vector<float>& next,
                                    int hi, const std::string& what) {
  const size_t n = x.size(), nextN = next.size();
  for (bool bfloat16 : {true, false}) {
    const std::string which = what + (bfloat16 ? " bfloat16" : " float16");
    std::vector<uint16_t> halves(nextN);
    (bfloat16 ? ref.narrowBfloat16 : ref.narrowFloat16)(next.data(), nextN, halves.data());
    std::vector<float> expectedWide(nextN), gotWide(nextN + 1, 3.0f);
    (bfloat16 ? ref.widenBfloat16 : ref.widenFloat16)(halves.data(), nextN, expectedWide.data());
    std::vector<uint8_t> expected(n), got(n, 0xa5);
    GroupStats expectedStats{}, gotStats{};
    ref.codesNearest(x.data(), n, 0.0f, 13.7f, 0.0f, -hi, hi, expected.data());
    ref.absmaxStats(expectedWide.data(), nextN, &expectedStats);
    simd.codesSymmetricBesideWidenAbsmax(x.data(), n, 13.7f, -hi, hi, got.data(), halves.data(),
                                         bfloat16, nextN, gotWide.data(), &gotStats);
    EXPECT_EQ(expected, got) << which;
    EXPECT_EQ(3.0f, gotWide[nextN]) << which << ": written past the group";
    gotWide.pop_back();
    const auto sameBits = [](float a, float b) { return floatBits(a) == floatBits(b); };
    EXPECT_TRUE(std::equal(expectedWide.begin(), expectedWide.end(), gotWide.begin(), sameBits))
        << which;
    EXPECT_EQ(floatBits(expectedStats.absmax), floatBits(gotStats.absmax)) << which;
    EXPECT_EQ(expectedStats.nonFinite, gotStats.nonFinite) << which;
  }
}

// The set's symmetric codes of `x` with the statistics of a next group read beside them equal
// the reference's two calls: next groups longer, as long and shorter (a message's last), with
// NaN, +-Inf or nothing but zeros, for INT8, INT4 and INT2's ranges.
void expectBesideAbsmaxMatches(const QuantKernels& ref, const QuantKernels& simd,
                               const std::vector<float>& x) {
  const size_t n = x.size();
  for (size_t nextN : {n + 40, n, n / 2, n > 33 ? n - 33 : 0}) {
    for (const std::string kind : {"finite", "nan", "inf", "-inf", "zeros"}) {
      std::vector<float> next(nextN);
      for (size_t i = 0; i < nextN; ++i) {
        next[i] = kind == "zeros" ? -0.0f : std::sin(0.37f * static_cast<float>(i)) * 5.0f;
      }
      const bool nonFinite = kind == "nan" || kind == "inf" || kind == "-inf";
      if (nonFinite && nextN > 0) next[nextN * 2 / 3] = std::stof(kind);
      for (int hi : {127, 7, 1}) {
        const std::string what = "n=" + std::to_string(n) + " nextN=" + std::to_string(nextN) +
                                 " " + kind + " hi=" + std::to_string(hi);
        std::vector<uint8_t> expected(n), got(n, 0xa5);
        GroupStats expectedStats{}, gotStats{};
        ref.codesNearest(x.data(), n, 0.0f, 13.7f, 0.0f, -hi, hi, expected.data());
        ref.absmaxStats(next.data(), nextN, &expectedStats);
        simd.codesSymmetricBesideAbsmax(x.data(), n, 13.7f, -hi, hi, got.data(), next.data(), nextN,
                                        &gotStats);
        EXPECT_EQ(expected, got) << what;
        EXPECT_EQ(floatBits(expectedStats.absmax), floatBits(gotStats.absmax)) << what;
        EXPECT_EQ(expectedStats.nonFinite, gotStats.nonFinite) << what;
        EXPECT_EQ(nonFinite && nextN > 0, gotStats.nonFinite) << what;
        expectBesideWidenAbsmaxMatches(ref, simd, x, next, hi, what);
      }
    }
  }
}

TEST_P(SimdKernels, MatchScalarBitForBit) {
  const QuantKernels* simd = GetParam()();
  if (simd == nullptr) GTEST_SKIP() << "this CPU lacks the instruction set";
  const QuantKernels& ref = scalarQuantKernels();
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (size_t n : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 128, 256, 512, 1000, 4096}) {
    std::vector<float> x(n);
    for (auto& v : x) v = normal(rng);
    if (n > 3) x[2] = -0.0f, x[3] = 1e-40f;
    if (n > 5) x[4] = 1e30f, x[5] = -3e38f;  // codes far outside int32 clamp too
    GroupStats a, b;
    ref.stats(x.data(), n, &a);
    simd->stats(x.data(), n, &b);
    EXPECT_EQ(a.absmax, b.absmax);
    EXPECT_EQ(a.min, b.min);
    EXPECT_EQ(a.max, b.max);
    EXPECT_EQ(a.nonFinite, b.nonFinite);
    float largest = 0.0f;
    for (float v : x) largest = std::max(largest, std::fabs(v));
    GroupStats symmetric;
    ref.absmaxStats(x.data(), n, &symmetric);
    EXPECT_EQ(largest, symmetric.absmax) << "n=" << n;
    simd->absmaxStats(x.data(), n, &symmetric);
    EXPECT_EQ(largest, symmetric.absmax) << "n=" << n;
    EXPECT_FALSE(symmetric.nonFinite);
    for (float special : {NAN, INFINITY, -INFINITY}) {
      for (size_t at : {size_t{0}, n / 2, n - 1}) {
        std::vector<float> y = x;
        y[at] = special;
        simd->stats(y.data(), n, &b);
        EXPECT_TRUE(b.nonFinite) << special << " at " << at << " of n=" << n;
        simd->absmaxStats(y.data(), n, &symmetric);
        EXPECT_TRUE(symmetric.nonFinite) << special << " at " << at << " of n=" << n;
      }
    }
    expectBesideAbsmaxMatches(ref, *simd, x);
    for (auto [lo, hi, offset, center] :
         {std::tuple{-127, 127, 0.0f, 0.0f}, std::tuple{0, 255, -9.0f, 127.5f},
          std::tuple{-7, 7, 0.0f, 0.0f}, std::tuple{0, 15, -9.0f, 7.5f},
          std::tuple{-1, 1, 0.0f, 0.0f}, std::tuple{0, 3, -9.0f, 1.5f}}) {
      // The reference's codes of `values`, nearest then stochastic (returned), each compared
      // with the kernel set's.
      const auto codesOf = [&](const std::vector<float>& values, const char* what) {
        std::vector<uint8_t> expected(n), got(n);
        ref.codesNearest(values.data(), n, offset, 13.7f, center, lo, hi, expected.data());
        simd->codesNearest(values.data(), n, offset, 13.7f, center, lo, hi, got.data());
        EXPECT_EQ(expected, got) << "nearest, " << what << ", n=" << n << " lo=" << lo;
        ref.codesStochastic(values.data(), n, offset, 13.7f, center, lo, hi, 77, 12345,
                            expected.data());
        simd->codesStochastic(values.data(), n, offset, 13.7f, center, lo, hi, 77, 12345,
                              got.data());
        EXPECT_EQ(expected, got) << "stochastic, " << what << ", n=" << n << " lo=" << lo;
        return expected;
      };
      const std::vector<uint8_t> c1 = codesOf(x, "finite values");
      // The kernels clamp NaN and +-Inf as the reference does, wherever they fall.
      std::vector<float> y = x;
      for (size_t at = 1; at < n; at += 5)
        y[at] = at % 3 == 0 ? NAN : at % 3 == 1 ? -INFINITY : INFINITY;
      codesOf(y, "non-finite values");
      expectPackingMatches(ref, *simd, 4, c1, lo, hi);
      expectPackingMatches(ref, *simd, 2, c1, lo, hi);
      std::vector<float> y1(n), y2(n);
      ref.decodeSigned(reinterpret_cast<const int8_t*>(c1.data()), n, 0.37f, y1.data());
      simd->decodeSigned(reinterpret_cast<const int8_t*>(c1.data()), n, 0.37f, y2.data());
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), 4 * n));
      ref.decodeUnsigned(c1.data(), n, 0.37f, offset, center, y1.data());
      simd->decodeUnsigned(c1.data(), n, 0.37f, offset, center, y2.data());
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), 4 * n));
    }
    if (n >= 32 && (n & (n - 1)) == 0) {  // smoothing's butterflies, on a group's sizes
      std::vector<float> h1 = x, h2 = x;
      ref.walshHadamard(h1.data(), static_cast<uint32_t>(n));
      simd->walshHadamard(h2.data(), static_cast<uint32_t>(n));
      EXPECT_EQ(0, std::memcmp(h1.data(), h2.data(), 4 * n)) << "walshHadamard n=" << n;
      std::vector<float> s1 = x, s2 = x;
      s1[1] = s2[1] = NAN;
      for (uint64_t first : {uint64_t{0}, uint64_t{4096} * 77}) {
        ref.flipSigns(s1.data(), static_cast<uint32_t>(n), 0x5eed, first);
        simd->flipSigns(s2.data(), static_cast<uint32_t>(n), 0x5eed, first);
        EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), 4 * n)) << "flipSigns n=" << n;
      }
    }
    // Conversions over every 16-bit pattern slice and specials.
    std::vector<uint16_t> bits(n), h1(n), h2(n);
    for (size_t i = 0; i < n; ++i) bits[i] = static_cast<uint16_t>(rng());
    std::vector<float> w1(n), w2(n);
    ref.widenFloat16(bits.data(), n, w1.data());
    simd->widenFloat16(bits.data(), n, w2.data());
    EXPECT_EQ(0, std::memcmp(w1.data(), w2.data(), 4 * n));
    ref.widenBfloat16(bits.data(), n, w1.data());
    simd->widenBfloat16(bits.data(), n, w2.data());
    EXPECT_EQ(0, std::memcmp(w1.data(), w2.data(), 4 * n));
    std::vector<float> f(n);
    for (size_t i = 0; i < n; ++i) f[i] = bitsToFloat(static_cast<uint32_t>(rng()));
    if (n > 1) f[0] = NAN, f[1] = -INFINITY;
    ref.narrowFloat16(f.data(), n, h1.data());
    simd->narrowFloat16(f.data(), n, h2.data());
    EXPECT_EQ(h1, h2) << "float16 n=" << n;
    ref.narrowBfloat16(f.data(), n, h1.data());
    simd->narrowBfloat16(f.data(), n, h2.data());
    EXPECT_EQ(h1, h2) << "bfloat16 n=" << n;
    std::vector<float> acc1(n, 1.25f), acc2(n, 1.25f);
    ref.accumulate(acc1.data(), x.data(), n);
    simd->accumulate(acc2.data(), x.data(), n);
    EXPECT_EQ(acc1, acc2);
    // A reference plus a change, every 16-bit pattern slice as the reference and the float32
    // patterns above (NaN, -Inf) as the change, against the three kernels it stands for.
    std::vector<uint16_t> sum1(n), sum2(n), sumCopy(n);
    ref.sumIntoBfloat16(bits.data(), f.data(), n, sum1.data(), nullptr);
    simd->sumIntoBfloat16(bits.data(), f.data(), n, sum2.data(), sumCopy.data());
    EXPECT_EQ(sum1, sum2) << "sumIntoBfloat16 n=" << n;
    EXPECT_EQ(sum1, sumCopy) << "sumIntoBfloat16's copy n=" << n;
    ref.widenBfloat16(bits.data(), n, w1.data());
    ref.accumulate(w1.data(), f.data(), n);
    ref.narrowBfloat16(w1.data(), n, h1.data());
    EXPECT_EQ(h1, sum1) << "sumIntoBfloat16 against widen, accumulate, narrow n=" << n;
    // Divisions of ordinary values, specials and subnormals, against the division itself.
    for (float divisor : {3.0f, 4.0f, 7.0f, 1e-30f}) {
      std::vector<float> d1 = f, d2 = f;
      ref.divide(d1.data(), n, divisor);
      simd->divide(d2.data(), n, divisor);
      EXPECT_EQ(0, std::memcmp(d1.data(), d2.data(), 4 * n)) << "divide n=" << n;
      for (size_t i = 0; i < n; ++i) {
        const float expected = f[i] / divisor;
        if (!std::isnan(expected)) {
          ASSERT_EQ(floatBits(expected), floatBits(d1[i])) << i;
        }
      }
    }
    // int8 residual blocks: ordinary blocks, and ones holding NaN, Inf, only zeros, or values
    // whose inverse overflows.
    auto residuals = x;
    if (n > 40) residuals[33] = NAN;       // the second block
    if (n > 70) residuals[65] = INFINITY;  // the third
    if (n > 100) std::fill_n(residuals.begin() + 96, 32, 0.0f);
    if (n > 140) std::fill_n(residuals.begin() + 128, 8, 1e-38f);
    // The same far into the message, and in its last full block before a tail (n = 1000).
    if (n > 600) residuals[600] = -INFINITY, residuals[700] = NAN;
    if (n > 900) std::fill_n(residuals.begin() + 800, 32, -0.0f);
    if (n > 990) std::fill_n(residuals.begin() + 960, 32, 3e-39f);
    const size_t blocks = (n + kResidualBlock - 1) / kResidualBlock;
    std::vector<int8_t> r1(n), r2(n);
    std::vector<float> sc1(blocks), sc2(blocks);
    ref.codeResidualBlocks(residuals.data(), n, r1.data(), sc1.data());
    simd->codeResidualBlocks(residuals.data(), n, r2.data(), sc2.data());
    EXPECT_EQ(r1, r2) << "residual codes n=" << n;
    EXPECT_EQ(0, std::memcmp(sc1.data(), sc2.data(), 4 * blocks)) << "residual scales n=" << n;
    std::fill(acc1.begin(), acc1.end(), 1.25f);
    std::fill(acc2.begin(), acc2.end(), 1.25f);
    ref.addResidualBlocks(r1.data(), sc1.data(), n, acc1.data());
    simd->addResidualBlocks(r1.data(), sc1.data(), n, acc2.data());
    EXPECT_EQ(0, std::memcmp(acc1.data(), acc2.data(), 4 * n)) << "residuals added n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Quant, SimdKernels,
                         ::testing::Values(&avx2QuantKernels, &avx512QuantKernels),
                         [](const auto& info) { return info.index == 0 ? "avx2" : "avx512"; });

// Smoothing rotates a full group x of n values to y = H D x / n and decodes x^ = D H y^: with
// ||H v|| = sqrt(n) ||v||, the group's error ||x^ - x||_2 = sqrt(n) ||y^ - y||_2 is at most
// n * step(y) / 2 (a step with stochastic rounding), plus the butterflies' rounding.
double smoothedGroupBound(double scale, size_t n, double norm, Rounding rounding) {
  const double step = rounding == Rounding::kNearestEven ? scale / 2 : scale;
  return static_cast<double>(n) * step + 4 * std::log2(double(n)) * 0x1p-24 * norm * std::sqrt(n);
}

struct GroupErrors {
  std::vector<double> error, bound;  // per group: ||x^ - x||_2 and the bound above
};

GroupErrors smoothedErrors(const std::vector<float>& x, const QuantParams& p) {
  Parsed parsed;
  const std::vector<float> y = roundTrip(x, p, &parsed);
  GroupErrors e;
  for (size_t g = 0; g < parsed.scales.size(); ++g) {
    const size_t first = g * p.groupSize, last = std::min(x.size(), first + p.groupSize);
    double err = 0, norm = 0;
    for (size_t i = first; i < last; ++i) {
      err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
      norm += double(x[i]) * x[i];
    }
    e.error.push_back(std::sqrt(err));
    e.bound.push_back(
        smoothedGroupBound(parsed.scales[g], last - first, std::sqrt(norm), p.rounding));
  }
  return e;
}

TEST(QuantSmoothing, GroupErrorWithinTheRotatedBound) {
  std::mt19937 rng(31);
  for (const Format& f : kFormats) {
    for (uint32_t group : {32u, 256u, 4096u}) {
      for (const char* d : {"normal", "uniform", "heavy", "zeros"}) {
        for (Rounding rounding : {Rounding::kNearestEven, Rounding::kStochastic}) {
          QuantParams p;
          p.bits = f.bits;
          p.scheme = f.scheme;
          p.groupSize = group;
          p.rounding = rounding;
          p.smoothing = true;
          p.seed = rng();
          // Full groups and a short last one, which is left unrotated.
          const std::vector<float> x = sample(d, 3 * group + 17, rng);
          const GroupErrors e = smoothedErrors(x, p);
          for (size_t g = 0; g + 1 < e.error.size(); ++g) {
            EXPECT_LE(e.error[g], e.bound[g]) << d << " bits=" << f.bits << " group " << g;
          }
          const auto m = quantizeOrDie(x.data(), DataType::kFloat32, x.size(), p);
          std::vector<float> y(x.size());
          ASSERT_EQ(dequantize(m.data(), m.size(), y.data(), DataType::kFloat32, y.size()),
                    Status::kSuccess);
          Parsed parsed = parse(m, x.size(), p);
          for (size_t i = x.size() - 17; i < x.size(); ++i) {
            const double offset = parsed.offsets.empty() ? 0.0 : parsed.offsets.back();
            EXPECT_LE(std::fabs(double(x[i]) - y[i]),
                      bound(parsed.scales.back(), x[i], offset, rounding))
                << "the short last group keeps the per-element bound";
          }
        }
      }
    }
  }
}

TEST(QuantSmoothing, SpreadsAnOutlierAndCutsItsGroupsInt4Error) {
  std::mt19937 rng(12);
  std::vector<float> x = sample("normal", 128 * 256, rng);
  for (size_t g = 0; g < x.size(); g += 256) x[g + rng() % 256] = 60.0f;  // one per group
  QuantParams p;
  p.bits = 4;
  p.groupSize = 256;
  Parsed parsed;
  const auto plain = roundTrip(x, p, &parsed);
  p.smoothing = true;
  p.seed = 99;
  const auto smoothed = roundTrip(x, p, &parsed);
  double plainErr = 0, smoothedErr = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    plainErr += (double(x[i]) - plain[i]) * (double(x[i]) - plain[i]);
    smoothedErr += (double(x[i]) - smoothed[i]) * (double(x[i]) - smoothed[i]);
  }
  // Unsmoothed, the outlier's scale (60/7) rounds every N(0,1) value to 0: the error is the
  // group's energy. Smoothed, the outlier becomes +-60/256 in every element.
  std::printf("INT4 groups of 256 with an outlier: RMS error %.4f plain, %.4f smoothed\n",
              std::sqrt(plainErr / x.size()), std::sqrt(smoothedErr / x.size()));
  EXPECT_LT(smoothedErr, 0.25 * plainErr);
}

TEST(QuantSmoothing, HeaderCarriesItAndAPlanWithoutItRefusesTheMessage) {
  std::mt19937 rng(4);
  const std::vector<float> x = sample("normal", 1000, rng);
  QuantParams p;
  p.bits = 4;
  p.groupSize = 128;
  p.smoothing = true;
  p.seed = 0x1234567812345678ull;
  auto m = quantizeOrDie(x.data(), DataType::kFloat32, x.size(), p);
  QuantHeader h;
  ASSERT_EQ(readQuantHeader(m.data(), m.size(), &h), Status::kSuccess);
  EXPECT_EQ(h.flags, kQuantSmoothed);
  EXPECT_EQ(h.smoothingSeed, 0x12345678u);
  std::vector<float> y(x.size());
  QuantParams unsmoothed = p;
  unsmoothed.smoothing = false;
  EXPECT_EQ(hostKernels().dequantize(m.data(), m.size(), unsmoothed, y.data(), DataType::kFloat32,
                                     y.size()),
            Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("smoothed"), std::string::npos) << lastThreadError();
  EXPECT_EQ(hostKernels().dequantize(m.data(), m.size(), p, y.data(), DataType::kFloat32, y.size()),
            Status::kSuccess);
  m[offsetof(QuantHeader, flags)] |= 0x80;
  EXPECT_EQ(readQuantHeader(m.data(), m.size(), &h), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("flags=0x81"), std::string::npos) << lastThreadError();
}

TEST(QuantSmoothing, RotationIsExactlyInvertibleOnPowersOfTwo) {
  std::mt19937 rng(3);
  for (uint32_t n : {32u, 1024u}) {
    // Small integers: every butterfly sum is exact, so the round trip is bit for bit.
    std::vector<float> x(n), y;
    for (auto& v : x) v = static_cast<float>(static_cast<int>(rng() % 64) - 32);
    y = x;
    smoothGroup(y.data(), n, 7, 4096);
    double energyX = 0, energyY = 0;
    for (uint32_t i = 0; i < n; ++i) energyX += double(x[i]) * x[i], energyY += double(y[i]) * y[i];
    EXPECT_DOUBLE_EQ(energyY * n, energyX) << "y = H D x / n: ||y||^2 = ||x||^2 / n";
    unsmoothGroup(y.data(), n, 7, 4096);
    EXPECT_EQ(x, y);
    // Another group's signs differ.
    std::vector<float> other = x;
    smoothGroup(other.data(), n, 7, 4096 + n);
    smoothGroup(x.data(), n, 7, 4096);
    EXPECT_NE(x, other);
  }
}

TEST(QuantSmoothing, CpuRotationIsTheDefinitionsToTheBit) {
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (uint32_t n = 32; n <= 4096; n *= 2) {
    std::vector<float> x(n);
    for (auto& v : x) v = normal(rng) * (rng() % 7 == 0 ? 1e-30f : 1.0f);
    x[1] = -0.0f, x[2] = 1e-41f, x[3] = INFINITY;
    std::vector<float> definition = x, host = x;
    smoothGroup(definition.data(), n, 99, 8192);
    smoothGroupHost(host.data(), n, 99, 8192);
    EXPECT_EQ(0, std::memcmp(definition.data(), host.data(), 4 * n)) << "smooth n=" << n;
    unsmoothGroup(definition.data(), n, 99, 8192);
    unsmoothGroupHost(host.data(), n, 99, 8192);
    EXPECT_EQ(0, std::memcmp(definition.data(), host.data(), 4 * n)) << "unsmooth n=" << n;
  }
}

}  // namespace
}  // namespace zccl
