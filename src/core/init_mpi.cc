// zcclCommInitMPI: a communicator whose bytes MPI moves, over a duplicate of the caller's
// MPI communicator. The one place above the transport that knows MPI.
#include <mpi.h>

#include "common/log.h"
#include "core/guarded.h"
#include "transport/mpi/mpi_transport.h"

extern "C" {

zcclResult_t zcclCommInitMPI(MPI_Comm mpiComm, const zcclConfig* config, zcclComm_t* comm) {
  return zccl::guarded(nullptr, [&] {
    if (comm == nullptr) return zccl::fail(zccl::Status::kInvalidArgument, "comm=NULL (output)");
    *comm = nullptr;
    zccl::CommConfig resolved;
    ZCCL_CHECK(zccl::resolveConfig(config, &resolved));
    std::unique_ptr<zccl::Transport> transport;
    ZCCL_CHECK(zccl::createMpiTransport(mpiComm, zccl::TransportOptions{resolved.timeoutSeconds},
                                        &transport));
    int worldRank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    zccl::setLogRank(worldRank);
    return zccl::createComm(std::move(transport), resolved, comm);
  });
}

}  // extern "C"
