// Every NCCL communication call passes here: arguments checked and named in errors, then the
// path: zccl, now or at the group's end, for host buffers and (ZCCL_NCCL_DEVICE=zccl, the
// default) for device buffers; the real NCCL for device buffers zccl does not carry.
#include <cstdint>
#include <string>

#include "nccl_compat/call.h"
#include "nccl_compat/cuda_driver.h"

namespace zccl::nccl {
namespace {

bool takesOp(Operation operation) {
  return operation == Operation::kAllReduce || operation == Operation::kReduceScatter ||
         operation == Operation::kReduce;
}

bool takesRoot(Operation operation) {
  return operation == Operation::kBroadcast || operation == Operation::kReduce ||
         operation == Operation::kGather || operation == Operation::kScatter;
}

bool isPointToPoint(Operation operation) {
  return operation == Operation::kSend || operation == Operation::kRecv;
}

// Which buffers the call reads or writes on this rank: NCCL lets the root's partners pass
// NULL for the buffer only the root uses.
void buffersUsed(const Call& call, bool* send, bool* recv) {
  const bool root = call.comm->rank == call.root;
  switch (call.operation) {
    case Operation::kBroadcast:
    case Operation::kScatter:
      *send = root;
      *recv = true;
      return;
    case Operation::kReduce:
    case Operation::kGather:
      *send = true;
      *recv = root;
      return;
    case Operation::kSend:
      *send = true;
      *recv = false;
      return;
    case Operation::kRecv:
      *send = false;
      *recv = true;
      return;
    default:
      *send = true;
      *recv = true;
  }
}

ncclResult_t checkArguments(const Call& call) {
  if (call.datatype < 0 || call.datatype >= ncclNumTypes) {
    return fail(ncclInvalidArgument, "%s: datatype=%d is not an NCCL data type (0..%d)",
                call.function, static_cast<int>(call.datatype), ncclNumTypes - 1);
  }
  if (takesOp(call.operation) && (call.op < 0 || call.op >= ncclNumOps)) {
    PreMulSum operation{};
    NCCL_CHECK(findPreMulSum(call.comm, call.op, call.datatype, call.function, &operation));
  }
  if ((takesRoot(call.operation) || isPointToPoint(call.operation)) &&
      (call.root < 0 || call.root >= call.comm->nranks)) {
    return fail(ncclInvalidArgument, "%s: %s=%d is not a rank of this communicator (0..%d)",
                call.function, isPointToPoint(call.operation) ? "peer" : "root", call.root,
                call.comm->nranks - 1);
  }
  const size_t limit = SIZE_MAX / typeBytes(call.datatype) / static_cast<size_t>(call.comm->nranks);
  if (call.count > limit) {
    return fail(ncclInvalidArgument, "%s: count=%zu of %s overflows the address space",
                call.function, call.count, typeName(call.datatype));
  }
  bool send = false;
  bool recv = false;
  buffersUsed(call, &send, &recv);
  if (call.count > 0 && send && call.sendbuff == nullptr) {
    return fail(ncclInvalidArgument, "%s: sendbuff=NULL with count=%zu", call.function, call.count);
  }
  if (call.count > 0 && recv && call.recvbuff == nullptr) {
    return fail(ncclInvalidArgument, "%s: recvbuff=NULL with count=%zu", call.function, call.count);
  }
  return ncclSuccess;
}

// Device buffers zccl carries: everything but PreMulSum (its scalar scales on the host) and
// float8 arithmetic, unless ZCCL_NCCL_DEVICE=nccl.
bool deviceOverZccl(const Call& call) {
  if (!call.comm->policy.deviceOverZccl) return false;
  if (!takesOp(call.operation)) return true;
  return call.op < ncclNumOps && call.datatype <= ncclBfloat16;
}

}  // namespace

bool onDevice(const Call& call) {
  return memoryKind(call.sendbuff) == MemoryKind::kDevice ||
         memoryKind(call.recvbuff) == MemoryKind::kDevice;
}

ncclResult_t submit(const Call& call) {
  NCCL_CHECK(checkComm(call.comm, call.function));
  if (call.comm->finalized) {
    return fail(ncclInvalidUsage,
                "%s: the communicator was finalized (ncclCommFinalize); only ncclCommDestroy "
                "may follow",
                call.function);
  }
  NCCL_CHECK(checkArguments(call));
  const bool device = onDevice(call);
  if (device && !deviceOverZccl(call)) return runOnRealNccl(call);
  if (!device) {  // host buffers given with a stream are read after its work
    std::string error;
    const ncclResult_t synchronized = synchronizeStream(call.stream, &error);
    if (synchronized != ncclSuccess) {
      return fail(synchronized, "%s: %s", call.function, error.c_str());
    }
  }
  if (insideGroup()) {
    deferToGroupEnd(call);
    return ncclSuccess;
  }
  return runOverZccl(call);
}

}  // namespace zccl::nccl
