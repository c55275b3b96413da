// The drop-in's communicators: live handles, and errors as NCCL reports them (nccl_comm.h).
#include "nccl_compat/nccl_comm.h"

#include <cstdarg>
#include <cstdio>
#include <unordered_set>

#include "common/format.h"
#include "common/log.h"

namespace zccl::nccl {
namespace {

thread_local std::string threadLastError;

std::mutex liveMutex;
std::unordered_set<const ncclComm*>& liveComms() {
  static auto* comms = new std::unordered_set<const ncclComm*>();
  return *comms;
}

ncclResult_t fromZcclResult(zcclResult_t result) {
  switch (result) {
    case zcclSuccess:
      return ncclSuccess;
    case zcclInvalidArgument:
      return ncclInvalidArgument;
    case zcclInvalidUsage:
      return ncclInvalidUsage;
    case zcclSystemError:
      return ncclSystemError;
    case zcclRemoteError:
    case zcclTimeout:  // NCCL has no timeout code: a peer that does not answer is remote
      return ncclRemoteError;
    case zcclInProgress:
      return ncclInProgress;
    default:
      return ncclInternalError;
  }
}

}  // namespace

const std::string& lastError() { return threadLastError; }
void setLastError(const std::string& message) { threadLastError = message; }

ncclResult_t fail(ncclResult_t result, const char* format, ...) {
  va_list args;
  va_start(args, format);
  threadLastError = formatList(format, args);
  va_end(args);
  ZCCL_LOG(kWarn, "%s", threadLastError.c_str());
  return result;
}

ncclResult_t fromZccl(zcclResult_t result, const char* function, ncclComm* comm) {
  if (result == zcclSuccess) return ncclSuccess;
  if (result == zcclInProgress) return ncclInProgress;  // queued: not a failure
  const ncclResult_t mapped = fromZcclResult(result);
  // zccl has logged the failure already (ZCCL_DEBUG); only record it here.
  threadLastError = std::string(function) + ": " + zcclGetLastError(comm ? comm->host : nullptr);
  if (comm != nullptr && mapped == ncclRemoteError) comm->asyncError.store(mapped);
  return mapped;
}

void addLiveComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(liveMutex);
  liveComms().insert(comm);
}

void removeLiveComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(liveMutex);
  liveComms().erase(comm);
}

ncclResult_t checkComm(const ncclComm* comm, const char* function) {
  {
    std::lock_guard<std::mutex> lock(liveMutex);
    if (comm != nullptr && liveComms().count(comm) != 0) return ncclSuccess;
  }
  return fail(ncclInvalidArgument, "%s: comm=%p is not a live communicator%s", function,
              static_cast<const void*>(comm), comm == nullptr ? "" : " (destroyed, or never made)");
}

const char* typeName(ncclDataType_t datatype) {
  static const char* const names[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                      "ncclUint32",   "ncclInt64",      "ncclUint64",
                                      "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                      "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return datatype >= 0 && datatype < ncclNumTypes ? names[datatype] : "(not an NCCL type)";
}

size_t typeBytes(ncclDataType_t datatype) {
  static const size_t bytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return datatype >= 0 && datatype < ncclNumTypes ? bytes[datatype] : 0;
}

}  // namespace zccl::nccl

namespace zccl::nccl {

ncclResult_t findPreMulSum(ncclComm* comm, ncclRedOp_t op, ncclDataType_t datatype,
                           const char* function, PreMulSum* found) {
  std::lock_guard<std::mutex> lock(comm->mutex);
  const size_t index = static_cast<size_t>(op) - ncclNumOps;
  if (op < ncclNumOps || index >= comm->operations.size() || !comm->operations[index].live) {
    return fail(ncclInvalidArgument,
                "%s: op=%d is neither an NCCL operation (0..4) nor one that "
                "ncclRedOpCreatePreMulSum made on this communicator and was not destroyed",
                function, static_cast<int>(op));
  }
  *found = comm->operations[index];
  if (found->datatype != datatype) {
    return fail(ncclInvalidArgument, "%s: op=%d was made for %s, not datatype=%s", function,
                static_cast<int>(op), typeName(found->datatype), typeName(datatype));
  }
  return ncclSuccess;
}

}  // namespace zccl::nccl
