// What zccl needs of a device runtime to run collectives on its memory: which memory a
// pointer is, a stream of zccl's own with its kernels, copier and scratch allocator, and the
// gates that order zccl's work on its callers' streams. CUDA's where zccl was built with it
// and a GPU is visible; the tests install an emulated device.
#pragma once

#include <cstdint>
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

// The device work of collectives on one stream: zccl's own, which no caller's stream waits
// for implicitly (CUDA: non-blocking) and which waits for none.
class DeviceStreamResources {
 public:
  virtual ~DeviceStreamResources() = default;
  // The stream's handle (what NCCL queues on).
  virtual void* stream() = 0;
  virtual Kernels& kernels() = 0;
  virtual DeviceCopier& copier() = 0;
  // Device memory whose allocation and release are ordered on this stream, so that neither
  // waits for the device's other streams (a caller's may be held at a gate meanwhile).
  virtual ScratchAllocator scratchAllocator() = 0;
  // Returns when the work queued on the stream so far has finished.
  virtual Status synchronize() = 0;
};

// The work a caller queued on its stream before a gate.
class StreamInputs {
 public:
  virtual ~StreamInputs() = default;
  // The work queued on `own`'s stream from now on runs after it.
  virtual Status precede(DeviceStreamResources& own) = 0;
};

// Orders one device path's jobs on its callers' streams. Each job holds a ticket (1, 2, ... in
// submission order): a gate queued on the caller's stream holds the work queued there after it
// until the job's ticket is released.
class StreamGates {
 public:
  virtual ~StreamGates() = default;
  // On the caller's thread, at the call: marks the work queued on `stream` so far (`inputs`),
  // then queues the gate of `ticket`. Returns at once.
  virtual Status close(void* stream, uint64_t ticket, std::unique_ptr<StreamInputs>* inputs) = 0;
  // Opens the gates of every ticket up to `ticket` (tickets are released in order).
  virtual void release(uint64_t ticket) = 0;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual const char* name() const = 0;
  virtual Status classify(const void* pointer, PointerInfo* info) = 0;
  virtual Status currentDevice(int* device) = 0;
  // Makes `device` the calling thread's current device (the communicator's thread's, at its first
  // device job).
  virtual Status setCurrentDevice(int device) = 0;
  // A new stream of zccl's own on the current device, with its kernels, copier and scratch.
  virtual Status ownStream(std::unique_ptr<DeviceStreamResources>* out) = 0;
  virtual Status streamGates(std::unique_ptr<StreamGates>* out) = 0;
  // Loads zccl's kernels into the current device's context (once per device). CUDA loads a
  // kernel at its first launch, and a load may wait for every stream of the context, a stream
  // held at a gate too: the device path calls this before its first gate, as NCCL loads its
  // kernels at initialization.
  virtual Status loadKernels() = 0;
  // The current device's identity among this machine's (its PCI bus id) for NCCL, which runs
  // one rank per device; false, with *whyNot, where this runtime cannot run NCCL.
  virtual bool ncclDeviceId(std::string* id, std::string* whyNot) = 0;
};

// The process's CUDA runtime (cuda_device_runtime.cu, built only with CUDA), or nullptr where
// no GPU is visible (checked once).
DeviceRuntime* cudaDeviceRuntime();

// The process's device runtime: the one installed, else CUDA's where zccl was built with it
// and a GPU is visible, else nullptr.
DeviceRuntime* deviceRuntime();

// Makes `runtime` (not owned; nullptr restores the default) serve the communicators created
// from now on. For tests, which stand an emulated device in for a GPU.
void installDeviceRuntime(DeviceRuntime* runtime);

}  // namespace zccl
