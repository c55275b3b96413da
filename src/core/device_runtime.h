// What zccl needs of a device runtime to run collectives on its memory: which memory a
// pointer is, a device scratch allocator, and per stream the kernels, the copier that stages
// messages through host memory and a wait for the work queued so far. CUDA's where zccl was
// built with it and a GPU is visible; the tests install an emulated device.
#pragma once

#include <memory>
#include <string>

#include "common/scratch.h"
#include "common/status.h"
#include "common/types.h"
#include "kernels/kernels.h"
#include "transport/staged/staged_transport.h"

namespace zccl {

struct PointerInfo {
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;  // the device holding it, for device memory
};

// The device work of collectives on one stream.
class DeviceStreamResources {
 public:
  virtual ~DeviceStreamResources() = default;
  virtual Kernels& kernels() = 0;
  virtual DeviceCopier& copier() = 0;
  // Returns when the work queued on the stream so far has finished.
  virtual Status synchronize() = 0;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual const char* name() const = 0;
  virtual Status classify(const void* pointer, PointerInfo* info) = 0;
  virtual Status currentDevice(int* device) = 0;
  virtual Status forStream(void* stream, std::unique_ptr<DeviceStreamResources>* out) = 0;
  virtual ScratchAllocator scratchAllocator() = 0;
  // The current device's identity among this machine's (its PCI bus id) for NCCL, which runs
  // one rank per device; false, with *whyNot, where this runtime cannot run NCCL.
  virtual bool ncclDeviceId(std::string* id, std::string* whyNot) = 0;
};

// The process's device runtime: the one installed, else CUDA's where zccl was built with it
// and a GPU is visible, else nullptr.
DeviceRuntime* deviceRuntime();

// Makes `runtime` (not owned; nullptr restores the default) serve the communicators created
// from now on. For tests, which stand an emulated device in for a GPU.
void installDeviceRuntime(DeviceRuntime* runtime);

}  // namespace zccl
