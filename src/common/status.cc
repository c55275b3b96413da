// Result codes, their names, and each thread's last error (status.h).
#include "common/status.h"

#include <cstdarg>

#include "common/format.h"
#include "common/log.h"

namespace zccl {
namespace {
thread_local std::string threadError;
}  // namespace

const char* statusName(Status status) {
  switch (status) {
    case Status::kSuccess:
      return "success";
    case Status::kInvalidArgument:
      return "invalid argument";
    case Status::kInvalidUsage:
      return "invalid usage";
    case Status::kSystemError:
      return "system error";
    case Status::kInternalError:
      return "internal error";
    case Status::kRemoteError:
      return "remote error";
    case Status::kTimeout:
      return "timeout";
    case Status::kInProgress:
      return "in progress";
  }
  return "unknown result";
}

Status fail(Status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const std::string message = formatList(format, args);
  va_end(args);
  threadError = std::string(statusName(status)) + ": " + message;
  ZCCL_LOG(kWarn, "%s", threadError.c_str());
  return status;
}

const std::string& lastThreadError() { return threadError; }

void clearThreadError() { threadError.clear(); }

void restoreThreadError(const std::string& message) { threadError = message; }

void addErrorContext(const std::string& context, const std::string& detail) {
  const size_t colon = threadError.find(": ");
  const size_t at = colon == std::string::npos ? 0 : colon + 2;
  threadError.insert(at, context + ": ");
  threadError += detail;
}

}  // namespace zccl
