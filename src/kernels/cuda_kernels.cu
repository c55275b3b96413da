// The Kernels of device memory (cuda_kernels.h): the CUDA quantization and reduction
// kernels and copies, queued on the collective's stream.
#include <cuda_runtime.h>

#include "common/cuda_status.h"
#include "kernels/cuda_kernels.h"
#include "kernels/reduce_cuda.h"

namespace zccl {
namespace {

class CudaKernels final : public Kernels {
 public:
  explicit CudaKernels(DeviceStream stream) : stream_(stream) {}
  ~CudaKernels() override {
    if (mismatch_ != nullptr) cudaFree(mismatch_);
  }
  CudaKernels(const CudaKernels&) = delete;
  CudaKernels& operator=(const CudaKernels&) = delete;

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
  Status dequantize(const void* message, size_t bytes, const QuantParams& format, void* out,
                    DataType type, size_t count) override {
    ZCCL_CHECK(mismatchFlag());
    return dequantizeKnownCuda(message, bytes, format, count, out, type, false, mismatch_, stream_);
  }
  Status dequantizeAccumulate(const void* message, size_t bytes, const QuantParams& format,
                              float* accumulator, size_t count) override {
    ZCCL_CHECK(mismatchFlag());
    return dequantizeKnownCuda(message, bytes, format, count, accumulator, DataType::kFloat32, true,
                               mismatch_, stream_);
  }
  Status negateFloats(float* data, size_t count) override {
    return negateFloatsCuda(data, count, stream_);
  }
  Status accumulateAsFloat(const void* x, DataType type, size_t count,
                           float* accumulator) override {
    return accumulateAsFloatCuda(x, type, count, accumulator, stream_);
  }
  Status storeFloatAs(float* values, size_t count, int divisor, DataType type, void* out) override {
    return storeFloatAsCuda(values, count, divisor, type, out, stream_);
  }

  // On the stream, not the legacy one: a caller's stream may be held at a gate meanwhile,
  // which a synchronous copy would wait for.
  Status deviceErrors() override {
    if (mismatch_ == nullptr) return Status::kSuccess;
    int mismatch = 0;
    ZCCL_CUDA_CHECK(
        cudaMemcpyAsync(&mismatch, mismatch_, sizeof(mismatch), cudaMemcpyDeviceToHost, stream_));
    ZCCL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    if (mismatch == 0) return Status::kSuccess;
    ZCCL_CUDA_CHECK(cudaMemsetAsync(mismatch_, 0, sizeof(int), stream_));
    return fail(Status::kInvalidUsage,
                "a quantized message this rank received had another format than the call's "
                "(bits, scheme, group size or count); nothing was decoded from it");
  }

 private:
  // The device's word for header mismatches, made at the first decode.
  Status mismatchFlag() {
    if (mismatch_ != nullptr) return Status::kSuccess;
    ZCCL_CUDA_CHECK(cudaMalloc(&mismatch_, sizeof(int)));
    ZCCL_CUDA_CHECK(cudaMemsetAsync(mismatch_, 0, sizeof(int), stream_));
    return Status::kSuccess;
  }

  DeviceStream stream_;
  int* mismatch_ = nullptr;
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
