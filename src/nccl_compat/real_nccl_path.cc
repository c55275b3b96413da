// NCCL calls on device memory that zccl's device path does not carry (PreMulSum, float8
// arithmetic, or every one under ZCCL_NCCL_DEVICE=nccl): forwarded to the real NCCL, on a twin
// of the communicator that the first such call makes. Their bytes are the real NCCL's and not
// in zccl's statistics.
#include <cstring>
#include <string>

#include "common/log.h"
#include "nccl_compat/call.h"

namespace zccl::nccl {

const NcclFunctions* realNccl(std::string* error) {
  const NcclFunctions* real = loadNcclFunctions(NcclUser::kDropIn, error);
  if (real == nullptr) {
    *error = "device buffers go to the real NCCL, which could not be loaded: " + *error;
  }
  return real;
}

namespace {

const NcclFunctions* loadedNccl(const char* function) {
  std::string error;
  const NcclFunctions* real = realNccl(&error);
  if (real == nullptr) fail(ncclInvalidUsage, "%s: %s", function, error.c_str());
  return real;
}

ncclResult_t realResult(ncclResult_t result, const NcclFunctions* real, ncclComm* comm,
                        const char* function) {
  if (result == ncclSuccess || result == ncclInProgress) return result;
  const char* message = real->getLastError(comm->real);
  setLastError(std::string(function) + " (the real NCCL): " + (message ? message : ""));
  return result;
}

// Collective over comm's ranks: they agree that each loaded the real NCCL, then rank 0's id
// of a real communicator travels over zccl and every rank joins it.
ncclResult_t makeRealComm(ncclComm* comm, const NcclFunctions* real, const char* function) {
  int loaded = real != nullptr ? 1 : 0;
  NCCL_CHECK(fromZccl(zcclAllReduce(&loaded, &loaded, 1, zcclInt32, zcclMin, comm->host, nullptr),
                      function, comm));
  if (loaded == 0) {
    if (real == nullptr) return ncclInvalidUsage;  // the reason is recorded already
    return fail(ncclInvalidUsage,
                "%s: device buffers: another rank could not load the real NCCL (see its "
                "ncclGetLastError)",
                function);
  }
  ncclUniqueId id{};
  if (comm->rank == 0) NCCL_CHECK(realResult(real->getUniqueId(&id), real, comm, function));
  NCCL_CHECK(fromZccl(zcclBroadcast(&id, &id, sizeof(id), zcclUint8, 0, comm->host, nullptr),
                      function, comm));
  const void* config = comm->settings.rawConfig.empty() ? nullptr : comm->settings.rawConfig.data();
  NCCL_CHECK(realResult(real->commInitRankConfig(&comm->real, comm->nranks, id, comm->rank, config),
                        real, comm, function));
  ZCCL_LOG(kInfo, "%s: device buffers: made the real NCCL's communicator of %d ranks", function,
           comm->nranks);
  std::lock_guard<std::mutex> lock(comm->mutex);
  for (auto& registration : comm->registrations) {
    if (!registration->device || registration->realHandle != nullptr) continue;
    NCCL_CHECK(realResult(real->commRegister(comm->real, registration->buffer, registration->bytes,
                                             &registration->realHandle),
                          real, comm, function));
  }
  return ncclSuccess;
}

// The real NCCL's twin of op (built-ins are the same numbers).
ncclResult_t realOperation(const Call& call, const NcclFunctions* real, ncclRedOp_t* op) {
  *op = call.op;
  if (call.op < ncclNumOps) return ncclSuccess;
  PreMulSum operation{};
  NCCL_CHECK(findPreMulSum(call.comm, call.op, call.datatype, call.function, &operation));
  if (operation.realOp >= 0) {
    *op = operation.realOp;
    return ncclSuccess;
  }
  void* scalar = operation.residence == ncclScalarHostImmediate
                     ? static_cast<void*>(operation.value.data())
                     : const_cast<void*>(operation.pointer);
  NCCL_CHECK(realResult(real->redOpCreatePreMulSum(op, scalar, operation.datatype,
                                                   operation.residence, call.comm->real),
                        real, call.comm, call.function));
  std::lock_guard<std::mutex> lock(call.comm->mutex);
  call.comm->operations[static_cast<size_t>(call.op) - ncclNumOps].realOp = *op;
  return ncclSuccess;
}

ncclResult_t forward(const Call& call, const NcclFunctions* real, ncclRedOp_t op) {
  RealComm* twin = call.comm->real;
  switch (call.operation) {
    case Operation::kAllReduce:
      return real->allReduce(call.sendbuff, call.recvbuff, call.count, call.datatype, op, twin,
                             call.stream);
    case Operation::kReduceScatter:
      return real->reduceScatter(call.sendbuff, call.recvbuff, call.count, call.datatype, op, twin,
                                 call.stream);
    case Operation::kAllGather:
      return real->allGather(call.sendbuff, call.recvbuff, call.count, call.datatype, twin,
                             call.stream);
    case Operation::kBroadcast:
      return real->broadcast(call.sendbuff, call.recvbuff, call.count, call.datatype, call.root,
                             twin, call.stream);
    case Operation::kReduce:
      return real->reduce(call.sendbuff, call.recvbuff, call.count, call.datatype, op, call.root,
                          twin, call.stream);
    case Operation::kAllToAll:
      return real->allToAll(call.sendbuff, call.recvbuff, call.count, call.datatype, twin,
                            call.stream);
    case Operation::kGather:
      return real->gather(call.sendbuff, call.recvbuff, call.count, call.datatype, call.root, twin,
                          call.stream);
    case Operation::kScatter:
      return real->scatter(call.sendbuff, call.recvbuff, call.count, call.datatype, call.root, twin,
                           call.stream);
    case Operation::kSend:
      return real->send(call.sendbuff, call.count, call.datatype, call.root, twin, call.stream);
    case Operation::kRecv:
      return real->recv(call.recvbuff, call.count, call.datatype, call.root, twin, call.stream);
  }
  return ncclInternalError;
}

}  // namespace

ncclResult_t runOnRealNccl(const Call& call) {
  const NcclFunctions* real = loadedNccl(call.function);
  if (call.comm->real == nullptr) {
    if (realGroupOpen()) {
      return fail(ncclInvalidUsage,
                  "%s: the first device call of a communicator, inside a group that already "
                  "holds device calls of another: its real NCCL communicator cannot be made "
                  "there; make one device call on it outside a group first",
                  call.function);
    }
    NCCL_CHECK(makeRealComm(call.comm, real, call.function));
  }
  if (real == nullptr) return ncclInvalidUsage;
  if (insideGroup()) NCCL_CHECK(openRealGroupOnce(call.function));
  ncclRedOp_t op;
  NCCL_CHECK(realOperation(call, real, &op));
  return realResult(forward(call, real, op), real, call.comm, call.function);
}

}  // namespace zccl::nccl
