// zcclCommInitMPI: a communicator whose bytes MPI moves, over a duplicate of the caller's
// MPI communicator. The one place above the transport that knows MPI.
#include <mpi.h>

#include "common/log.h"
#include "core/guarded.h"
#include "transport/mpi/mpi_transport.h"

extern "C" {

zcclResult_t zcclCommInitMPI(MPI_Comm mpiComm, const zcclConfig* config, zcclComm_t* comm) {
  return zccl::guarded([&] {
    if (comm == nullptr) return zccl::fail(zccl::Status::kInvalidArgument, "comm=NULL (output)");
    *comm = nullptr;
    // A configuration this rank rejects still joins the setup, so that the other ranks
    // learn of it instead of waiting for this one.
    zccl::CommConfig resolved;
    const zccl::Status configured = zccl::resolveConfig(config, &resolved);
    const std::string why = zccl::lastThreadError();
    std::unique_ptr<zccl::Transport> transport;
    ZCCL_CHECK(zccl::createMpiTransport(mpiComm, zccl::TransportOptions{resolved.timeoutSeconds},
                                        &transport));
    int worldRank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    zccl::setLogRank(worldRank);
    ZCCL_CHECK(zccl::agreeOnInit(*transport, configured, why));
    return zccl::createComm(std::move(transport), resolved, comm);
  });
}

}  // extern "C"
