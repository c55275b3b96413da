// Device memory in a build without CUDA: there is none to open.
#include "nccl_tests/memory.h"

namespace zccl_perf {

int visibleGpus() { return 0; }

std::unique_ptr<BufferMemory> openDeviceMemory(int /*localRank*/, std::string* error) {
  *error = "-M device: these binaries were built without CUDA (configure with ZCCL_WITH_CUDA)";
  return nullptr;
}

}  // namespace zccl_perf
