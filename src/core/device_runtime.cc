#include "core/device_runtime.h"

#include <atomic>

#ifdef ZCCL_HAVE_CUDA
#include "core/cuda_device_runtime.h"
#endif

namespace zccl {
namespace {

std::atomic<DeviceRuntime*> installed{nullptr};

}  // namespace

DeviceRuntime* deviceRuntime() {
  if (DeviceRuntime* runtime = installed.load()) return runtime;
#ifdef ZCCL_HAVE_CUDA
  return cudaDeviceRuntime();
#else
  return nullptr;
#endif
}

void installDeviceRuntime(DeviceRuntime* runtime) { installed.store(runtime); }

}  // namespace zccl
