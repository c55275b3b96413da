// The demo models' building blocks, each a ZeRO Module with a hand-written backward (checked
// against finite differences in tests/unit/zero_modules_test.cc), and the demo models.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "zccl/zero.hpp"

namespace zccl::zero {

// y[row] = sum over fields f of E[f][id_f] (+ P[position] when maxLength > 0): token and
// position embeddings for a transformer, or the first layer of an MLP on one-hot inputs.
class Embedding final : public Module {
 public:
  Embedding(int fields, int vocab, int width, int maxLength);
  const char* name() const override { return "embedding"; }
  size_t numParams() const override;
  void initParams(float* params, uint64_t seed) const override;
  void forward(const Weights& params, const Batch& batch, const Tensor& x, Tensor* y) override;
  void backward(const Weights& params, const Batch& batch, const Tensor& dy, Tensor* dx,
                Gradients* dparams) override;

 private:
  int fields_, vocab_, width_, maxLength_;
};

// y = act(x W + b), act = GELU (tanh form) or identity.
class Linear final : public Module {
 public:
  Linear(int in, int out, bool gelu);
  const char* name() const override { return gelu_ ? "linear+gelu" : "linear"; }
  size_t numParams() const override;
  void initParams(float* params, uint64_t seed) const override;
  void forward(const Weights& params, const Batch& batch, const Tensor& x, Tensor* y) override;
  void backward(const Weights& params, const Batch& batch, const Tensor& dy, Tensor* dx,
                Gradients* dparams) override;

 private:
  int in_, out_;
  bool gelu_;
  Tensor input_, preActivation_;
};

// A pre-norm decoder block: x + attention(LN(x)), then h + MLP(LN(h)), with causal
// multi-head self-attention within each sequence.
class TransformerBlock final : public Module {
 public:
  TransformerBlock(int width, int heads, int hidden);
  const char* name() const override { return "transformer block"; }
  size_t numParams() const override;
  void initParams(float* params, uint64_t seed) const override;
  void forward(const Weights& params, const Batch& batch, const Tensor& x, Tensor* y) override;
  void backward(const Weights& params, const Batch& batch, const Tensor& dy, Tensor* dx,
                Gradients* dparams) override;

  struct Layout;

 private:
  int width_, heads_, hidden_;
  // Forward values backward needs.
  Tensor x_, norm1_, qkv_, probs_, attended_, h_, norm2_, pre_, act_;
  std::vector<float> mean1_, rstd1_, mean2_, rstd2_;
};

// logits = LN(x) W + b: the final norm and the unembedding.
class NormLinear final : public Module {
 public:
  NormLinear(int width, int out);
  const char* name() const override { return "norm+unembedding"; }
  size_t numParams() const override;
  void initParams(float* params, uint64_t seed) const override;
  void forward(const Weights& params, const Batch& batch, const Tensor& x, Tensor* y) override;
  void backward(const Weights& params, const Batch& batch, const Tensor& dy, Tensor* dx,
                Gradients* dparams) override;

 private:
  int width_, out_;
  Tensor x_, norm_;
  std::vector<float> mean_, rstd_;
};

// An MLP on (a, b) -> (a + b) mod modulus: embedding of both operands, `depth` GELU layers of
// `hidden`, a linear classifier.
std::unique_ptr<Model> makeMlp(int modulus, int hidden, int depth);
// A decoder-only transformer on sequences [a, b, =] predicting (a + b) mod modulus.
std::unique_ptr<Model> makeTransformer(int modulus, int width, int heads, int hidden, int layers);

// The modular-addition task, deterministic in (seed, step, example): this rank's `size`
// examples starting at global example `first` of step `step`. `sequence` selects the
// transformer's form ([a, b, =], target on the last position) over the MLP's (two fields).
// A fraction `labelNoise` of the targets is replaced by a random class, which puts a floor
// under the loss (its entropy), so that runs can be compared once they have converged.
Batch modularAdditionBatch(int modulus, bool sequence, uint64_t seed, uint64_t step, int first,
                           int size, float labelNoise = 0.0f);

}  // namespace zccl::zero
