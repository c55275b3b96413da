// Reading the drop-in's policy from the environment (policy.h).
#include "nccl_compat/policy.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace zccl::nccl {
namespace {

ncclResult_t readWire(const char* variable, int* format, std::string* error) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return ncclSuccess;
  zcclWireFormat_t named = zcclWireNone;
  if (zcclWireFormatFromName(text, &named) != zcclSuccess) {
    *error = std::string(variable) + "=" + text + ": " + zcclGetLastError(nullptr);
    return ncclInvalidArgument;
  }
  *format = named;
  return ncclSuccess;
}

ncclResult_t readBytes(const char* variable, size_t* bytes, std::string* error) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return ncclSuccess;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-') {
    *error = std::string(variable) + "=" + text + ": expected a number of bytes";
    return ncclInvalidArgument;
  }
  *bytes = static_cast<size_t>(value);
  return ncclSuccess;
}

ncclResult_t readDevicePath(bool* overZccl, std::string* error) {
  const char* text = std::getenv("ZCCL_NCCL_DEVICE");
  if (text == nullptr || *text == '\0') return ncclSuccess;
  if (std::strcmp(text, "zccl") == 0 || std::strcmp(text, "nccl") == 0) {
    *overZccl = std::strcmp(text, "zccl") == 0;
    return ncclSuccess;
  }
  *error = std::string("ZCCL_NCCL_DEVICE=") + text + ": expected zccl|nccl";
  return ncclInvalidArgument;
}

}  // namespace

ncclResult_t policyFromEnvironment(Policy* policy, std::string* error) {
  *policy = Policy{};
  if (readWire("ZCCL_NCCL_QUANT_ALLGATHER", &policy->wire.allGather, error) != ncclSuccess ||
      readWire("ZCCL_NCCL_QUANT_REDUCESCATTER", &policy->wire.reduceScatter, error) !=
          ncclSuccess ||
      readWire("ZCCL_NCCL_QUANT_ALLREDUCE", &policy->wire.allReduce, error) != ncclSuccess ||
      readBytes("ZCCL_NCCL_QUANT_MIN_BYTES", &policy->wire.minBytes, error) != ncclSuccess ||
      readDevicePath(&policy->deviceOverZccl, error) != ncclSuccess) {
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

}  // namespace zccl::nccl
