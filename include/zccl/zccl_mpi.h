/*
 * zccl for MPI programs: a communicator over the ranks of an MPI communicator. Include it
 * where <mpi.h> is available (compile with mpicc, or link CMake's zccl::mpi).
 */
#ifndef ZCCL_ZCCL_MPI_H_
#define ZCCL_ZCCL_MPI_H_

#include <mpi.h>

#include "zccl/zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over mpiComm: every rank of it must call. config may be NULL. The bytes travel
 * over UCX, set up through MPI (ZCCL_TRANSPORT=mpi: over MPI, on a duplicate of mpiComm). */
ZCCL_API zcclResult_t zcclCommInitMPI(MPI_Comm mpiComm, const zcclConfig* config, zcclComm_t* comm);

#ifdef __cplusplus
}
#endif

#endif /* ZCCL_ZCCL_MPI_H_ */
