// Reusable scratch memory: each slot grows to the largest size asked of it and is kept,
// so that collectives allocate nothing per call in steady state.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <vector>

#include "common/status.h"

namespace zccl {

class ScratchPool {
 public:
  // A buffer of at least `bytes` for `slot`, valid until the next get() of the same slot.
  Status get(size_t slot, size_t bytes, void** buffer);
  size_t reservedBytes() const;

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  struct Slot {
    std::unique_ptr<void, Free> data;
    size_t bytes = 0;
  };
  std::vector<Slot> slots_;
};

}  // namespace zccl
