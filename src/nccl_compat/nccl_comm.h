// The drop-in's communicator: a zccl communicator for host memory, the real NCCL's for device
// memory (made on first use), and what NCCL keeps per communicator (custom operations,
// registrations, the asynchronous error). Also the error reporting every entry point uses.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "nccl_abi/nccl_abi.h"
#include "nccl_abi/nccl_functions.h"
#include "nccl_compat/nccl_config.h"
#include "nccl_compat/policy.h"
#include "zccl/zccl.h"

namespace zccl::nccl {

// An operation made by ncclRedOpCreatePreMulSum: sum after multiplying each rank's input by
// its scalar.
struct PreMulSum {
  ncclDataType_t datatype;
  ncclScalarResidence_t residence;
  std::array<unsigned char, 8> value;  // host-immediate scalars, copied at creation
  const void* pointer;                 // device-resident scalars, read at each call
  ncclRedOp_t realOp;                  // its twin on the real NCCL's communicator, or -1
  bool live;
};

struct Registration {
  void* buffer;
  size_t bytes;
  bool device;
  void* realHandle;  // the real NCCL's, once its communicator exists
};

}  // namespace zccl::nccl

struct ncclComm {
  zcclComm_t host = nullptr;
  int rank = 0;
  int nranks = 0;
  int device = -1;  // the CUDA device at creation; -1 without one
  zccl::nccl::CommSettings settings;
  zccl::nccl::Policy policy;
  zccl::nccl::RealComm* real = nullptr;
  bool finalized = false;
  std::atomic<int> asyncError{zccl::nccl::ncclSuccess};
  std::mutex mutex;                               // guards what follows
  std::vector<zccl::nccl::PreMulSum> operations;  // operation ncclNumOps + i is operations[i]
  std::vector<std::unique_ptr<zccl::nccl::Registration>> registrations;
  std::set<std::string> decisionsLogged;
  // A non-blocking communicator's queued calls read these (PreMulSum's scaled inputs) after
  // the call returned; freed once its queued work has drained.
  std::vector<std::vector<unsigned char>> inFlightScratch;
};

namespace zccl::nccl {

// Records the reason as this thread's last error (ncclGetLastError), logs it at WARN, and
// returns result.
ncclResult_t fail(ncclResult_t result, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
// The result of a zccl call, its message prefixed with the NCCL function that made it.
ncclResult_t fromZccl(zcclResult_t result, const char* function, ncclComm* comm);
const std::string& lastError();
void setLastError(const std::string& message);

// NCCL's NCCLCHECK: return a failure to the caller, whose message is already recorded.
#define NCCL_CHECK(call)                                                  \
  do {                                                                    \
    const ::zccl::nccl::ncclResult_t checkedResult = (call);              \
    if (checkedResult != ::zccl::nccl::ncclSuccess) return checkedResult; \
  } while (0)

// Communicators handed out and not yet destroyed; anything else is an invalid handle.
void addLiveComm(ncclComm* comm);
void removeLiveComm(ncclComm* comm);
ncclResult_t checkComm(const ncclComm* comm, const char* function);

const char* typeName(ncclDataType_t datatype);
size_t typeBytes(ncclDataType_t datatype);

}  // namespace zccl::nccl

namespace zccl::nccl {

// The PreMulSum behind op on comm, copied; ncclInvalidArgument naming op when it is not a
// live operation of comm, or was made for a type other than datatype.
ncclResult_t findPreMulSum(ncclComm* comm, ncclRedOp_t op, ncclDataType_t datatype,
                           const char* function, PreMulSum* found);

}  // namespace zccl::nccl
