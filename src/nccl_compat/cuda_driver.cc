// The drop-in's CUDA driver calls, loaded at run time (cuda_driver.h).
#include "nccl_compat/cuda_driver.h"

#include <dlfcn.h>

#include <cstdio>

namespace zccl::nccl {
namespace {

// Values of the CUDA driver API (cuda.h) that these calls use.
constexpr int kCudaSuccess = 0;
constexpr int kPointerAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kPointerAttributeIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr unsigned kMemoryTypeDevice = 2;       // CU_MEMORYTYPE_DEVICE

struct Driver {
  int (*init)(unsigned) = nullptr;
  int (*deviceGetCount)(int*) = nullptr;
  int (*pointerGetAttribute)(void*, int, unsigned long long) = nullptr;
  int (*streamSynchronize)(CUstream_st*) = nullptr;
  int (*ctxGetDevice)(int*) = nullptr;
  bool usable = false;
};

template <typename Function>
bool bind(void* library, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  return *function != nullptr;
}

Driver loadDriver() {
  Driver driver;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return driver;
  const bool bound = bind(library, "cuInit", &driver.init) &&
                     bind(library, "cuDeviceGetCount", &driver.deviceGetCount) &&
                     bind(library, "cuPointerGetAttribute", &driver.pointerGetAttribute) &&
                     bind(library, "cuStreamSynchronize", &driver.streamSynchronize) &&
                     bind(library, "cuCtxGetDevice", &driver.ctxGetDevice);
  int devices = 0;
  driver.usable = bound && driver.init(0) == kCudaSuccess &&
                  driver.deviceGetCount(&devices) == kCudaSuccess && devices > 0;
  return driver;
}

const Driver& driver() {
  static const Driver loaded = loadDriver();
  return loaded;
}

}  // namespace

bool cudaAvailable() { return driver().usable; }

MemoryKind memoryKind(const void* pointer) {
  const Driver& cuda = driver();
  if (!cuda.usable || pointer == nullptr) return MemoryKind::kHost;
  const auto address = reinterpret_cast<unsigned long long>(pointer);
  unsigned type = 0;
  // Memory the driver does not know (plain malloc) is an error here: host memory.
  if (cuda.pointerGetAttribute(&type, kPointerAttributeMemoryType, address) != kCudaSuccess) {
    return MemoryKind::kHost;
  }
  int managed = 0;
  cuda.pointerGetAttribute(&managed, kPointerAttributeIsManaged, address);
  return type == kMemoryTypeDevice || managed != 0 ? MemoryKind::kDevice : MemoryKind::kHost;
}

ncclResult_t synchronizeStream(cudaStream_t stream, std::string* error) {
  if (stream == nullptr) return ncclSuccess;
  const Driver& cuda = driver();
  char text[200];
  if (!cuda.usable) {
    std::snprintf(text, sizeof(text),
                  "stream=%p with host buffers, but there is no CUDA driver here: pass a NULL "
                  "stream for host memory",
                  static_cast<void*>(stream));
    *error = text;
    return ncclInvalidArgument;
  }
  const int result = cuda.streamSynchronize(stream);
  if (result != kCudaSuccess) {
    std::snprintf(text, sizeof(text), "cuStreamSynchronize(stream=%p) failed with CUDA error %d",
                  static_cast<void*>(stream), result);
    *error = text;
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

int currentDevice() {
  const Driver& cuda = driver();
  int device = -1;
  if (!cuda.usable || cuda.ctxGetDevice(&device) != kCudaSuccess) return -1;
  return device;
}

}  // namespace zccl::nccl
