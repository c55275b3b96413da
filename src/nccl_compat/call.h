// One NCCL communication call as the drop-in carries it: from the entry point, through a
// group if one is open, to zccl (host buffers, and device buffers on zccl's device path) or
// to the real NCCL (device buffers zccl does not carry).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "nccl_abi/nccl_abi.h"
#include "nccl_compat/nccl_comm.h"
#include "nccl_compat/policy.h"

namespace zccl::nccl {

struct Call {
  Operation operation;
  const char* function;  // the NCCL entry point, for messages
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // NCCL's count argument (recvcount, sendcount, ...)
  ncclDataType_t datatype;
  ncclRedOp_t op;
  int root;  // the root, or the peer of a send or receive
  ncclComm* comm;
  cudaStream_t stream;
};

// Checks the call, then runs it now or, inside a group, at ncclGroupEnd.
ncclResult_t submit(const Call& call);

// Whether the call's buffers are device memory (either one).
bool onDevice(const Call& call);

// zccl_path.cc: the call over zccl, blocking; device buffers on the call's stream.
ncclResult_t runOverZccl(const Call& call);
// Sends and receives of one communicator as one zccl group (so that rings do not deadlock).
ncclResult_t runPointToPointOverZccl(const Call* calls, size_t count);

// The real NCCL that device buffers go to, loaded as a drop-in loads it (nccl_functions.h);
// NULL with the reason in *error.
const NcclFunctions* realNccl(std::string* error);

// real_nccl_path.cc: the call forwarded to the real NCCL on its communicator twin, which the
// first such call makes (collectively, like every call).
ncclResult_t runOnRealNccl(const Call& call);

// group.cc
bool insideGroup();
void deferToGroupEnd(const Call& call);
// A communicator's creation inside a group, run at its end (beside the group's others).
void deferInitToGroupEnd(std::function<ncclResult_t()> init);
// A device call inside a group opens the real NCCL's group once; ncclGroupEnd closes it.
ncclResult_t openRealGroupOnce(const char* function);
bool realGroupOpen();

}  // namespace zccl::nccl

namespace zccl::nccl {
ncclResult_t groupStart();
ncclResult_t groupEnd();
// Ends the group, dropping its host calls (ncclGroupSimulateEnd).
ncclResult_t groupEndWithoutRunning(const char* function);
}  // namespace zccl::nccl
