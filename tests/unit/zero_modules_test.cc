// The demo models' hand-written backward passes against central finite differences of a
// random projection of their output, for parameters and inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/half.h"
#include "zero/affine.h"
#include "zero/modules.h"

namespace zccl::zero {
namespace {

// L = sum of y * R: dL/dy = R.
double projection(const Tensor& y, const std::vector<float>& r) {
  double sum = 0;
  for (size_t i = 0; i < y.data.size(); ++i) sum += static_cast<double>(y.data[i]) * r[i];
  return sum;
}

struct Case {
  Module* module;
  Batch batch;
  Tensor x;  // empty for modules that read the batch
};

// Compares analytic and numeric derivatives at `samples` random parameters and inputs.
void checkGradients(const Case& c, uint64_t seed, int samples = 120) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<float> params(c.module->numParams());
  c.module->initParams(params.data(), seed);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  for (float& p : params) p += noise(rng);  // off the symmetric initial values
  Tensor y;
  Tensor x = c.x;
  c.module->forward(Weights(params), c.batch, x, &y);
  std::vector<float> r(y.data.size());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : r) v = uniform(rng);
  Tensor dy = y, dx;
  dy.data = r;
  // The backward overwrites: every element written, none left as it was.
  std::vector<float> dparams(params.size(), std::nanf(""));
  Gradients written(&dparams);
  c.module->backward(Weights(params), c.batch, dy, &dx, &written);
  EXPECT_EQ(written.error(), "");
  for (size_t i = 0; i < dparams.size(); ++i) {
    ASSERT_TRUE(std::isfinite(dparams[i])) << c.module->name() << ": element " << i << " unwritten";
  }

  const auto loss = [&](const std::vector<float>& p, const Tensor& in) {
    Tensor out;
    c.module->forward(Weights(p), c.batch, in, &out);
    return projection(out, r);
  };
  const float eps = 1e-2f;
  const auto expectClose = [&](double analytic, double numeric, const char* what, size_t i) {
    EXPECT_NEAR(analytic, numeric, 5e-3 + 2e-2 * std::fabs(numeric))
        << c.module->name() << " " << what << " " << i;
  };
  std::uniform_int_distribution<size_t> pickParam(0, params.size() - 1);
  for (int s = 0; s < samples; ++s) {
    const size_t i = pickParam(rng);
    std::vector<float> plus = params, minus = params;
    plus[i] += eps;
    minus[i] -= eps;
    expectClose(dparams[i], (loss(plus, x) - loss(minus, x)) / (2 * eps), "param", i);
  }
  if (x.data.empty()) return;
  std::uniform_int_distribution<size_t> pickInput(0, x.data.size() - 1);
  for (int s = 0; s < samples; ++s) {
    const size_t i = pickInput(rng);
    Tensor plus = x, minus = x;
    plus.data[i] += eps;
    minus.data[i] -= eps;
    expectClose(dx.data[i], (loss(params, plus) - loss(params, minus)) / (2 * eps), "input", i);
  }
}

Tensor randomInput(int rows, int cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor x;
  x.resize(rows, cols);
  for (float& v : x.data) v = normal(rng);
  return x;
}

TEST(ZeroModules, EmbeddingGradients) {
  Embedding mlpInput(2, 7, 5, 1), tokens(1, 8, 6, 3);
  checkGradients({&mlpInput, modularAdditionBatch(7, false, 1, 0, 0, 4), {}}, 1);
  checkGradients({&tokens, modularAdditionBatch(7, true, 2, 0, 0, 3), {}}, 2);
}

TEST(ZeroModules, LinearGradients) {
  Linear gelu(6, 5, true), plain(6, 4, false);
  const Batch b = modularAdditionBatch(7, false, 1, 0, 0, 3);
  checkGradients({&gelu, b, randomInput(3, 6, 3)}, 3);
  checkGradients({&plain, b, randomInput(3, 6, 4)}, 4);
}

