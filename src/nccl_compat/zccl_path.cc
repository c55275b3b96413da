// NCCL calls over zccl's public API: host buffers with stream=NULL, device buffers on the
// call's stream (zccl's device path: NCCL or staged through host memory, zccl's algorithms
// and the drop-in's quantization policy either way).
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "common/half.h"
#include "common/log.h"
#include "nccl_compat/call.h"
#include "nccl_compat/cuda_driver.h"
#include "zccl/zccl_introspect.h"

namespace zccl::nccl {
namespace {

// The stream zccl takes for the call: NULL (host memory) or the call's, where NCCL's NULL is
// CUDA's legacy default stream, which zccl names explicitly (ZCCL_STREAM_LEGACY).
zcclStream_t streamOf(const Call& call) {
  if (!onDevice(call)) return nullptr;
  return call.stream != nullptr ? static_cast<zcclStream_t>(call.stream) : ZCCL_STREAM_LEGACY;
}

const char* memoryName(const Call& call) {
  return onDevice(call) ? "device memory" : "host memory";
}

ncclResult_t hostType(const Call& call, bool arithmetic, zcclDataType_t* type) {
  static constexpr zcclDataType_t kTypes[] = {zcclInt8,    zcclUint8,   zcclInt32,   zcclUint32,
                                              zcclInt64,   zcclUint64,  zcclFloat16, zcclFloat32,
                                              zcclFloat64, zcclBfloat16};
  if (call.datatype <= ncclBfloat16) {
    *type = kTypes[call.datatype];
    return ncclSuccess;
  }
  // Moved, not computed on: any one-byte type carries float8.
  if (!arithmetic) {
    *type = zcclUint8;
    return ncclSuccess;
  }
  return fail(ncclInvalidArgument,
              "%s: datatype=%s: zccl has no float8 arithmetic on host memory (device buffers "
              "of it go to the real NCCL)",
              call.function, typeName(call.datatype));
}

template <typename T>
T multiply(T value, T scalar) {
  if constexpr (std::is_integral_v<T>) {
    // Wraps like the type's own arithmetic would, without signed overflow.
    using Unsigned = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<Unsigned>(value) * static_cast<Unsigned>(scalar));
  } else {
    return value * scalar;
  }
}

template <typename T>
void scaleValues(const void* scalar, const void* input, void* output, size_t count) {
  T factor;
  std::memcpy(&factor, scalar, sizeof(T));
  const T* source = static_cast<const T*>(input);
  T* target = static_cast<T*>(output);
  for (size_t i = 0; i < count; ++i) target[i] = multiply(source[i], factor);
}

// float16 and bfloat16 multiply in float32 and round once, as their reductions do.
template <typename Half, Half (*fromFloat)(float)>
void scaleHalves(const void* scalar, const void* input, void* output, size_t count) {
  Half factor;
  std::memcpy(&factor, scalar, sizeof(Half));
  const float scale = toFloat(factor);
  const Half* source = static_cast<const Half*>(input);
  Half* target = static_cast<Half*>(output);
  for (size_t i = 0; i < count; ++i) target[i] = fromFloat(toFloat(source[i]) * scale);
}

void scale(ncclDataType_t datatype, const void* scalar, const void* input, void* output,
           size_t count) {
  switch (datatype) {
    case ncclInt8:
      return scaleValues<int8_t>(scalar, input, output, count);
    case ncclUint8:
      return scaleValues<uint8_t>(scalar, input, output, count);
    case ncclInt32:
      return scaleValues<int32_t>(scalar, input, output, count);
    case ncclUint32:
      return scaleValues<uint32_t>(scalar, input, output, count);
    case ncclInt64:
      return scaleValues<int64_t>(scalar, input, output, count);
    case ncclUint64:
      return scaleValues<uint64_t>(scalar, input, output, count);
    case ncclFloat16:
      return scaleHalves<float16_t, toFloat16>(scalar, input, output, count);
    case ncclBfloat16:
      return scaleHalves<bfloat16_t, toBfloat16>(scalar, input, output, count);
    case ncclFloat32:
      return scaleValues<float>(scalar, input, output, count);
    default:
      return scaleValues<double>(scalar, input, output, count);
  }
}

// What zccl reduces: sendbuff itself, or a copy scaled by a PreMulSum's scalar.
struct ReductionInput {
  const void* data = nullptr;
  std::vector<unsigned char> scratch;
  zcclRedOp_t op = zcclSum;
};

ncclResult_t scalarOf(const Call& call, const PreMulSum& operation, const void** scalar) {
  if (operation.residence == ncclScalarHostImmediate) {
    *scalar = operation.value.data();
    return ncclSuccess;
  }
  if (memoryKind(operation.pointer) == MemoryKind::kDevice) {
    return fail(ncclInvalidUsage,
                "%s: op=%d scales by a scalar in device memory, which cannot scale host "
                "buffers: make it with ncclScalarHostImmediate",
                call.function, static_cast<int>(call.op));
  }
  *scalar = operation.pointer;
  return ncclSuccess;
}

// A PreMulSum is a sum of inputs scaled here first (into scratch, which a non-blocking
// communicator keeps until its queued work has drained: zccl reads it after the call returns).
ncclResult_t reductionInput(const Call& call, size_t count, ReductionInput* input) {
  if (call.op < ncclNumOps) {
    input->op = static_cast<zcclRedOp_t>(call.op);
    input->data = call.sendbuff;
    return ncclSuccess;
  }
  PreMulSum operation{};
  NCCL_CHECK(findPreMulSum(call.comm, call.op, call.datatype, call.function, &operation));
  input->scratch.assign(count * typeBytes(call.datatype), 0);
  const void* scalar = nullptr;
  NCCL_CHECK(scalarOf(call, operation, &scalar));
  scale(call.datatype, scalar, call.sendbuff, input->scratch.data(), count);
  input->data = input->scratch.data();
  return ncclSuccess;
}

// The result of a reduction's zccl call: where it was queued (ncclInProgress), its scratch
// goes to the communicator, which frees it once its queued work has drained.
ncclResult_t keptWhileQueued(ncclResult_t result, const Call& call, ReductionInput* input) {
  if (result == ncclInProgress && !input->scratch.empty()) {
    std::lock_guard<std::mutex> lock(call.comm->mutex);
    call.comm->inFlightScratch.push_back(std::move(input->scratch));  // the same memory
  }
  return result;
}

std::string sizeClassName(size_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t value = 1;
  while (value * 2 <= bytes && value * 2 != 0) value *= 2;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return std::to_string(value) + " " + units[unit];
}

// ZCCL_DEBUG=INFO: what a kind of call becomes, once per collective, type, power-of-two size
// class and outcome (like NCCL_DEBUG's per-call lines, without repeating them every step).
void logDecision(const Call& call, const std::string& path, const std::string& reason,
                 size_t bytes) {
  if (!logEnabled(LogLevel::kInfo)) return;
  const std::string sizeClass = sizeClassName(bytes);
  const std::string key =
      std::string(call.function) + typeName(call.datatype) + sizeClass + path + reason;
  {
    std::lock_guard<std::mutex> lock(call.comm->mutex);
    if (!call.comm->decisionsLogged.insert(key).second) return;
  }
  ZCCL_LOG(kInfo, "%s(%s, from %s): %s, %s; %s", call.function, typeName(call.datatype),
           sizeClass.c_str(), memoryName(call), path.c_str(), reason.c_str());
}

// The plan zccl's planner makes for a collective, as text for the log.
std::string planText(const Call& call, zcclCollective_t collective, zcclDataType_t type,
                     zcclRedOp_t op, size_t bytes) {
  if (!logEnabled(LogLevel::kInfo)) return {};
  zcclPlanQuery query = ZCCL_PLAN_QUERY_INITIALIZER;
  query.collective = collective;
  query.bytes = bytes;
  query.datatype = type;
  query.op = op;
  zcclPlanInfo plan;
  if (zcclCommGetPlan(call.comm->host, &query, &plan) != zcclSuccess) return "zccl";
  return std::string("zccl ") + plan.algorithm + ", wire " + plan.wire;
}

// A collective that the communicator's wire policy (ZCCL_NCCL_QUANT_*) may quantize: the
// plan, with the format the policy gave it, is logged once per size class.
void logPolicyDecision(const Call& call, zcclCollective_t collective, zcclDataType_t type,
                       zcclRedOp_t op, size_t bytes) {
  logDecision(call, planText(call, collective, type, op, bytes), "(wire policy: ZCCL_NCCL_QUANT_*)",
              bytes);
}

ncclResult_t allReduce(const Call& call) {
  zcclDataType_t type = zcclUint8;
  NCCL_CHECK(hostType(call, true, &type));
  ReductionInput input;
  NCCL_CHECK(reductionInput(call, call.count, &input));
  logPolicyDecision(call, zcclCollAllReduce, type, input.op, call.count * typeBytes(call.datatype));
  return keptWhileQueued(fromZccl(zcclAllReduce(input.data, call.recvbuff, call.count, type,
                                                input.op, call.comm->host, streamOf(call)),
                                  call.function, call.comm),
                         call, &input);
}

ncclResult_t reduceScatter(const Call& call) {
  zcclDataType_t type = zcclUint8;
  NCCL_CHECK(hostType(call, true, &type));
  const size_t total = call.count * static_cast<size_t>(call.comm->nranks);
  ReductionInput input;
  NCCL_CHECK(reductionInput(call, total, &input));
  logPolicyDecision(call, zcclCollReduceScatter, type, input.op, total * typeBytes(call.datatype));
  return keptWhileQueued(fromZccl(zcclReduceScatter(input.data, call.recvbuff, call.count, type,
                                                    input.op, call.comm->host, streamOf(call)),
                                  call.function, call.comm),
                         call, &input);
}

ncclResult_t allGather(const Call& call) {
  zcclDataType_t type = zcclUint8;
  NCCL_CHECK(hostType(call, false, &type));
  const size_t total = call.count * static_cast<size_t>(call.comm->nranks);
  logPolicyDecision(call, zcclCollAllGather, type, zcclSum, total * typeBytes(call.datatype));
  return fromZccl(zcclAllGather(call.sendbuff, call.recvbuff, call.count, type, call.comm->host,
                                streamOf(call)),
                  call.function, call.comm);
}

ncclResult_t broadcast(const Call& call) {
  zcclDataType_t type = zcclUint8;
  NCCL_CHECK(hostType(call, false, &type));
  logDecision(
      call, planText(call, zcclCollBroadcast, type, zcclSum, call.count * typeBytes(call.datatype)),
      "exact", call.count * typeBytes(call.datatype));
  return fromZccl(zcclBroadcast(call.sendbuff, call.recvbuff, call.count, type, call.root,
                                call.comm->host, streamOf(call)),
                  call.function, call.comm);
}

ncclResult_t allToAll(const Call& call) {
  zcclDataType_t type = zcclUint8;
  NCCL_CHECK(hostType(call, false, &type));
  const size_t total = call.count * static_cast<size_t>(call.comm->nranks);
  logDecision(call,
              planText(call, zcclCollAllToAll, type, zcclSum, total * typeBytes(call.datatype)),
              "exact", total * typeBytes(call.datatype));
  return fromZccl(
      zcclAllToAll(call.sendbuff, call.recvbuff, call.count, type, call.comm->host, streamOf(call)),
      call.function, call.comm);
}

ncclResult_t reduce(const Call& call) {
  zcclDataType_t type = zcclUint8;
  NCCL_CHECK(hostType(call, true, &type));
  ReductionInput input;
  NCCL_CHECK(reductionInput(call, call.count, &input));
  const size_t bytes = call.count * typeBytes(call.datatype);
  logDecision(call, planText(call, zcclCollReduce, type, input.op, bytes), "exact", bytes);
  return keptWhileQueued(fromZccl(zcclReduce(input.data, call.recvbuff, call.count, type, input.op,
                                             call.root, call.comm->host, streamOf(call)),
                                  call.function, call.comm),
                         call, &input);
}

ncclResult_t gatherOrScatter(const Call& call, bool gather) {
  zcclDataType_t type = zcclUint8;
  NCCL_CHECK(hostType(call, false, &type));
  const size_t bytes = call.count * typeBytes(call.datatype) * call.comm->nranks;
  const zcclCollective_t collective = gather ? zcclCollGather : zcclCollScatter;
  logDecision(call, planText(call, collective, type, zcclSum, bytes), "exact", bytes);
  const auto run = gather ? zcclGather : zcclScatter;
  return fromZccl(run(call.sendbuff, call.recvbuff, call.count, type, call.root, call.comm->host,
                      streamOf(call)),
                  call.function, call.comm);
}

zcclResult_t pointToPoint(const Call& call, zcclDataType_t type) {
  return call.operation == Operation::kSend
             ? zcclSend(call.sendbuff, call.count, type, call.root, call.comm->host, streamOf(call))
             : zcclRecv(call.recvbuff, call.count, type, call.root, call.comm->host,
                        streamOf(call));
}

}  // namespace

