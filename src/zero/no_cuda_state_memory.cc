// A build without CUDA has no GPU memory for the optimizer's state.
#include "zccl/zero.hpp"

namespace zccl::zero {

std::unique_ptr<StateMemory> makeCudaStateMemory(int /*device*/, std::string* error) {
  *error = "zccl was built without CUDA (configure with ZCCL_WITH_CUDA)";
  return nullptr;
}

}  // namespace zccl::zero