TEST(ZeroModules, TransformerBlockGradients) {
  TransformerBlock block(8, 2, 12);
  const Batch b = modularAdditionBatch(7, true, 1, 0, 0, 2);  // 2 sequences of 3
  checkGradients({&block, b, randomInput(6, 8, 5)}, 5, 300);
}

TEST(ZeroModules, NormLinearGradients) {
  NormLinear head(8, 5);
  checkGradients({&head, modularAdditionBatch(7, true, 1, 0, 0, 2), randomInput(6, 8, 6)}, 6);
}

TEST(ZeroModules, CrossEntropyGradientAndMasking) {
  Tensor logits = randomInput(4, 5, 7), dlogits;
  const std::vector<int> targets = {2, -1, 0, 4};
  const double loss = crossEntropy(logits, targets, 1.0f, &dlogits);
  const float eps = 1e-2f;
  Tensor scratch;
  for (size_t i = 0; i < logits.data.size(); ++i) {
    Tensor plus = logits, minus = logits;
    plus.data[i] += eps;
    minus.data[i] -= eps;
    const double numeric = (crossEntropy(plus, targets, 1.0f, &scratch) -
                            crossEntropy(minus, targets, 1.0f, &scratch)) /
                           (2 * eps);
    EXPECT_NEAR(dlogits.data[i], numeric, 1e-3) << i;
  }
  EXPECT_EQ(dlogits.row(1)[0], 0.0f) << "a masked position has no gradient";
  EXPECT_GT(loss, 0.0);
  Tensor scaled;
  crossEntropy(logits, targets, 8.0f, &scaled);
  EXPECT_FLOAT_EQ(scaled.data[0], 8.0f * dlogits.data[0]) << "the loss scale multiplies";
}

std::vector<uint16_t> toBfloat16Bits(const std::vector<float>& values) {
  std::vector<uint16_t> bits;
  for (float v : values) bits.push_back(toBfloat16(v).bits);
  return bits;
}

// A module given bfloat16 weights computes as on their float32 values, and its gradient comes
// out as the float32 one rounded: the views convert, the module does not see the precision.
TEST(ZeroModules, WorkingPrecisionViewsConvertSpanBySpan) {
  const auto model = makeTransformer(7, 8, 2, 12, 1);
  const Batch b = modularAdditionBatch(7, true, 1, 0, 0, 2);
  Tensor x;
  for (size_t m = 0; m < model->modules.size(); ++m) {
    Module& module = *model->modules[m];
    std::vector<float> params(module.numParams());
    module.initParams(params.data(), m + 1);
    const std::vector<uint16_t> bits = toBfloat16Bits(params);
    std::vector<float> widened;
    for (uint16_t v : bits) widened.push_back(toFloat(bfloat16_t{v}));
    Tensor yNarrow, yWide, dx;
    module.forward(Weights(bits.data(), bits.size(), Precision::kBfloat16), b, x, &yNarrow);
    module.forward(Weights(widened), b, x, &yWide);
    ASSERT_EQ(yNarrow.data, yWide.data) << module.name();
    Tensor dy = yWide;
    for (size_t i = 0; i < dy.data.size(); ++i) dy.data[i] = 0.01f * static_cast<float>(i % 13);
    std::vector<float> floats(params.size());
    Gradients wide(&floats);
    module.backward(Weights(widened), b, dy, &dx, &wide);
    std::vector<uint16_t> narrow(params.size());
    Gradients narrowed(narrow.data(), narrow.size(), Precision::kBfloat16);
    module.backward(Weights(widened), b, dy, &dx, &narrowed);
    EXPECT_EQ(narrow, toBfloat16Bits(floats)) << module.name();
    x = yWide;
  }
}

// ---- the affine layers' kernels against serial loops in the documented order ----

// One value as the working precision holds it, and back.
uint16_t narrowTo(Precision p, float v) {
  return p == Precision::kBfloat16 ? toBfloat16(v).bits : toFloat16(v).bits;
}
float widenFrom(Precision p, uint16_t bits) {
  return p == Precision::kBfloat16 ? toFloat(bfloat16_t{bits}) : toFloat(float16_t{bits});
}

