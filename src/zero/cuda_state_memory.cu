// A GPU's memory for the optimizer's state: stream-ordered allocations (nothing waits for the
// whole device, which a gate of zccl's on this stream could hold), copies and kernels on a
// non-blocking stream of its own, which the optimizer's collectives are queued on too.
#include <cuda_runtime.h>

#include <string>

#include "zero/working_math.h"

namespace zccl::zero {
namespace {

constexpr int kThreads = 256;

int blocksFor(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 * 32 ? blocks : 65535 * 32);
}

__global__ void toWorkingKernel(Precision precision, const float* in, size_t count, void* out) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    switch (precision) {
      case Precision::kFloat32:
        static_cast<float*>(out)[i] = in[i];
        break;
      case Precision::kBfloat16:
        static_cast<uint16_t*>(out)[i] = toBfloat16(in[i]).bits;
        break;
      case Precision::kFloat16:
        static_cast<uint16_t*>(out)[i] = toFloat16(in[i]).bits;
        break;
    }
  }
}

__global__ void adamKernel(AdamStep step, Precision precision, const void* grads, size_t count,
                           float* params, float* moment1, float* moment2) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    adamElement(step, workingToFloat(precision, grads, i), &params[i], &moment1[i], &moment2[i]);
  }
}

class CudaStateMemory final : public StateMemory {
 public:
  ~CudaStateMemory() override {
    if (stream_ == nullptr) return;
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  // On `device` (made current), or the current device for -1.
  bool open(int device) {
    if (device >= 0 && !ok(cudaSetDevice(device), "cudaSetDevice")) return false;
    // The kernels are loaded now rather than at their first launch, which could find a stream
    // held by zccl's gate (common/cuda_status.h says why that must not happen).
    cudaFuncAttributes attributes;
    return ok(cudaGetDevice(&device_), "cudaGetDevice") &&
           ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate") &&
           ok(cudaFuncGetAttributes(&attributes, toWorkingKernel), "cudaFuncGetAttributes") &&
           ok(cudaFuncGetAttributes(&attributes, adamKernel), "cudaFuncGetAttributes");
  }

  const char* name() const override { return "cuda"; }
  bool host() const override { return false; }
  zcclStream_t stream() const override { return stream_; }
  zcclResult_t allocate(size_t bytes, void** data) override {
    *data = nullptr;
    if (!ok(cudaMallocAsync(data, bytes > 0 ? bytes : 1, stream_), "cudaMallocAsync") ||
        !ok(cudaMemsetAsync(*data, 0, bytes, stream_), "cudaMemsetAsync")) {
      return zcclSystemError;
    }
    return zcclSuccess;
  }
  void release(void* data) override {
    if (data != nullptr) cudaFreeAsync(data, stream_);
  }
  zcclResult_t upload(void* to, const void* hostFrom, size_t bytes) override {
    return blockingCopy(to, hostFrom, bytes, cudaMemcpyHostToDevice);
  }
  zcclResult_t download(void* hostTo, const void* from, size_t bytes) override {
    return blockingCopy(hostTo, from, bytes, cudaMemcpyDeviceToHost);
  }
  zcclResult_t copy(void* to, const void* from, size_t bytes) override {
    if (to == from || bytes == 0) return zcclSuccess;
    return result(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_),
                  "cudaMemcpyAsync");
  }
  zcclResult_t toWorking(Precision precision, const float* in, size_t count, void* out) override {
    if (count == 0) return zcclSuccess;
    toWorkingKernel<<<blocksFor(count), kThreads, 0, stream_>>>(precision, in, count, out);
    return result(cudaGetLastError(), "the conversion to the working precision");
  }
  zcclResult_t adam(const AdamStep& step, Precision precision, const void* grads, size_t count,
                    float* params, float* moment1, float* moment2) override {
    if (count == 0) return zcclSuccess;
    adamKernel<<<blocksFor(count), kThreads, 0, stream_>>>(step, precision, grads, count, params,
                                                           moment1, moment2);
    return result(cudaGetLastError(), "the Adam update");
  }
  const char* lastError() const override { return error_.c_str(); }

 private:
  bool ok(cudaError_t status, const char* what) {
    if (status == cudaSuccess) return true;
    error_ = std::string(what) + " on device " + std::to_string(device_) + ": " +
             cudaGetErrorString(status);
    return false;
  }
  zcclResult_t result(cudaError_t status, const char* what) {
    return ok(status, what) ? zcclSuccess : zcclSystemError;
  }
  zcclResult_t blockingCopy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0) return zcclSuccess;
    return result(cudaMemcpyAsync(to, from, bytes, kind, stream_), "cudaMemcpyAsync") == zcclSuccess
               ? result(cudaStreamSynchronize(stream_), "cudaStreamSynchronize")
               : zcclSystemError;
  }

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  std::string error_;
};

}  // namespace

std::unique_ptr<StateMemory> makeCudaStateMemory(int device, std::string* error) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    *error = "no GPU is visible to this process";
    return nullptr;
  }
  auto memory = std::make_unique<CudaStateMemory>();
  if (!memory->open(device < 0 ? -1 : device % devices)) {
    *error = memory->lastError();
    return nullptr;
  }
  return memory;
}

}  // namespace zccl::zero
