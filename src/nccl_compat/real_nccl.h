// The real NCCL, for device memory: loaded on first use from ZCCL_NCCL_LIB, else the NCCL
// this library was preloaded in front of, else libnccl.so.2, and never this library itself
// (the build tree names it libnccl.so.2 too).
#pragma once

#include <cstddef>
#include <string>

#include "nccl_compat/nccl_abi.h"

namespace zccl::nccl {

// The real library's own communicator type: its functions take it where NCCL's take
// ncclComm_t, so that a shim communicator is never passed to it by mistake.
struct RealComm;

struct RealNccl {
  ncclResult_t (*getVersion)(int*);
  ncclResult_t (*getUniqueId)(ncclUniqueId*);
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
  ncclResult_t (*allToAll)(const void*, void*, size_t, ncclDataType_t, RealComm*, cudaStream_t);
  ncclResult_t (*gather)(const void*, void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*scatter)(const void*, void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, RealComm*, cudaStream_t);
  ncclResult_t (*groupStart)();
  ncclResult_t (*groupEnd)();
};

// The loaded library, or NULL with the reason (which library was tried, why it is unusable)
// in *error.
const RealNccl* realNccl(std::string* error);

}  // namespace zccl::nccl
