// Scratch memory slots (scratch.h).
#include "common/scratch.h"

#include <cstdlib>
#include <utility>

namespace zccl {

ScratchAllocator hostScratchAllocator() {
  constexpr size_t kAlignment = 64;
  return ScratchAllocator{[](size_t bytes) {
                            return std::aligned_alloc(
                                kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
                          },
                          [](void* data) { std::free(data); }};
}

ScratchPool::ScratchPool(ScratchAllocator allocator) : allocator_(std::move(allocator)) {}

ScratchPool::~ScratchPool() {
  for (Slot& slot : slots_) {
    if (slot.data != nullptr) allocator_.release(slot.data);
  }
}

Status ScratchPool::get(size_t slot, size_t bytes, void** buffer) {
  if (slot >= slots_.size()) slots_.resize(slot + 1);
  Slot& entry = slots_[slot];
  if (entry.data == nullptr || entry.bytes < bytes) {
    void* data = allocator_.allocate(bytes > 0 ? bytes : 1);
    if (data == nullptr) {
      return fail(Status::kSystemError, "cannot allocate %zu bytes of scratch memory", bytes);
    }
    if (entry.data != nullptr) allocator_.release(entry.data);
    entry.data = data;
    entry.bytes = bytes;
  }
  *buffer = entry.data;
  return Status::kSuccess;
}

size_t ScratchPool::reservedBytes() const {
  size_t total = 0;
  for (const Slot& slot : slots_) total += slot.bytes;
  return total;
}

}  // namespace zccl
