// Built without UCX (libucx-dev was not found): communicators need MPI.
#include "transport/ucx/ucx_transport.h"

namespace zccl {

Status createUcxTransport(Bootstrap& /*bootstrap*/, const TransportOptions& /*options*/,
                          std::unique_ptr<Transport>* /*out*/) {
  return fail(Status::kInvalidUsage,
              "zccl was built without UCX: communicators need MPI (zcclCommInitMPI); rebuild "
              "with UCX (libucx-dev) to start without it");
}

}  // namespace zccl
