// What the drop-in does with a program's NCCL calls, from the environment, lossless unless
// asked: ZCCL_NCCL_QUANT_ALLGATHER, _REDUCESCATTER and _ALLREDUCE (zccl's wire format names:
// none|int8|int4|allow-int8|allow-int4|int2) and ZCCL_NCCL_QUANT_MIN_BYTES make the zccl
// communicator's wire policy (zcclWirePolicy: float types only, sum/avg for reductions);
// ZCCL_NCCL_DEVICE=zccl|nccl: whether device buffers take zccl's device path (the default) or
// go to the real NCCL.
#pragma once

#include <string>

#include "nccl_abi/nccl_abi.h"
#include "zccl/zccl.h"

namespace zccl::nccl {

enum class Operation {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kGather,
  kScatter,
  kSend,
  kRecv
};

struct Policy {
  zcclWirePolicy wire = ZCCL_WIRE_POLICY_INITIALIZER;
  bool deviceOverZccl = true;
};

// Read once; a malformed variable is ncclInvalidArgument naming it (every communicator's
// creation then fails with that message).
ncclResult_t policyFromEnvironment(Policy* policy, std::string* error);

}  // namespace zccl::nccl
