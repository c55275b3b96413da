#include "common/scratch.h"

namespace zccl {

Status ScratchPool::get(size_t slot, size_t bytes, void** buffer) {
  if (slot >= slots_.size()) slots_.resize(slot + 1);
  Slot& entry = slots_[slot];
  if (entry.bytes < bytes) {
    constexpr size_t kAlignment = 64;  // cache line, and enough for any SIMD load
    const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    void* data = std::aligned_alloc(kAlignment, rounded);
    if (data == nullptr) {
      return fail(Status::kSystemError, "cannot allocate %zu bytes of scratch memory", rounded);
    }
    entry.data.reset(data);
    entry.bytes = rounded;
  }
  *buffer = entry.data.get();
  return Status::kSuccess;
}

size_t ScratchPool::reservedBytes() const {
  size_t total = 0;
  for (const Slot& slot : slots_) total += slot.bytes;
  return total;
}

}  // namespace zccl
