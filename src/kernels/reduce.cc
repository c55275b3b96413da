// Host reductions (reduce.h) over the element arithmetic shared with the CUDA kernels.
#include "kernels/reduce.h"

#include <algorithm>
#include <cstdint>

#include "kernels/reduce_math.h"

namespace zccl {
namespace {

// The op is a template parameter so that each inner loop is branch-free and vectorizes.
template <typename T, RedOp Op>
void reduceIntoTyped(T* inout, const T* in, size_t count) {
  using Tr = Traits<T>;
  for (size_t i = 0; i < count; ++i) {
    inout[i] = Tr::store(applyOp(Op, Tr::load(inout[i]), Tr::load(in[i])));
  }
}

template <typename T, RedOp Op>
void reduceOrderedTyped(T* out, const void* const* inputs, int numInputs, size_t count) {
  using Tr = Traits<T>;
  using A = typename Tr::Accumulator;
  constexpr size_t kBlock = 1024;  // accumulator block that stays in L1
  A accumulator[kBlock];
  for (size_t begin = 0; begin < count; begin += kBlock) {
    const size_t length = std::min(kBlock, count - begin);
    const T* first = static_cast<const T*>(inputs[0]) + begin;
    for (size_t i = 0; i < length; ++i) accumulator[i] = Tr::load(first[i]);
    for (int k = 1; k < numInputs; ++k) {
      const T* input = static_cast<const T*>(inputs[k]) + begin;
      for (size_t i = 0; i < length; ++i) {
        accumulator[i] = applyOp(Op, accumulator[i], Tr::load(input[i]));
      }
    }
    if constexpr (Op == RedOp::kAvg) {
      for (size_t i = 0; i < length; ++i) accumulator[i] = divideBy(accumulator[i], numInputs);
    }
    for (size_t i = 0; i < length; ++i) out[begin + i] = Tr::store(accumulator[i]);
  }
}

template <typename T>
void divideTyped(T* data, size_t count, int divisor) {
  using Tr = Traits<T>;
  for (size_t i = 0; i < count; ++i) data[i] = Tr::store(divideBy(Tr::load(data[i]), divisor));
}

}  // namespace

void reduceInto(void* inout, const void* in, size_t count, DataType type, RedOp op) {
  withType(type, [&](auto tag) {
    using T = decltype(tag);
    withOp(op, [&](auto constant) {
      reduceIntoTyped<T, decltype(constant)::value>(static_cast<T*>(inout),
                                                    static_cast<const T*>(in), count);
    });
  });
}

void reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count, DataType type,
                   RedOp op) {
  withType(type, [&](auto tag) {
    using T = decltype(tag);
    withOp(op, [&](auto constant) {
      reduceOrderedTyped<T, decltype(constant)::value>(static_cast<T*>(out), inputs, numInputs,
                                                       count);
    });
  });
}

void divideByCount(void* data, size_t count, DataType type, int divisor) {
  withType(type, [&](auto tag) {
    using T = decltype(tag);
    divideTyped(static_cast<T*>(data), count, divisor);
  });
}

}  // namespace zccl
