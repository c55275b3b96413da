// The demo models' affine layers, most of their time: y = x W + b and its backward. Each
// output is summed in a fixed order, whatever the batch's size and the CPU's instruction set:
// y from b then over W's rows in order; dx as eight interleaved partial sums over W's columns,
// added in lane order; dW and db over the batch's rows in order, from zero.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zccl/zero.hpp"

namespace zccl::zero {

// x [rows][in], W [in][out], y and dy [rows][out] (row-major).
struct AffineShape {
  int rows = 0;
  int in = 0;
  int out = 0;
};

// W as the optimizer holds it: float32 values or bfloat16 bits (a half W is widened first).
struct AffineWeights {
  const void* values = nullptr;
  bool bfloat16 = false;
};

// The loops, compiled for one instruction set. `weightGradient` writes dW's rows
// [firstRow, lastRow) to `grads`, which points at row firstRow: float32, or bfloat16 bits
// rounded to nearest even.
struct AffineKernels {
  // y += x W, y holding b.
  void (*forward)(const AffineShape& shape, const float* x, AffineWeights w, float* y);
  // dx = dy W^T.
  void (*inputGradient)(const AffineShape& shape, const float* dy, AffineWeights w, float* dx);
  void (*weightGradient)(const AffineShape& shape, const float* x, const float* dy, int firstRow,
                         int lastRow, void* grads, bool bfloat16);
};
const AffineKernels& baselineAffineKernels();
const AffineKernels* avx2AffineKernels();  // nullptr where the CPU lacks AVX2
const AffineKernels& bestAffineKernels();

// y = x W + b for W [in][out] at `w` and b [out] at `b` in the module's flat parameters.
void affine(const Tensor& x, const Weights& params, size_t w, size_t b, int out, Tensor* y,
            const AffineKernels& kernels = bestAffineKernels());
// dx = dy W^T (when dx is not null); dW = x^T dy and db = the sum of dy's rows, written to
// their gradients.
void affineBackward(const Tensor& x, const Weights& params, size_t w, size_t b, const Tensor& dy,
                    Tensor* dx, Gradients* grads,
                    const AffineKernels& kernels = bestAffineKernels());

}  // namespace zccl::zero
