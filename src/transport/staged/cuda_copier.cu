// The staged transport's copier on a CUDA stream (cuda_copier.h).
#include <cuda_runtime.h>

#include <vector>

#include "common/cuda_status.h"
#include "transport/staged/cuda_copier.h"

namespace zccl {
namespace {

class CudaCopier final : public DeviceCopier {
 public:
  explicit CudaCopier(cudaStream_t stream) : stream_(stream) {}
  ~CudaCopier() override {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
  }

  Status toHost(void* host, const void* device, size_t bytes, CopyId* id) override {
    ZCCL_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
    return mark(id);
  }
  Status toDevice(void* device, const void* host, size_t bytes, CopyId* id) override {
    ZCCL_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream_));
    return mark(id);
  }
  Status waitCopy(CopyId id) override {
    if (id >= used_) return fail(Status::kInternalError, "wait on unknown copy %zu", id);
    ZCCL_CUDA_CHECK(cudaEventSynchronize(events_[id]));
    return Status::kSuccess;
  }
  Status waitAllCopies() override {
    ZCCL_CUDA_CHECK(cudaStreamSynchronize(stream_));
    used_ = 0;  // the events are reused by the next round
    return Status::kSuccess;
  }
  void* allocateHost(size_t bytes) override {
    void* data = nullptr;
    return cudaHostAlloc(&data, bytes, cudaHostAllocDefault) == cudaSuccess ? data : nullptr;
  }
  void freeHost(void* data) override { cudaFreeHost(data); }

 private:
  // An event after the copy just queued: the copy is done when the event is.
  Status mark(CopyId* id) {
    if (used_ == events_.size()) {
      cudaEvent_t event;
      ZCCL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      events_.push_back(event);
    }
    ZCCL_CUDA_CHECK(cudaEventRecord(events_[used_], stream_));
    *id = used_++;
    return Status::kSuccess;
  }

  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

}  // namespace

std::unique_ptr<DeviceCopier> makeCudaCopier(CUstream_st* stream) {
  return std::make_unique<CudaCopier>(stream);
}

}  // namespace zccl
