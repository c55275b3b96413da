// The Kernels of device memory: CUDA kernels and copies queued on one stream, the collective's
// (quant/quantize_cuda.h, kernels/reduce_cuda.h). Built only with CUDA (ZCCL_HAVE_CUDA).
#pragma once

#include <memory>

#include "common/scratch.h"
#include "kernels/kernels.h"
#include "quant/quantize_cuda.h"

namespace zccl {

std::unique_ptr<Kernels> makeCudaKernels(DeviceStream stream);

// Device memory of the current device (cudaMalloc), for a device scratch pool.
ScratchAllocator cudaScratchAllocator();

}  // namespace zccl
