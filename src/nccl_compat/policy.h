// What the drop-in does with a program's NCCL calls, from the environment, lossless unless
// asked: ZCCL_NCCL_QUANT_ALLGATHER, _REDUCESCATTER and _ALLREDUCE (none|int8|int4|allow-int8|
// allow-int4: float types only, and sum/avg for reductions) for buffers of at least
// ZCCL_NCCL_QUANT_MIN_BYTES; ZCCL_NCCL_DEVICE=zccl|nccl: whether device buffers take zccl's
// device path (the default) or go to the real NCCL.
#pragma once

#include <cstddef>
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
  zcclWireFormat_t allGather = zcclWireNone;
  zcclWireFormat_t reduceScatter = zcclWireNone;
  zcclWireFormat_t allReduce = zcclWireNone;
  size_t minBytes = 0;
  bool deviceOverZccl = true;
};

// Read once; a malformed variable is ncclInvalidArgument naming it (every communicator's
// creation then fails with that message).
ncclResult_t policyFromEnvironment(Policy* policy, std::string* error);

// The wire format for one call of `bytes` (its whole buffer) on host memory: the policy's
// where it applies, else exact. *reason says which variable decided, for the log.
zcclWireFormat_t wireFor(const Policy& policy, Operation operation, ncclDataType_t datatype,
                         bool sumLike, size_t bytes, std::string* reason);

}  // namespace zccl::nccl
