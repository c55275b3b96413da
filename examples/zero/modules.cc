// The demo models' modules (modules.h): forward passes, hand-written backward passes and
// the tasks they train on.
#include "zero/modules.h"

#include <algorithm>
#include <cmath>

#include "zero/affine.h"

namespace zccl::zero {
namespace {

constexpr float kNormEpsilon = 1e-5f;

// A reproducible uniform value in [-1, 1) for parameter `index` of a module seeded `seed`.
float uniform(uint64_t seed, uint64_t index) {
  uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull ^ (index + 1) * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  return static_cast<float>(static_cast<double>(x >> 11) * 0x1p-52 - 1.0);
}

void fillUniform(float* p, size_t n, float scale, uint64_t seed, uint64_t first) {
  for (size_t i = 0; i < n; ++i) p[i] = scale * uniform(seed, first + i);
}

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)

float gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x))); }
float geluDerivative(float x) {
  const float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3.0f * 0.044715f * x * x);
}

// y = gamma * (x - mean) / sqrt(var + eps) + beta, row by row; keeps mean and 1/std.
void layerNorm(const Tensor& x, const Weights& params, size_t gammaAt, size_t betaAt, Tensor* y,
               std::vector<float>* mean, std::vector<float>* rstd) {
  std::vector<float> gammaRow, betaRow;
  const float* gamma = params.read(gammaAt, static_cast<size_t>(x.cols), &gammaRow);
  const float* beta = params.read(betaAt, static_cast<size_t>(x.cols), &betaRow);
  y->resize(x.rows, x.cols);
  mean->assign(static_cast<size_t>(x.rows), 0.0f);
  rstd->assign(static_cast<size_t>(x.rows), 0.0f);
  for (int r = 0; r < x.rows; ++r) {
    const float* xr = x.row(r);
    double sum = 0, squares = 0;
    for (int i = 0; i < x.cols; ++i) sum += xr[i];
    const double mu = sum / x.cols;
    for (int i = 0; i < x.cols; ++i) squares += (xr[i] - mu) * (xr[i] - mu);
    const float inv = static_cast<float>(1.0 / std::sqrt(squares / x.cols + kNormEpsilon));
    (*mean)[r] = static_cast<float>(mu);
    (*rstd)[r] = inv;
    for (int i = 0; i < x.cols; ++i) y->row(r)[i] = gamma[i] * (xr[i] - (*mean)[r]) * inv + beta[i];
  }
}

// dx (added to what it holds) from dy; dgamma and dbeta written.
void layerNormBackward(const Tensor& x, const Weights& params, size_t gammaAt, size_t betaAt,
                       const std::vector<float>& mean, const std::vector<float>& rstd,
                       const Tensor& dy, Tensor* dx, Gradients* grads) {
  const int n = x.cols;
  const size_t width = static_cast<size_t>(n);
  std::vector<float> gammaRow, dxhat(width), xhat(width), dgamma(width, 0.0f), dbeta(width, 0.0f);
  const float* gamma = params.read(gammaAt, width, &gammaRow);
  for (int r = 0; r < x.rows; ++r) {
    double meanD = 0, meanDX = 0;
    for (int i = 0; i < n; ++i) {
      xhat[i] = (x.row(r)[i] - mean[r]) * rstd[r];
      dxhat[i] = dy.row(r)[i] * gamma[i];
      dgamma[i] += dy.row(r)[i] * xhat[i];
      dbeta[i] += dy.row(r)[i];
      meanD += dxhat[i];
      meanDX += dxhat[i] * xhat[i];
    }
    meanD /= n;
    meanDX /= n;
    for (int i = 0; i < n; ++i) {
      dx->row(r)[i] +=
          rstd[r] * (dxhat[i] - static_cast<float>(meanD) - xhat[i] * static_cast<float>(meanDX));
    }
  }
  grads->write(gammaAt, width, dgamma.data());
  grads->write(betaAt, width, dbeta.data());
}

}  // namespace

// ---- Embedding ----

Embedding::Embedding(int fields, int vocab, int width, int maxLength)
    : fields_(fields), vocab_(vocab), width_(width), maxLength_(maxLength) {}

size_t Embedding::numParams() const {
  return static_cast<size_t>(fields_ * vocab_ + maxLength_) * static_cast<size_t>(width_);
}

void Embedding::initParams(float* params, uint64_t seed) const {
  fillUniform(params, numParams(), 0.5f, seed, 0);
}

