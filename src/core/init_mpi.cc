// zcclCommInitMPI: a communicator over the ranks of an MPI communicator. MPI carries the
// rendezvous; the bytes travel over zccl's UCX transport (ZCCL_TRANSPORT=auto or ucx), which
// survives a peer that dies and progresses queued calls on the communicator's own thread, or
// over MPI's point-to-point on a duplicate of the communicator (ZCCL_TRANSPORT=mpi, which also
// offers MPI's own collectives as the native algorithm). The one place above the transport
// that knows MPI.
#include "common/log.h"
#include "core/comm.h"
#include "core/guarded.h"
#include "transport/control_bootstrap.h"
#include "transport/mpi/mpi_transport.h"
#include "transport/ucx/ucx_transport.h"
#include "zccl/zccl_mpi.h"

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
    const zccl::TransportOptions options = resolved.transportOptions();
    std::unique_ptr<zccl::Transport> transport;
    ZCCL_CHECK(zccl::createMpiTransport(mpiComm, options, &transport));
    int worldRank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
    zccl::setLogRank(worldRank);
    if (configured == zccl::Status::kSuccess && resolved.transport != zccl::TransportKind::kMpi) {
      std::unique_ptr<zccl::Transport> ucx;
      ZCCL_CHECK(zccl::createUcxTransport(*zccl::bootstrapOver(*transport), options, &ucx));
      transport = std::move(ucx);
    }
    zccl::restoreThreadError(why);
    return zccl::createComm(std::move(transport), resolved, configured, comm);
  });
}

}  // extern "C"
