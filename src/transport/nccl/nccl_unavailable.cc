// Built without CUDA: there is no device memory for NCCL to move.
#include "transport/nccl/nccl_transport.h"

namespace zccl {

bool ncclLoadable(std::string* reason) {
  *reason = "zccl was built without CUDA";
  return false;
}

Status makeNcclTransport(Transport& /*control*/, const TransportOptions& /*options*/,
                         std::unique_ptr<StreamTransport>* /*out*/) {
  return fail(Status::kInvalidUsage, "zccl was built without CUDA: no NCCL transport");
}

}  // namespace zccl
