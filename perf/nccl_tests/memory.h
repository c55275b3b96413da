// Where a perf binary's buffers live: host memory (the calls get stream NULL), or the memory
// of a GPU with a CUDA stream of the binary's own, as nccl-tests runs. Inputs are written and
// results read in host mirrors, copied to and from the buffers around each checked call.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "zccl/zccl.h"

namespace zccl_perf {

// -M: device where a GPU is visible (nccl-tests' only memory), else host.
enum class MemoryChoice { kAuto, kHost, kDevice };

class BufferMemory {
 public:
  virtual ~BufferMemory() = default;
  virtual bool device() const = 0;
  // For the preamble: "host memory", or the GPU's index, bus id and name.
  virtual std::string describe() const = 0;
  // nullptr when the memory cannot be had; error() then says why.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* buffer) = 0;
  // Copies between a host mirror and a buffer, after the stream's queued work.
  virtual bool upload(void* buffer, const void* mirror, size_t bytes) = 0;
  virtual bool download(void* mirror, const void* buffer, size_t bytes) = 0;
  // The stream the collectives are queued on: NULL for host memory.
  virtual zcclStream_t stream() const = 0;
  // Waits for the work queued on stream().
  virtual bool synchronize() = 0;
  virtual const std::string& error() const = 0;
};

// The memory asked for, on the GPU of index localRank modulo the GPUs visible; nullptr and
// *error when it cannot be had (device memory without a GPU, or in a build without CUDA).
std::unique_ptr<BufferMemory> openMemory(MemoryChoice choice, int localRank, std::string* error);

// GPUs this process sees: 0 without a driver, a device, or a build with CUDA.
int visibleGpus();
// The memory of the GPU of index localRank modulo visibleGpus() (memory_cuda.cc where the
// binaries are built with CUDA); nullptr and *error when it cannot be had.
std::unique_ptr<BufferMemory> openDeviceMemory(int localRank, std::string* error);

}  // namespace zccl_perf
