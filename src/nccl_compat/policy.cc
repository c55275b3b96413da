#include "nccl_compat/policy.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace zccl::nccl {
namespace {

struct WireName {
  const char* name;
  zcclWireFormat_t format;
};
constexpr WireName kWireNames[] = {{"none", zcclWireNone},
                                   {"int8", zcclWireInt8},
                                   {"int4", zcclWireInt4},
                                   {"allow-int8", zcclWireAllowInt8},
                                   {"allow-int4", zcclWireAllowInt4}};

ncclResult_t readWire(const char* variable, zcclWireFormat_t* format, std::string* error) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return ncclSuccess;
  for (const WireName& wire : kWireNames) {
    if (std::strcmp(text, wire.name) == 0) {
      *format = wire.format;
      return ncclSuccess;
    }
  }
  *error = std::string(variable) + "=" + text + ": expected none|int8|int4|allow-int8|allow-int4";
  return ncclInvalidArgument;
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

bool isFloat(ncclDataType_t datatype) {
  return datatype == ncclFloat32 || datatype == ncclFloat16 || datatype == ncclBfloat16;
}

const char* variableOf(Operation operation) {
  switch (operation) {
    case Operation::kAllGather:
      return "ZCCL_NCCL_QUANT_ALLGATHER";
    case Operation::kReduceScatter:
      return "ZCCL_NCCL_QUANT_REDUCESCATTER";
    case Operation::kAllReduce:
      return "ZCCL_NCCL_QUANT_ALLREDUCE";
    default:
      return nullptr;
  }
}

}  // namespace

ncclResult_t policyFromEnvironment(Policy* policy, std::string* error) {
  *policy = Policy{};
  if (readWire("ZCCL_NCCL_QUANT_ALLGATHER", &policy->allGather, error) != ncclSuccess ||
      readWire("ZCCL_NCCL_QUANT_REDUCESCATTER", &policy->reduceScatter, error) != ncclSuccess ||
      readWire("ZCCL_NCCL_QUANT_ALLREDUCE", &policy->allReduce, error) != ncclSuccess ||
      readBytes("ZCCL_NCCL_QUANT_MIN_BYTES", &policy->minBytes, error) != ncclSuccess ||
      readDevicePath(&policy->deviceOverZccl, error) != ncclSuccess) {
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

zcclWireFormat_t wireFor(const Policy& policy, Operation operation, ncclDataType_t datatype,
                         bool sumLike, size_t bytes, std::string* reason) {
  zcclWireFormat_t asked = zcclWireNone;
  if (operation == Operation::kAllGather) asked = policy.allGather;
  if (operation == Operation::kReduceScatter) asked = policy.reduceScatter;
  if (operation == Operation::kAllReduce) asked = policy.allReduce;
  if (asked == zcclWireNone) {
    *reason = "exact (no ZCCL_NCCL_QUANT_* for it)";
    return zcclWireNone;
  }
  const std::string variable = variableOf(operation);
  if (!isFloat(datatype) || (operation != Operation::kAllGather && !sumLike)) {
    *reason = "exact: " + variable + " applies to float types and sum/avg only";
    return zcclWireNone;
  }
  if (bytes < policy.minBytes) {
    *reason = "exact: below ZCCL_NCCL_QUANT_MIN_BYTES=" + std::to_string(policy.minBytes);
    return zcclWireNone;
  }
  *reason = variable + "=" + kWireNames[asked].name;
  return asked;
}

}  // namespace zccl::nccl
