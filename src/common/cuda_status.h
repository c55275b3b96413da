// CUDA runtime results as zccl Status, for the .cu files (which alone include this).
#pragma once

#include <cuda_runtime.h>

#include "common/status.h"

namespace zccl {

inline Status cudaFailure(cudaError_t error, const char* what) {
  return fail(Status::kSystemError, "%s: CUDA error %d (%s)", what, static_cast<int>(error),
              cudaGetErrorString(error));
}

}  // namespace zccl

#define ZCCL_CUDA_CHECK(call)                                                                 \
  do {                                                                                        \
    const cudaError_t zccl_cuda_error_ = (call);                                              \
    if (zccl_cuda_error_ != cudaSuccess) return ::zccl::cudaFailure(zccl_cuda_error_, #call); \
  } while (0)
