// Element-wise CUDA kernels over grid-stride loops; each element's arithmetic is the CPU's
// (kernels/reduce_math.h), compiled with --fmad=false so that nothing is contracted into FMA.
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_status.h"
#include "kernels/reduce_cuda.h"
#include "kernels/reduce_math.h"

namespace zccl {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;

unsigned blocksFor(size_t count) {
  return static_cast<unsigned>(std::min<size_t>(kMaxBlocks, (count + kThreads - 1) / kThreads));
}

struct OrderedInputs {
  const void* pointers[kMaxOrderedInputsCuda];
};

template <typename T, RedOp Op>
__global__ void reduceIntoKernel(T* inout, const T* in, size_t count) {
  using Tr = Traits<T>;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    inout[i] = Tr::store(applyOp(Op, Tr::load(inout[i]), Tr::load(in[i])));
  }
}

// Inputs folded in order, in the accumulator type, rounded once (as reduceOrdered).
template <typename T, RedOp Op>
__global__ void reduceOrderedKernel(T* out, OrderedInputs inputs, int numInputs, size_t count) {
  using Tr = Traits<T>;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    auto accumulator = Tr::load(static_cast<const T*>(inputs.pointers[0])[i]);
    for (int k = 1; k < numInputs; ++k) {
      accumulator =
          applyOp(Op, accumulator, Tr::load(static_cast<const T*>(inputs.pointers[k])[i]));
    }
    if constexpr (Op == RedOp::kAvg) accumulator = divideBy(accumulator, numInputs);
    out[i] = Tr::store(accumulator);
  }
}

template <typename T>
__global__ void divideKernel(T* data, size_t count, int divisor) {
  using Tr = Traits<T>;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    data[i] = Tr::store(divideBy(Tr::load(data[i]), divisor));
  }
}

template <typename T>
__global__ void accumulateKernel(const T* x, size_t count, float* accumulator) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    accumulator[i] += Traits<T>::load(x[i]);
  }
}

__global__ void negateKernel(float* data, size_t count) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    data[i] = -data[i];
  }
}

// As storeFloatAs: the division (when any) in float32, then one rounding to T.
template <typename T>
__global__ void storeFloatKernel(float* values, size_t count, int divisor, T* out) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    float v = values[i];
    if (divisor != 1) {
      v /= static_cast<float>(divisor);
      values[i] = v;
    }
    out[i] = Traits<T>::store(v);
  }
}

// What the shared dispatch (withType, withOp) leaves to its callers.
Status checkTypeAndOp(DataType type, RedOp op) {
  if (static_cast<int>(type) < 0 || type >= DataType::kCount) {
    return fail(Status::kInvalidArgument, "datatype=%d: not a zccl data type",
                static_cast<int>(type));
  }
  if (static_cast<int>(op) < 0 || op >= RedOp::kCount) {
    return fail(Status::kInvalidArgument, "op=%d: not a zccl reduction", static_cast<int>(op));
  }
  return Status::kSuccess;
}

// The float32/float16/bfloat16 storage types of the quantized paths' float32 accumulations.
template <typename Fn>
Status withFloatType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kFloat32:
      return fn(float{});
    case DataType::kFloat16:
      return fn(float16_t{});
    case DataType::kBfloat16:
      return fn(bfloat16_t{});
    default:
      return fail(Status::kInvalidArgument,
                  "type=%s: float32 accumulations take float32, float16 or bfloat16",
                  dataTypeName(type));
  }
}

Status launched() {
  ZCCL_CUDA_CHECK(cudaGetLastError());
  return Status::kSuccess;
}

}  // namespace

Status reduceIntoCuda(void* inout, const void* in, size_t count, DataType type, RedOp op,
                      DeviceStream stream) {
  ZCCL_CHECK(checkTypeAndOp(type, op));
  if (count == 0) return Status::kSuccess;
  return withType(type, [&](auto tag) {
    using T = decltype(tag);
    return withOp(op, [&](auto constant) {
      reduceIntoKernel<T, decltype(constant)::value><<<blocksFor(count), kThreads, 0, stream>>>(
          static_cast<T*>(inout), static_cast<const T*>(in), count);
      return launched();
    });
  });
}

Status reduceOrderedCuda(void* out, const void* const* inputs, int numInputs, size_t count,
                         DataType type, RedOp op, DeviceStream stream) {
  if (numInputs < 1 || numInputs > kMaxOrderedInputsCuda) {
    return fail(Status::kInvalidUsage,
                "an ordered reduction of %d inputs on the device: 1 to %d are supported", numInputs,
                kMaxOrderedInputsCuda);
  }
  ZCCL_CHECK(checkTypeAndOp(type, op));
  if (count == 0) return Status::kSuccess;
  OrderedInputs pointers{};
  std::copy(inputs, inputs + numInputs, pointers.pointers);
  return withType(type, [&](auto tag) {
    using T = decltype(tag);
    return withOp(op, [&](auto constant) {
      reduceOrderedKernel<T, decltype(constant)::value><<<blocksFor(count), kThreads, 0, stream>>>(
          static_cast<T*>(out), pointers, numInputs, count);
      return launched();
    });
  });
}

Status divideByCountCuda(void* data, size_t count, DataType type, int divisor,
                         DeviceStream stream) {
  if (count == 0) return Status::kSuccess;
  return withType(type, [&](auto tag) {
    using T = decltype(tag);
    divideKernel<T>
        <<<blocksFor(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, divisor);
    return launched();
  });
}

Status accumulateAsFloatCuda(const void* x, DataType type, size_t count, float* accumulator,
                             DeviceStream stream) {
  if (count == 0) return Status::kSuccess;
  return withFloatType(type, [&](auto tag) {
    using T = decltype(tag);
    accumulateKernel<T>
        <<<blocksFor(count), kThreads, 0, stream>>>(static_cast<const T*>(x), count, accumulator);
    return launched();
  });
}

Status negateFloatsCuda(float* data, size_t count, DeviceStream stream) {
  if (count == 0) return Status::kSuccess;
  negateKernel<<<blocksFor(count), kThreads, 0, stream>>>(data, count);
  return launched();
}

Status preloadReduceKernelsCuda() {
  for (int type = 0; type < static_cast<int>(DataType::kCount); ++type) {
    ZCCL_CHECK(withType(static_cast<DataType>(type), [](auto tag) {
      using T = decltype(tag);
      for (int op = 0; op < static_cast<int>(RedOp::kCount); ++op) {
        ZCCL_CHECK(withOp(static_cast<RedOp>(op), [](auto constant) {
          return preloadCudaKernels(reduceIntoKernel<T, decltype(constant)::value>,
                                    reduceOrderedKernel<T, decltype(constant)::value>);
        }));
      }
      return preloadCudaKernels(divideKernel<T>);
    }));
  }
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
    ZCCL_CHECK(withFloatType(type, [](auto tag) {
      using T = decltype(tag);
      return preloadCudaKernels(accumulateKernel<T>, storeFloatKernel<T>);
    }));
  }
  return preloadCudaKernels(negateKernel);
}

Status storeFloatAsCuda(float* values, size_t count, int divisor, DataType type, void* out,
                        DeviceStream stream) {
  if (count == 0) return Status::kSuccess;
  return withFloatType(type, [&](auto tag) {
    using T = decltype(tag);
    storeFloatKernel<T>
        <<<blocksFor(count), kThreads, 0, stream>>>(values, count, divisor, static_cast<T*>(out));
    return launched();
  });
}

}  // namespace zccl
