// Host memory for the perf binaries, and the choice between host and device (memory.h).
#include "nccl_tests/memory.h"

#include <cstdlib>
#include <cstring>

namespace zccl_perf {
namespace {

class HostMemory : public BufferMemory {
 public:
  bool device() const override { return false; }
  std::string describe() const override { return "host memory"; }
  void* allocate(size_t bytes) override {
    void* buffer = std::malloc(bytes);
    if (buffer == nullptr) error_ = "cannot allocate " + std::to_string(bytes) + " bytes";
    return buffer;
  }
  void release(void* buffer) override { std::free(buffer); }
  // The mirrors are the buffers themselves.
  bool upload(void* buffer, const void* mirror, size_t bytes) override {
    if (buffer != mirror) std::memmove(buffer, mirror, bytes);
    return true;
  }
  bool download(void* mirror, const void* buffer, size_t bytes) override {
    return upload(mirror, buffer, bytes);
  }
  zcclStream_t stream() const override { return nullptr; }
  bool synchronize() override { return true; }
  const std::string& error() const override { return error_; }

 private:
  std::string error_;
};

}  // namespace

std::unique_ptr<BufferMemory> openMemory(MemoryChoice choice, int localRank, std::string* error) {
  if (choice == MemoryChoice::kHost || (choice == MemoryChoice::kAuto && visibleGpus() == 0)) {
    return std::make_unique<HostMemory>();
  }
  return openDeviceMemory(localRank, error);
}

}  // namespace zccl_perf
