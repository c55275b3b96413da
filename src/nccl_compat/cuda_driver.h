// The few CUDA driver calls the drop-in needs, loaded at run time (libcuda.so.1), so that the
// library runs, on host memory only, on machines without CUDA.
#pragma once

#include <string>

#include "nccl_abi/nccl_abi.h"

namespace zccl::nccl {

enum class MemoryKind { kHost, kDevice };

// kDevice for memory a GPU owns (cudaMalloc, managed memory); kHost for everything else,
// and for every pointer when there is no CUDA driver.
MemoryKind memoryKind(const void* pointer);

// True when a CUDA driver with at least one device is loaded.
bool cudaAvailable();

// Waits for the work queued on stream (host buffers given with a stream are read after it).
// A non-NULL stream without a CUDA driver is ncclInvalidArgument.
ncclResult_t synchronizeStream(cudaStream_t stream, std::string* error);

// The device of the calling thread's current context, or -1 without one.
int currentDevice();

}  // namespace zccl::nccl
