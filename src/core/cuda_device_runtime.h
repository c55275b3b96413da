// CUDA's device runtime (core/device_runtime.h). Built only with CUDA (ZCCL_HAVE_CUDA).
#pragma once

#include "core/device_runtime.h"

namespace zccl {

// The process's CUDA runtime, or nullptr where no GPU is visible (checked once).
DeviceRuntime* cudaDeviceRuntime();

}  // namespace zccl
