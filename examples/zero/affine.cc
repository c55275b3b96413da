// The demo models' affine layers (affine.h): W read as the optimizer holds it, bfloat16 widened
// in registers as it is used, and dW narrowed as it is stored, so that no float32 copy of W or
// dW passes through memory; the loops compiled for the baseline and for AVX2.
#include "zero/affine.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "common/target.h"

namespace zccl::zero {

namespace {

using Floats = float __attribute__((vector_size(32)));
using Words = uint32_t __attribute__((vector_size(32)));
using Halves = uint16_t __attribute__((vector_size(16)));

namespace baseline {

inline void load(const uint16_t* p, Floats* v) {
  Halves bits;
  std::memcpy(&bits, p, sizeof bits);
  const Words wide = __builtin_convertvector(bits, Words) << 16;
  std::memcpy(v, &wide, sizeof *v);
}

#include "zero/affine_kernels.inc"
}  // namespace baseline

ZCCL_BEGIN_TARGET("avx2")
namespace avx2 {

// One zero-extension and a shift, where GCC makes the conversion above of two half-width ones
// joined: the forward pass of a 2048 x 2048 layer, four rows, took 0.8 ms so, against 1.0.
inline void load(const uint16_t* p, Floats* v) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  *v = reinterpret_cast<Floats>(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

#include "zero/affine_kernels.inc"
}  // namespace avx2
ZCCL_END_TARGET

// W for the kernels: as held, or widened where it is half. A span past the weights reads as
// zeros (and is reported).
AffineWeights weightsAt(const Weights& params, size_t w, size_t count,
                        std::vector<float>* widened) {
  const void* values = params.span(w, count);
  if (values != nullptr && params.precision() != Precision::kFloat16) {
    return {values, params.precision() == Precision::kBfloat16};
  }
  return {params.read(w, count, widened), false};
}

// dW into the gradients as they are held; half ones (and a span past the gradients, reported,
// nothing written) a row at a time through write().
void writeWeightGradient(const AffineShape& shape, const Tensor& x, const Tensor& dy, size_t w,
                         Gradients* grads, const AffineKernels& kernels) {
  const size_t width = static_cast<size_t>(shape.out);
  void* held = grads->precision() == Precision::kFloat16
                   ? nullptr
                   : grads->span(w, static_cast<size_t>(shape.in) * width);
  if (held != nullptr) {
    kernels.weightGradient(shape, x.data.data(), dy.data.data(), 0, shape.in, held,
                           grads->precision() == Precision::kBfloat16);
    return;
  }
  std::vector<float> row(width);
  for (int i = 0; i < shape.in; ++i) {
    kernels.weightGradient(shape, x.data.data(), dy.data.data(), i, i + 1, row.data(), false);
    grads->write(w + static_cast<size_t>(i) * width, width, row.data());
  }
}

}  // namespace

const AffineKernels& baselineAffineKernels() { return baseline::kKernels; }

const AffineKernels* avx2AffineKernels() { return cpuHasAvx2() ? &avx2::kKernels : nullptr; }

const AffineKernels& bestAffineKernels() {
  static const AffineKernels& best = firstSupported({avx2AffineKernels()}, baselineAffineKernels());
  return best;
}

void affine(const Tensor& x, const Weights& params, size_t w, size_t b, int out, Tensor* y,
            const AffineKernels& kernels) {
  const AffineShape shape{x.rows, x.cols, out};
  std::vector<float> biasScratch, widened;
  y->resize(x.rows, out);
  const float* bias = params.read(b, static_cast<size_t>(out), &biasScratch);
  for (int r = 0; r < x.rows; ++r) std::copy(bias, bias + out, y->row(r));
  const size_t count = static_cast<size_t>(x.cols) * static_cast<size_t>(out);
  kernels.forward(shape, x.data.data(), weightsAt(params, w, count, &widened), y->data.data());
}

void affineBackward(const Tensor& x, const Weights& params, size_t w, size_t b, const Tensor& dy,
                    Tensor* dx, Gradients* grads, const AffineKernels& kernels) {
  const AffineShape shape{x.rows, x.cols, dy.cols};
  const size_t width = static_cast<size_t>(dy.cols);
  std::vector<float> sum(width, 0.0f);
  for (int r = 0; r < dy.rows; ++r) {
    const float* dyr = dy.row(r);
    for (size_t j = 0; j < width; ++j) sum[j] += dyr[j];
  }
  grads->write(b, width, sum.data());
  if (dx != nullptr) {
    dx->resize(x.rows, x.cols);
    std::vector<float> widened;
    kernels.inputGradient(shape, dy.data.data(),
                          weightsAt(params, w, static_cast<size_t>(x.cols) * width, &widened),
                          dx->data.data());
  }
  writeWeightGradient(shape, x, dy, w, grads, kernels);
}

}  // namespace zccl::zero
