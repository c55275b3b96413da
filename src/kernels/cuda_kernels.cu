#include <cuda_runtime.h>

#include "common/cuda_status.h"
#include "kernels/cuda_kernels.h"
#include "kernels/reduce_cuda.h"

namespace zccl {
namespace {

class CudaKernels final : public Kernels {
 public:
  explicit CudaKernels(DeviceStream stream) : stream_(stream) {}

  MemoryKind memory() const override { return MemoryKind::kDevice; }

  Status copy(void* to, const void* from, size_t bytes) override {
    if (bytes == 0 || to == from) return Status::kSuccess;
    ZCCL_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_));
    return Status::kSuccess;
  }
  Status zeroFloats(float* data, size_t count) override {
    if (count == 0) return Status::kSuccess;
    ZCCL_CUDA_CHECK(cudaMemsetAsync(data, 0, count * sizeof(float), stream_));
    return Status::kSuccess;
  }

  Status reduceInto(void* inout, const void* in, size_t count, DataType type, RedOp op) override {
    return reduceIntoCuda(inout, in, count, type, op, stream_);
  }
  Status reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count,
                       DataType type, RedOp op) override {
    return reduceOrderedCuda(out, inputs, numInputs, count, type, op, stream_);
  }
  Status divideByCount(void* data, size_t count, DataType type, int divisor) override {
    return divideByCountCuda(data, count, type, divisor, stream_);
  }

  Status quantize(const void* in, DataType type, size_t count, const QuantParams& params, void* out,
                  size_t capacity) override {
    return quantizeCuda(in, type, count, params, out, capacity, stream_);
  }
  Status dequantize(const void* message, size_t bytes, void* out, DataType type,
                    size_t count) override {
    return dequantizeCuda(message, bytes, out, type, count, stream_);
  }
  Status dequantizeAccumulate(const void* message, size_t bytes, float* accumulator,
                              size_t count) override {
    return dequantizeAccumulateCuda(message, bytes, accumulator, count, stream_);
  }
  Status accumulateAsFloat(const void* x, DataType type, size_t count,
                           float* accumulator) override {
    return accumulateAsFloatCuda(x, type, count, accumulator, stream_);
  }
  Status storeFloatAs(float* values, size_t count, int divisor, DataType type, void* out) override {
    return storeFloatAsCuda(values, count, divisor, type, out, stream_);
  }

 private:
  DeviceStream stream_;
};

}  // namespace

std::unique_ptr<Kernels> makeCudaKernels(DeviceStream stream) {
  return std::make_unique<CudaKernels>(stream);
}

ScratchAllocator cudaScratchAllocator() {
  return ScratchAllocator{[](size_t bytes) {
                            void* data = nullptr;
                            return cudaMalloc(&data, bytes) == cudaSuccess ? data : nullptr;
                          },
                          [](void* data) { cudaFree(data); }};
}

}  // namespace zccl
