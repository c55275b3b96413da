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

namespace zccl {

// Loads `kernels` into the current device's context now. CUDA loads a kernel at its first
// launch by default (lazy loading), and a load may wait for every stream of the context: with
// one of zccl's gates spinning on a caller's stream until zccl's work is done, the first
// launch of a kernel of that work would never return. Loaded before the first gate, none is
// loaded while one spins.
template <typename... Kernels>
Status preloadCudaKernels(Kernels... kernels) {
  cudaError_t errors[] = {cudaSuccess, [&](auto kernel) {
                            cudaFuncAttributes attributes;
                            return cudaFuncGetAttributes(&attributes, kernel);
                          }(kernels)...};
  for (cudaError_t error : errors) ZCCL_CUDA_CHECK(error);
  return Status::kSuccess;
}

}  // namespace zccl
