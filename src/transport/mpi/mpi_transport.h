// Transport over MPI point-to-point on host memory.
#pragma once

#include <mpi.h>

#include <memory>

#include "transport/transport.h"

namespace zccl {

// Duplicates `comm`, so that zccl's messages never match the application's.
Status createMpiTransport(MPI_Comm comm, const TransportOptions& options,
                          std::unique_ptr<Transport>* out);

}  // namespace zccl
