// Which device runtime serves the process (device_runtime.h).
#include "device/device_runtime.h"

#include <atomic>

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