void Embedding::forward(const Weights& params, const Batch& batch, const Tensor&, Tensor* y) {
  const int rows = batch.size * batch.length;
  const size_t width = static_cast<size_t>(width_);
  const size_t positions = static_cast<size_t>(fields_ * vocab_) * width;
  std::vector<float> row;
  y->resize(rows, width_);
  for (int r = 0; r < rows; ++r) {
    float* yr = y->row(r);
    for (int f = 0; f < fields_; ++f) {
      const int id = batch.inputs[static_cast<size_t>(r) * fields_ + f];
      const float* e = params.read(static_cast<size_t>(f * vocab_ + id) * width, width, &row);
      for (int i = 0; i < width_; ++i) yr[i] += e[i];
    }
    if (maxLength_ > 0) {
      const float* p =
          params.read(positions + static_cast<size_t>(r % batch.length) * width, width, &row);
      for (int i = 0; i < width_; ++i) yr[i] += p[i];
    }
  }
}

// Rows of ids that repeat add up: summed in float32 over the whole (small) table, then written.
void Embedding::backward(const Weights&, const Batch& batch, const Tensor& dy, Tensor* dx,
                         Gradients* grads) {
  if (dx != nullptr) dx->resize(0, 0);
  std::vector<float> sums(numParams(), 0.0f);
  float* dparams = sums.data();
  float* dpositions = dparams + static_cast<size_t>(fields_ * vocab_) * width_;
  for (int r = 0; r < dy.rows; ++r) {
    const float* g = dy.row(r);
    for (int f = 0; f < fields_; ++f) {
      const int id = batch.inputs[static_cast<size_t>(r) * fields_ + f];
      float* de = dparams + static_cast<size_t>(f * vocab_ + id) * width_;
      for (int i = 0; i < width_; ++i) de[i] += g[i];
    }
    if (maxLength_ > 0) {
      float* dp = dpositions + static_cast<size_t>(r % batch.length) * width_;
      for (int i = 0; i < width_; ++i) dp[i] += g[i];
    }
  }
  grads->write(0, sums.size(), sums.data());
}

// ---- Linear ----

Linear::Linear(int in, int out, bool gelu) : in_(in), out_(out), gelu_(gelu) {}

size_t Linear::numParams() const { return static_cast<size_t>(in_ + 1) * out_; }

void Linear::initParams(float* params, uint64_t seed) const {
  const size_t weights = static_cast<size_t>(in_) * out_;
  fillUniform(params, weights, std::sqrt(3.0f / static_cast<float>(in_)), seed, 0);
  std::fill(params + weights, params + weights + out_, 0.0f);
}

void Linear::forward(const Weights& params, const Batch&, const Tensor& x, Tensor* y) {
  input_ = x;
  affine(x, params, 0, static_cast<size_t>(in_) * out_, out_, &preActivation_);
  *y = preActivation_;
  if (gelu_) {
    for (float& v : y->data) v = gelu(v);
  }
}

void Linear::backward(const Weights& params, const Batch&, const Tensor& dy, Tensor* dx,
                      Gradients* dparams) {
  Tensor g = dy;
  if (gelu_) {
    for (size_t i = 0; i < g.data.size(); ++i) g.data[i] *= geluDerivative(preActivation_.data[i]);
  }
  affineBackward(input_, params, 0, static_cast<size_t>(in_) * out_, g, dx, dparams);
}

// ---- TransformerBlock ----

// Offsets of each parameter array in the block's flat parameters.
struct TransformerBlock::Layout {
  size_t gamma1, beta1, wqkv, bqkv, wo, bo, gamma2, beta2, w1, b1, w2, b2, total;

  Layout(int d, int hidden) {
    size_t at = 0;
    const auto take = [&](size_t n) {
      const size_t start = at;
      at += n;
      return start;
    };
    const size_t D = static_cast<size_t>(d), H = static_cast<size_t>(hidden);
    gamma1 = take(D), beta1 = take(D), wqkv = take(D * 3 * D), bqkv = take(3 * D);
    wo = take(D * D), bo = take(D), gamma2 = take(D), beta2 = take(D);
    w1 = take(D * H), b1 = take(H), w2 = take(H * D), b2 = take(D);
    total = at;
  }
};

TransformerBlock::TransformerBlock(int width, int heads, int hidden)
    : width_(width), heads_(heads), hidden_(hidden) {}

size_t TransformerBlock::numParams() const { return Layout(width_, hidden_).total; }

void TransformerBlock::initParams(float* params, uint64_t seed) const {
  const Layout l(width_, hidden_);
  std::fill(params, params + l.total, 0.0f);
  const size_t D = static_cast<size_t>(width_), H = static_cast<size_t>(hidden_);
  std::fill(params + l.gamma1, params + l.gamma1 + D, 1.0f);
  std::fill(params + l.gamma2, params + l.gamma2 + D, 1.0f);
  const float scaleD = std::sqrt(3.0f / static_cast<float>(width_));
  fillUniform(params + l.wqkv, D * 3 * D, scaleD, seed, l.wqkv);
  fillUniform(params + l.wo, D * D, scaleD, seed, l.wo);
  fillUniform(params + l.w1, D * H, scaleD, seed, l.w1);
  fillUniform(params + l.w2, H * D, std::sqrt(3.0f / static_cast<float>(hidden_)), seed, l.w2);
}

