// Device memory for the perf binaries: cudaMalloc'd buffers on one GPU per rank of a node and a
// non-blocking stream of the binary's own, which the collectives are queued on.
#include <cuda_runtime.h>

#include <cstdio>

#include "nccl_tests/memory.h"

namespace zccl_perf {
namespace {

class CudaMemory : public BufferMemory {
 public:
  ~CudaMemory() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  // Makes `device` current for the rest of the process (the collectives run on the current
  // device) and creates the stream there.
  bool open(int device) {
    device_ = device;
    return ok(cudaSetDevice(device), "cudaSetDevice") &&
           ok(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }

  bool device() const override { return true; }
  std::string describe() const override {
    cudaDeviceProp properties{};
    char bus[32] = "?";
    if (cudaGetDeviceProperties(&properties, device_) == cudaSuccess) {
      std::snprintf(bus, sizeof(bus), "%04x:%02x:%02x", properties.pciDomainID, properties.pciBusID,
                    properties.pciDeviceID);
    }
    return "device " + std::to_string(device_) + " [" + bus + "] " + properties.name;
  }
  void* allocate(size_t bytes) override {
    void* buffer = nullptr;
    return ok(cudaMalloc(&buffer, bytes), "cudaMalloc") ? buffer : nullptr;
  }
  void release(void* buffer) override { cudaFree(buffer); }
  bool upload(void* buffer, const void* mirror, size_t bytes) override {
    return copy(buffer, mirror, bytes, cudaMemcpyHostToDevice);
  }
  bool download(void* mirror, const void* buffer, size_t bytes) override {
    return copy(mirror, buffer, bytes, cudaMemcpyDeviceToHost);
  }
  zcclStream_t stream() const override { return stream_; }
  bool synchronize() override {
    return ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  const std::string& error() const override { return error_; }

 private:
  bool ok(cudaError_t status, const char* call) {
    if (status == cudaSuccess) return true;
    error_ = std::string(call) + " on device " + std::to_string(device_) + ": " +
             cudaGetErrorString(status);
    return false;
  }
  // On the stream, so that the copy follows the collectives queued before it.
  bool copy(void* to, const void* from, size_t bytes, cudaMemcpyKind kind) {
    return ok(cudaMemcpyAsync(to, from, bytes, kind, stream_), "cudaMemcpyAsync") && synchronize();
  }

  int device_ = -1;
  cudaStream_t stream_ = nullptr;
  std::string error_;
};

}  // namespace

int visibleGpus() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

std::unique_ptr<BufferMemory> openDeviceMemory(int localRank, std::string* error) {
  const int gpus = visibleGpus();
  if (gpus == 0) {
    *error = "-M device: no GPU is visible to this process";
    return nullptr;
  }
  auto memory = std::make_unique<CudaMemory>();
  if (!memory->open(localRank % gpus)) {
    *error = memory->error();
    return nullptr;
  }
  return memory;
}

}  // namespace zccl_perf
