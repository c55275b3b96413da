// CUDA's device runtime: pointers classified by cudaPointerGetAttributes; zccl's own
// non-blocking stream with the CUDA kernels, copier and a stream-ordered scratch allocator;
// gates that hold a caller's stream with a one-thread kernel polling a page-locked counter
// the communicator's thread raises (kernels of other streams run beside it, unlike a stream memory
// wait, which stalls the hardware queue it shares with other streams).
//
// While a caller's stream is held at a gate, the communicator's thread must not call what waits for
// the whole device (cudaFree, cudaFreeHost, synchronous copies on the legacy stream): scratch
// comes from cudaMallocAsync on zccl's stream, staging memory is kept until the end.
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <set>

#include "common/cuda_status.h"
#include "device/device_runtime.h"
#include "kernels/cuda_kernels.h"
#include "kernels/reduce_cuda.h"
#include "transport/staged/cuda_copier.h"

namespace zccl {
namespace {

__global__ void holdUntilReleased(const volatile uint64_t* released, uint64_t ticket) {
  while (*released < ticket) __nanosleep(1000);
  __threadfence_system();
}

// Device memory allocated and released in the order of `stream` (or, where the device has
// no memory pools, cudaMalloc and cudaFree).
ScratchAllocator streamOrderedAllocator(cudaStream_t stream) {
  int device = 0, pools = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess ||
      pools == 0) {
    return cudaScratchAllocator();
  }
  return ScratchAllocator{[stream](size_t bytes) {
                            void* data = nullptr;
                            return cudaMallocAsync(&data, bytes, stream) == cudaSuccess ? data
                                                                                        : nullptr;
                          },
                          [stream](void* data) { cudaFreeAsync(data, stream); }};
}

class CudaStreamResources final : public DeviceStreamResources {
 public:
  explicit CudaStreamResources(cudaStream_t stream)
      : stream_(stream), kernels_(makeCudaKernels(stream)), copier_(makeCudaCopier(stream)) {}
  ~CudaStreamResources() override {
    kernels_.reset();
    copier_.reset();
    cudaStreamDestroy(stream_);
  }
  void* stream() override { return stream_; }
  Kernels& kernels() override { return *kernels_; }
  DeviceCopier& copier() override { return *copier_; }
  ScratchAllocator scratchAllocator() override { return streamOrderedAllocator(stream_); }
  Status synchronize() override {
    ZCCL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return kernels_->deviceErrors();
  }

 private:
  cudaStream_t stream_;
  std::unique_ptr<Kernels> kernels_;
  std::unique_ptr<DeviceCopier> copier_;
};

class CudaStreamInputs final : public StreamInputs {
 public:
  explicit CudaStreamInputs(cudaEvent_t event) : event_(event) {}
  ~CudaStreamInputs() override { cudaEventDestroy(event_); }
  Status precede(DeviceStreamResources& own) override {
    ZCCL_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(own.stream()), event_, 0));
    return Status::kSuccess;
  }

 private:
  cudaEvent_t event_;
};

// A graph captured from the caller's stream would hold the gate but not the work, which runs
// on zccl's thread and stream: the call fails, naming the capture, and leaves it intact.
Status refuseCapture(cudaStream_t caller) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  ZCCL_CUDA_CHECK(cudaStreamIsCapturing(caller, &capture));
  if (capture == cudaStreamCaptureStatusNone) return Status::kSuccess;
  return fail(Status::kInvalidUsage,
              "stream=%p is capturing a CUDA graph: zccl's device collectives run on zccl's own "
              "thread and stream, which a graph cannot hold; call them outside the capture",
              static_cast<void*>(caller));
}

class CudaStreamGates final : public StreamGates {
 public:
  ~CudaStreamGates() override {
    if (released_ != nullptr) cudaFreeHost(released_);
  }
  Status start() {
    void* counter = nullptr;
    ZCCL_CUDA_CHECK(cudaHostAlloc(&counter, sizeof(uint64_t), cudaHostAllocMapped));
    released_ = static_cast<uint64_t*>(counter);
    *released_ = 0;
    void* onDevice = nullptr;
    ZCCL_CUDA_CHECK(cudaHostGetDevicePointer(&onDevice, counter, 0));
    releasedOnDevice_ = static_cast<const uint64_t*>(onDevice);
    return Status::kSuccess;
  }
  Status close(void* stream, uint64_t ticket, std::unique_ptr<StreamInputs>* inputs) override {
    const auto caller = static_cast<cudaStream_t>(stream);
    ZCCL_CHECK(refuseCapture(caller));
    cudaEvent_t event = nullptr;
    ZCCL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    auto marked = std::make_unique<CudaStreamInputs>(event);
    ZCCL_CUDA_CHECK(cudaEventRecord(event, caller));
    holdUntilReleased<<<1, 1, 0, caller>>>(releasedOnDevice_, ticket);
    ZCCL_CUDA_CHECK(cudaGetLastError());
    *inputs = std::move(marked);
    return Status::kSuccess;
  }
  void release(uint64_t ticket) override { __atomic_store_n(released_, ticket, __ATOMIC_RELEASE); }

 private:
  uint64_t* released_ = nullptr;
  const uint64_t* releasedOnDevice_ = nullptr;
};

Status loadKernelsOnce() {
  static std::mutex mutex;
  static std::set<int> loaded;
  int device = 0;
  ZCCL_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(device) != 0) return Status::kSuccess;
  ZCCL_CHECK(preloadCudaKernels(holdUntilReleased));
  ZCCL_CHECK(preloadReduceKernelsCuda());
  ZCCL_CHECK(preloadQuantizeKernelsCuda());
  loaded.insert(device);
  return Status::kSuccess;
}

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
  Status setCurrentDevice(int device) override {
    ZCCL_CUDA_CHECK(cudaSetDevice(device));
    return Status::kSuccess;
  }
  Status ownStream(std::unique_ptr<DeviceStreamResources>* out) override {
    // Non-blocking: the legacy default stream, which a caller may pass and which a gate
    // holds, must not hold zccl's stream, nor zccl's stream it. The highest priority, so that
    // the staging copies and kernels a held stream waits for are not starved.
    int least = 0, greatest = 0;
    ZCCL_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    cudaStream_t stream = nullptr;
    ZCCL_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    *out = std::make_unique<CudaStreamResources>(stream);
    return Status::kSuccess;
  }
  Status streamGates(std::unique_ptr<StreamGates>* out) override {
    auto gates = std::make_unique<CudaStreamGates>();
    ZCCL_CHECK(gates->start());
    *out = std::move(gates);
    return Status::kSuccess;
  }
  Status loadKernels() override { return loadKernelsOnce(); }
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