struct AffineCase {
  int rows, in, out;
};

// What affine() and affineBackward() must give, bit for bit: y from b, then W's rows in
// order; dx in eight interleaved partial sums added in lane order, then the last columns;
// dW and db over the batch's rows in order from zero. W holds the working precision's values.
struct SerialAffine {
  Tensor y, dx;
  std::vector<float> grads;  // W's, then b's

  SerialAffine(const AffineCase& c, const Tensor& x, const std::vector<float>& params,
               const Tensor& dy) {
    const auto w = [&](int i, int j) { return params[static_cast<size_t>(i) * c.out + j]; };
    const size_t bias = static_cast<size_t>(c.in) * c.out;
    y.resize(c.rows, c.out);
    dx.resize(c.rows, c.in);
    grads.assign(params.size(), 0.0f);
    for (int r = 0; r < c.rows; ++r) {
      for (int j = 0; j < c.out; ++j) {
        float sum = params[bias + j];
        for (int i = 0; i < c.in; ++i) sum += x.row(r)[i] * w(i, j);
        y.row(r)[j] = sum;
      }
      for (int i = 0; i < c.in; ++i) {
        float lanes[8] = {};
        int j = 0;
        for (; j + 8 <= c.out; j += 8) {
          for (int k = 0; k < 8; ++k) lanes[k] += dy.row(r)[j + k] * w(i, j + k);
        }
        float sum = 0;
        for (float lane : lanes) sum += lane;
        for (; j < c.out; ++j) sum += dy.row(r)[j] * w(i, j);
        dx.row(r)[i] = sum;
      }
    }
    for (size_t e = 0; e < params.size(); ++e) {
      const int i = static_cast<int>(e / c.out), j = static_cast<int>(e % c.out);
      float sum = 0;
      for (int r = 0; r < c.rows; ++r) sum += (e < bias ? x.row(r)[i] : 1.0f) * dy.row(r)[j];
      grads[e] = sum;
    }
  }
};

std::vector<uint32_t> bitsOf(const std::vector<float>& values) {
  std::vector<uint32_t> bits;
  for (float v : values) bits.push_back(floatBits(v));
  return bits;
}

