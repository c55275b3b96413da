// Result codes and the error context every layer below the API reports through.
#pragma once

#include <string>

namespace zccl {

// Mirrors zcclResult_t value for value (checked by static_assert in core), so that the
// layers below the public header do not include it.
enum class Status : int {
  kSuccess = 0,
  kInvalidArgument = 1,
  kInvalidUsage = 2,
  kSystemError = 3,
  kInternalError = 4,
  kRemoteError = 5,
  kTimeout = 6,
  kInProgress = 7,
};

const char* statusName(Status status);

// Records a failure for this thread (zcclGetLastError reads it), logs it at WARN and
// returns `status`, so that a failing branch reads `return fail(kX, "...", ...)`.
Status fail(Status status, const char* format, ...) __attribute__((format(printf, 2, 3)));

// The message of this thread's most recent fail().
const std::string& lastThreadError();
void clearThreadError();
// Makes `message` (an earlier lastThreadError()) this thread's last error again, unlogged.
void restoreThreadError(const std::string& message);
// Puts `context` in front of this thread's last error ("timeout: zcclAllGather(...): ...")
// and `detail` after it.
void addErrorContext(const std::string& context, const std::string& detail = "");

}  // namespace zccl

// Propagates any non-success Status to the caller: the one check used everywhere.
#define ZCCL_CHECK(expr)                                  \
  do {                                                    \
    const ::zccl::Status zccl_check_status_ = (expr);     \
    if (zccl_check_status_ != ::zccl::Status::kSuccess) { \
      return zccl_check_status_;                          \
    }                                                     \
  } while (0)
