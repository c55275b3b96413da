// Device buffers over a host transport: each message travels in chunks through page-locked
// host memory, the copy of one chunk overlapping the transfer of the one before (ZeRO++'s
// quantized paths quantize on the device first, so only compressed bytes are staged). For
// machines without NCCL, and for several ranks sharing one GPU, which NCCL refuses.
#pragma once

#include <cstddef>
#include <memory>

#include "transport/transport.h"

namespace zccl {

// Copies between device and host memory, in order on one device stream (the collective's).
// A copy returns at once; waitCopy(id) waits for it. Ids are valid until waitAllCopies().
class DeviceCopier {
 public:
  using CopyId = size_t;
  virtual ~DeviceCopier() = default;

  virtual Status toHost(void* host, const void* device, size_t bytes, CopyId* id) = 0;
  virtual Status toDevice(void* device, const void* host, size_t bytes, CopyId* id) = 0;
  virtual Status waitCopy(CopyId id) = 0;
  virtual Status waitAllCopies() = 0;
  // Host memory the device copies at full speed (page-locked where the platform has it);
  // nullptr when none is left.
  virtual void* allocateHost(size_t bytes) = 0;
  virtual void freeHost(void* data) = 0;
};

struct StagedOptions {
  // Every rank must use the same: both ends cut a message into the same chunks.
  size_t chunkBytes = size_t{1} << 20;
};

// A transport whose postSend/postRecv take device buffers and move them over `host` (which
// counts the bytes on the wire: the statistics stay the host transport's). It has no native
// collectives. `host` and `copier` must outlive it; sub-groups (split) own their host
// transport. After abandon() with messages left in flight, the staging memory is never freed
// (the host transport may still write it).
std::unique_ptr<Transport> makeStagedTransport(Transport& host, DeviceCopier& copier,
                                               const StagedOptions& options);

}  // namespace zccl
