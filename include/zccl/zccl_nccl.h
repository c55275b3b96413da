/*
 * zccl's NCCL drop-in (libzccl_nccl.so): the one zccl call it adds to NCCL's API, for
 * programs that want zccl's view of a communicator they made through NCCL's calls
 * (zcclCommGetStats, the introspection of zccl_introspect.h). Defined in libzccl_nccl.so.
 */
#ifndef ZCCL_ZCCL_NCCL_H_
#define ZCCL_ZCCL_NCCL_H_

#include "zccl/zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ncclComm;

/* The zccl communicator that carries comm's host memory; zcclInvalidArgument when comm is not
 * a live communicator of the drop-in. It belongs to comm: do not destroy it. */
ZCCL_API zcclResult_t zcclNcclGetComm(struct ncclComm* comm, zcclComm_t* zcclComm);

#ifdef __cplusplus
}
#endif

#endif /* ZCCL_ZCCL_NCCL_H_ */
