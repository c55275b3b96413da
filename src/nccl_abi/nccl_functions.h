// The real NCCL's functions, bound at run time from the library nccl_library.h finds: one
// table for every user (the NCCL transport of zccl's device path, and the drop-in's device
// buffers that go to the real NCCL), typed with NCCL's own ABI (nccl_abi.h).
#pragma once

#include <cstddef>
#include <string>

#include "nccl_abi/nccl_abi.h"

namespace zccl::nccl {

// The real library's own communicator type: its functions take it where NCCL's take
// ncclComm_t, so that a drop-in communicator is never passed to it by mistake.
struct RealComm;

struct NcclFunctions {
  ncclResult_t (*getVersion)(int*);
  const char* (*getErrorString)(ncclResult_t);
  ncclResult_t (*getUniqueId)(ncclUniqueId*);
  ncclResult_t (*commInitRank)(RealComm**, int, ncclUniqueId, int);
  ncclResult_t (*commInitRankConfig)(RealComm**, int, ncclUniqueId, int, const void*);
  ncclResult_t (*commFinalize)(RealComm*);
  ncclResult_t (*commDestroy)(RealComm*);
  ncclResult_t (*commAbort)(RealComm*);
  ncclResult_t (*commGetAsyncError)(RealComm*, ncclResult_t*);
  const char* (*getLastError)(RealComm*);
  ncclResult_t (*commRegister)(RealComm*, void*, size_t, void**);
  ncclResult_t (*commDeregister)(RealComm*, void*);
  ncclResult_t (*memAlloc)(void**, size_t);
  ncclResult_t (*memFree)(void*);
  ncclResult_t (*redOpCreatePreMulSum)(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t,
                                       RealComm*);
  ncclResult_t (*redOpDestroy)(ncclRedOp_t, RealComm*);
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, RealComm*,
                            cudaStream_t);
  ncclResult_t (*reduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, RealComm*,
                                cudaStream_t);
  ncclResult_t (*allGather)(const void*, void*, size_t, ncclDataType_t, RealComm*, cudaStream_t);
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, RealComm*,
                            cudaStream_t);
  ncclResult_t (*reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, RealComm*,
                         cudaStream_t);
  // Gather, scatter and all-to-all came with NCCL 2.28.
  ncclResult_t (*allToAll)(const void*, void*, size_t, ncclDataType_t, RealComm*, cudaStream_t);
  ncclResult_t (*gather)(const void*, void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*scatter)(const void*, void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
};

// Who loads it, which decides where the library is looked for and what it must have.
enum class NcclUser {
  // zccl's NCCL transport: ZCCL_NCCL_LIB, else libnccl.so.2; point-to-point, the
  // communicator's life and the collectives NCCL has had since 2.0 (the newer ones may be
  // null).
  kTransport,
  // The drop-in, which may be preloaded in front of NCCL: ZCCL_NCCL_LIB, else the NCCL after
  // the drop-in in the lookup order, else libnccl.so.2; every function above.
  kDropIn,
};

// Loaded once per user; NULL with the reason (which library was tried, what it lacks) in
// *error.
const NcclFunctions* loadNcclFunctions(NcclUser user, std::string* error);

}  // namespace zccl::nccl
