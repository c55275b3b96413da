// Transport over UCX's tagged send/receive on host memory (shared memory, CMA, TCP, and
// InfiniBand where present), for jobs started without MPI. Worker addresses are exchanged
// through a Bootstrap; sub-groups share their parent's worker under tags of their own.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace zccl {

// Collective over the bootstrap's ranks.
Status createUcxTransport(Bootstrap& bootstrap, const TransportOptions& options,
                          std::unique_ptr<Transport>* out);

}  // namespace zccl
