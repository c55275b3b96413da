// CUDA's device runtime: pointers classified by cudaPointerGetAttributes, the CUDA kernels
// and copier on the caller's stream, scratch from cudaMalloc.
#include <cuda_runtime.h>

#include "common/cuda_status.h"
#include "core/cuda_device_runtime.h"
#include "kernels/cuda_kernels.h"
#include "transport/staged/cuda_copier.h"

namespace zccl {
namespace {

class CudaStreamResources final : public DeviceStreamResources {
 public:
  explicit CudaStreamResources(cudaStream_t stream)
      : stream_(stream), kernels_(makeCudaKernels(stream)), copier_(makeCudaCopier(stream)) {}
  Kernels& kernels() override { return *kernels_; }
  DeviceCopier& copier() override { return *copier_; }
  Status synchronize() override {
    ZCCL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return kernels_->deviceErrors();
  }

 private:
  cudaStream_t stream_;
  std::unique_ptr<Kernels> kernels_;
  std::unique_ptr<DeviceCopier> copier_;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  const char* name() const override { return "cuda"; }
  Status classify(const void* pointer, PointerInfo* info) override {
    cudaPointerAttributes attributes{};
    ZCCL_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
    // Managed memory is the device's as far as its kernels go; page-locked host memory is
    // host memory.
    const bool device =
        attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
    info->kind = device ? MemoryKind::kDevice : MemoryKind::kHost;
    info->device = device ? attributes.device : -1;
    return Status::kSuccess;
  }
  Status currentDevice(int* device) override {
    ZCCL_CUDA_CHECK(cudaGetDevice(device));
    return Status::kSuccess;
  }
  Status forStream(void* stream, std::unique_ptr<DeviceStreamResources>* out) override {
    *out = std::make_unique<CudaStreamResources>(static_cast<cudaStream_t>(stream));
    return Status::kSuccess;
  }
  ScratchAllocator scratchAllocator() override { return cudaScratchAllocator(); }
  bool ncclDeviceId(std::string* id, std::string* whyNot) override {
    int device = 0;
    char busId[32] = {};
    cudaError_t error = cudaGetDevice(&device);
    if (error == cudaSuccess) error = cudaDeviceGetPCIBusId(busId, sizeof(busId), device);
    if (error != cudaSuccess) {
      *whyNot = std::string("its device has no PCI bus id: ") + cudaGetErrorString(error);
      return false;
    }
    *id = busId;
    return true;
  }
};

}  // namespace

DeviceRuntime* cudaDeviceRuntime() {
  static CudaRuntime runtime;
  static const bool visible = [] {
    int devices = 0;
    return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  }();
  return visible ? &runtime : nullptr;
}

}  // namespace zccl