void TransformerBlock::forward(const Weights& params, const Batch& batch, const Tensor& x,
                               Tensor* y) {
  const Layout l(width_, hidden_);
  const int d = width_, dh = width_ / heads_, T = batch.length;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  x_ = x;
  layerNorm(x, params, l.gamma1, l.beta1, &norm1_, &mean1_, &rstd1_);
  affine(norm1_, params, l.wqkv, l.bqkv, 3 * d, &qkv_);
  // probs_ holds, per (sequence, head), a T x T causal softmax.
  probs_.resize(batch.size * heads_, T * T);
  attended_.resize(x.rows, d);
  for (int s = 0; s < batch.size; ++s) {
    for (int h = 0; h < heads_; ++h) {
      float* p = probs_.row(s * heads_ + h);
      for (int t = 0; t < T; ++t) {
        const float* q = qkv_.row(s * T + t) + h * dh;
        float top = -INFINITY;
        for (int u = 0; u <= t; ++u) {
          const float* k = qkv_.row(s * T + u) + d + h * dh;
          float dot = 0;
          for (int i = 0; i < dh; ++i) dot += q[i] * k[i];
          p[t * T + u] = dot * scale;
          top = std::max(top, p[t * T + u]);
        }
        float sum = 0;
        for (int u = 0; u <= t; ++u) sum += (p[t * T + u] = std::exp(p[t * T + u] - top));
        for (int u = 0; u <= t; ++u) p[t * T + u] /= sum;
        float* o = attended_.row(s * T + t) + h * dh;
        for (int u = 0; u <= t; ++u) {
          const float* v = qkv_.row(s * T + u) + 2 * d + h * dh;
          for (int i = 0; i < dh; ++i) o[i] += p[t * T + u] * v[i];
        }
      }
    }
  }
  Tensor projected;
  affine(attended_, params, l.wo, l.bo, d, &projected);
  h_ = x;
  for (size_t i = 0; i < h_.data.size(); ++i) h_.data[i] += projected.data[i];
  layerNorm(h_, params, l.gamma2, l.beta2, &norm2_, &mean2_, &rstd2_);
  affine(norm2_, params, l.w1, l.b1, hidden_, &pre_);
  act_ = pre_;
  for (float& v : act_.data) v = gelu(v);
  Tensor mlp;
  affine(act_, params, l.w2, l.b2, d, &mlp);
  *y = h_;
  for (size_t i = 0; i < y->data.size(); ++i) y->data[i] += mlp.data[i];
}

void TransformerBlock::backward(const Weights& params, const Batch& batch, const Tensor& dy,
                                Tensor* dx, Gradients* dparams) {
  const Layout l(width_, hidden_);
  const int d = width_, dh = width_ / heads_, T = batch.length;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  // MLP branch: y = h + W2 gelu(W1 LN2(h) + b1) + b2.
  Tensor dact, dnorm2;
  affineBackward(act_, params, l.w2, l.b2, dy, &dact, dparams);
  for (size_t i = 0; i < dact.data.size(); ++i) dact.data[i] *= geluDerivative(pre_.data[i]);
  affineBackward(norm2_, params, l.w1, l.b1, dact, &dnorm2, dparams);
  Tensor dresidual = dy;
  layerNormBackward(h_, params, l.gamma2, l.beta2, mean2_, rstd2_, dnorm2, &dresidual, dparams);
  // Attention branch: h = x + Wo attention(qkv(LN1(x))) + bo.
  Tensor dattended;
  affineBackward(attended_, params, l.wo, l.bo, dresidual, &dattended, dparams);
  Tensor dqkv;
  dqkv.resize(qkv_.rows, 3 * d);
  std::vector<float> dp(static_cast<size_t>(T));
  for (int s = 0; s < batch.size; ++s) {
    for (int h = 0; h < heads_; ++h) {
      const float* p = probs_.row(s * heads_ + h);
      for (int t = 0; t < T; ++t) {
        const float* dout = dattended.row(s * T + t) + h * dh;
        float weighted = 0;
        for (int u = 0; u <= t; ++u) {
          const float* v = qkv_.row(s * T + u) + 2 * d + h * dh;
          float* dv = dqkv.row(s * T + u) + 2 * d + h * dh;
          float dot = 0;
          for (int i = 0; i < dh; ++i) {
            dot += dout[i] * v[i];
            dv[i] += p[t * T + u] * dout[i];
          }
          dp[u] = dot;
          weighted += p[t * T + u] * dot;
        }
        const float* q = qkv_.row(s * T + t) + h * dh;
        float* dq = dqkv.row(s * T + t) + h * dh;
        for (int u = 0; u <= t; ++u) {
          const float dscore = p[t * T + u] * (dp[u] - weighted) * scale;
          const float* k = qkv_.row(s * T + u) + d + h * dh;
          float* dk = dqkv.row(s * T + u) + d + h * dh;
          for (int i = 0; i < dh; ++i) {
            dq[i] += dscore * k[i];
            dk[i] += dscore * q[i];
          }
        }
      }
    }
  }
  Tensor dnorm1;
  affineBackward(norm1_, params, l.wqkv, l.bqkv, dqkv, &dnorm1, dparams);
  *dx = dresidual;
  layerNormBackward(x_, params, l.gamma1, l.beta1, mean1_, rstd1_, dnorm1, dx, dparams);
}

