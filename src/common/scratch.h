// Reusable scratch memory: each slot grows to the largest size asked of it and is kept,
// so that collectives allocate nothing per call in steady state. Host memory by default; a
// pool of another memory (a device's) takes that memory's allocator.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "common/status.h"

namespace zccl {

struct ScratchAllocator {
  // nullptr when the memory is exhausted.
  std::function<void*(size_t bytes)> allocate;
  std::function<void(void* data)> release;
};

// 64-byte aligned host memory (a cache line, and enough for any SIMD load).
ScratchAllocator hostScratchAllocator();

class ScratchPool {
 public:
  explicit ScratchPool(ScratchAllocator allocator = hostScratchAllocator());
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // A buffer of at least `bytes` for `slot`, valid until the next get() of the same slot.
  Status get(size_t slot, size_t bytes, void** buffer);
  size_t reservedBytes() const;

 private:
  struct Slot {
    void* data = nullptr;
    size_t bytes = 0;
  };
  ScratchAllocator allocator_;
  std::vector<Slot> slots_;
};

}  // namespace zccl