ncclResult_t runPointToPointOverZccl(const Call* calls, size_t count) {
  if (count == 0) return ncclSuccess;
  zcclResult_t result = zcclGroupStart();
  size_t failed = 0;
  for (size_t i = 0; i < count && result == zcclSuccess; ++i) {
    zcclDataType_t type = zcclUint8;
    if (hostType(calls[i], false, &type) != ncclSuccess) {
      zcclGroupEnd();
      return ncclInvalidArgument;
    }
    result = pointToPoint(calls[i], type);
    failed = i;
  }
  const zcclResult_t ended = zcclGroupEnd();
  if (result == zcclSuccess) {
    result = ended;
    failed = 0;
  }
  return fromZccl(result, calls[failed].function, calls[failed].comm);
}

ncclResult_t runOverZccl(const Call& call) {
  switch (call.operation) {
    case Operation::kAllReduce:
      return allReduce(call);
    case Operation::kReduceScatter:
      return reduceScatter(call);
    case Operation::kAllGather:
      return allGather(call);
    case Operation::kBroadcast:
      return broadcast(call);
    case Operation::kReduce:
      return reduce(call);
    case Operation::kAllToAll:
      return allToAll(call);
    case Operation::kGather:
      return gatherOrScatter(call, true);
    case Operation::kScatter:
      return gatherOrScatter(call, false);
    case Operation::kSend:
    case Operation::kRecv:
      return runPointToPointOverZccl(&call, 1);
  }
  return fail(ncclInternalError, "%s: unknown operation", call.function);
}

}  // namespace zccl::nccl