// Every kernel set, for weights and gradients held in float32, bfloat16 and half, on shapes
// with one to six rows (groups of four and the rest), W's rows across its blocks (16 rows for
// one group of four, 64 for more), and columns in groups of sixteen, eight and fewer. x holds
// an Inf and dy a zero beside it, so that dW holds Inf and NaN; with one row, dW's second row
// is dy's, halfway between two bfloat16 values: each must narrow as toBfloat16 and toFloat16
// do.
TEST(ZeroModules, AffineKernelsSumInTheDocumentedOrderWithEveryInstructionSet) {
  std::vector<std::pair<const char*, const AffineKernels*>> sets = {
      {"baseline", &baselineAffineKernels()}};
  if (avx2AffineKernels() != nullptr) sets.push_back({"avx2", avx2AffineKernels()});
  const AffineCase cases[] = {{1, 1, 1},  {4, 7, 16}, {3, 70, 40},  {5, 9, 17},
                              {6, 66, 7}, {2, 3, 8},  {4, 130, 33}, {1, 2, 27}};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const AffineCase& c : cases) {
    const size_t count = static_cast<size_t>(c.in + 1) * c.out;
    std::vector<float> exact(count);
    for (float& v : exact) v = normal(rng);
    Tensor x = randomInput(c.rows, c.in, rng()), dy = randomInput(c.rows, c.out, rng());
    x.row(0)[0] = INFINITY;
    dy.row(0)[0] = 0.0f;
    if (c.rows == 1 && c.in > 1) {
      x.row(0)[1] = 1.0f;
      for (int j = 1; j < c.out; ++j) dy.row(0)[j] = bitsToFloat(0x3f808000u + (j << 16));
    }
    for (Precision p : {Precision::kFloat32, Precision::kBfloat16, Precision::kFloat16}) {
      // The weights as the precision holds them, and their values.
      std::vector<uint16_t> held;
      std::vector<float> values = exact;
      if (p != Precision::kFloat32) {
        for (float& v : values) {
          held.push_back(narrowTo(p, v));
          v = widenFrom(p, held.back());
        }
      }
      const Weights weights =
          p == Precision::kFloat32 ? Weights(values) : Weights(held.data(), count, p);
      const SerialAffine expected(c, x, values, dy);
      for (const auto& [name, kernels] : sets) {
        SCOPED_TRACE(std::string(name) + " " + std::to_string(static_cast<int>(p)) + " rows " +
                     std::to_string(c.rows) + " in " + std::to_string(c.in) + " out " +
                     std::to_string(c.out));
        const size_t bias = static_cast<size_t>(c.in) * c.out;
        Tensor y, dx;
        affine(x, weights, 0, bias, c.out, &y, *kernels);
        EXPECT_EQ(bitsOf(y.data), bitsOf(expected.y.data));
        std::vector<float> floats(count, NAN);
        std::vector<uint16_t> narrow(count, 0xffffu);
        Gradients grads =
            p == Precision::kFloat32 ? Gradients(&floats) : Gradients(narrow.data(), count, p);
        affineBackward(x, weights, 0, bias, dy, &dx, &grads, *kernels);
        EXPECT_EQ(grads.error(), "");
        EXPECT_EQ(bitsOf(dx.data), bitsOf(expected.dx.data));
        if (p == Precision::kFloat32) {
          EXPECT_EQ(bitsOf(floats), bitsOf(expected.grads));
        } else {
          std::vector<uint16_t> want;
          for (float g : expected.grads) want.push_back(narrowTo(p, g));
          EXPECT_EQ(narrow, want);
        }
      }
    }
  }
}

TEST(ZeroModules, SpansPastTheParametersAreReportedNotTouched) {
  std::vector<float> values = {1, 2, 3}, scratch;
  const Weights weights(values);
  EXPECT_EQ(weights.read(1, 2, &scratch)[1], 3.0f);
  EXPECT_EQ(weights.error(), "");
  const float* past = weights.read(2, 2, &scratch);
  EXPECT_EQ(past[0], 0.0f) << "reads as zeros";
  EXPECT_EQ(weights.error(), "read weights [2, 4) of 3 elements");
  Gradients grads(&values);
  const float four[] = {4, 4};
  grads.write(3, 1, four);
  grads.write(2, 2, four);
  EXPECT_EQ(values, (std::vector<float>{1, 2, 3})) << "nothing written";
  EXPECT_EQ(grads.error(), "wrote gradients [3, 4) of 3 elements") << "the first kept";
}

TEST(ZeroModules, ModelsChainTheirModules) {
  const auto mlp = makeMlp(11, 16, 2);
  EXPECT_EQ(mlp->modules.size(), 4u);
  EXPECT_EQ(mlp->numParams(), (2 * 11 + 1) * 16u + 2 * (17 * 16u) + 17 * 11u);
  const auto transformer = makeTransformer(11, 16, 2, 32, 2);
  EXPECT_EQ(transformer->modules.size(), 4u);
  const Batch b = modularAdditionBatch(11, true, 3, 5, 10, 4);
  ASSERT_EQ(b.inputs.size(), 12u);
  for (int e = 0; e < 4; ++e) {
    EXPECT_EQ(b.inputs[3 * e + 2], 11) << "the '=' token";
    EXPECT_EQ(b.targets[3 * e + 2], (b.inputs[3 * e] + b.inputs[3 * e + 1]) % 11);
  }
  const Batch again = modularAdditionBatch(11, true, 3, 5, 12, 2);
  EXPECT_EQ(again.inputs[0], b.inputs[6]) << "example indices are global: ranks slice one batch";
}

}  // namespace
}  // namespace zccl::zero