// ---- NormLinear ----

NormLinear::NormLinear(int width, int out) : width_(width), out_(out) {}

size_t NormLinear::numParams() const {
  return 2 * static_cast<size_t>(width_) + (width_ + 1) * static_cast<size_t>(out_);
}

void NormLinear::initParams(float* params, uint64_t seed) const {
  const size_t D = static_cast<size_t>(width_);
  std::fill(params, params + numParams(), 0.0f);
  std::fill(params, params + D, 1.0f);
  fillUniform(params + 2 * D, D * out_, std::sqrt(3.0f / static_cast<float>(width_)), seed, 0);
}

void NormLinear::forward(const Weights& params, const Batch&, const Tensor& x, Tensor* y) {
  const size_t D = static_cast<size_t>(width_);
  x_ = x;
  layerNorm(x, params, 0, D, &norm_, &mean_, &rstd_);
  affine(norm_, params, 2 * D, 2 * D + D * out_, out_, y);
}

void NormLinear::backward(const Weights& params, const Batch&, const Tensor& dy, Tensor* dx,
                          Gradients* dparams) {
  const size_t D = static_cast<size_t>(width_);
  Tensor dnorm;
  affineBackward(norm_, params, 2 * D, 2 * D + D * out_, dy, &dnorm, dparams);
  dx->resize(x_.rows, width_);
  layerNormBackward(x_, params, 0, D, mean_, rstd_, dnorm, dx, dparams);
}

// ---- models and data ----

std::unique_ptr<Model> makeMlp(int modulus, int hidden, int depth) {
  auto model = std::make_unique<Model>();
  model->modules.push_back(std::make_unique<Embedding>(2, modulus, hidden, 1));
  for (int i = 0; i < depth; ++i)
    model->modules.push_back(std::make_unique<Linear>(hidden, hidden, true));
  model->modules.push_back(std::make_unique<Linear>(hidden, modulus, false));
  return model;
}

std::unique_ptr<Model> makeTransformer(int modulus, int width, int heads, int hidden, int layers) {
  auto model = std::make_unique<Model>();
  const int vocab = modulus + 1;  // the numbers and '='
  model->modules.push_back(std::make_unique<Embedding>(1, vocab, width, 3));
  for (int i = 0; i < layers; ++i)
    model->modules.push_back(std::make_unique<TransformerBlock>(width, heads, hidden));
  model->modules.push_back(std::make_unique<NormLinear>(width, vocab));
  return model;
}

Batch modularAdditionBatch(int modulus, bool sequence, uint64_t seed, uint64_t step, int first,
                           int size, float labelNoise) {
  Batch b;
  b.size = size;
  b.length = sequence ? 3 : 1;
  b.fields = sequence ? 1 : 2;
  for (int e = 0; e < size; ++e) {
    const uint64_t example = step * 1000003ull + static_cast<uint64_t>(first + e);
    const int a = static_cast<int>((uniform(seed, 2 * example) + 1) * 0.5f * modulus) % modulus;
    const int c = static_cast<int>((uniform(seed, 2 * example + 1) + 1) * 0.5f * modulus) % modulus;
    const bool noisy = (uniform(seed + 1, example) + 1) * 0.5f < labelNoise;
    const int random =
        static_cast<int>((uniform(seed + 2, example) + 1) * 0.5f * modulus) % modulus;
    const int sum = noisy ? random : (a + c) % modulus;
    if (sequence) {
      b.inputs.insert(b.inputs.end(), {a, c, modulus});
      b.targets.insert(b.targets.end(), {-1, -1, sum});
    } else {
      b.inputs.insert(b.inputs.end(), {a, c});
      b.targets.push_back(sum);
    }
  }
  return b;
}

}  // namespace zccl::zero
