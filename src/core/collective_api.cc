// The collective entry points, one table row each: every call goes through the same
// check -> options -> sizes -> buffers -> in-place -> dispatch sequence.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "core/call_state.h"
#include "core/call_trace.h"
#include "core/group.h"
#include "core/guarded.h"
#include "core/validate.h"
#include "device/device_engine.h"

namespace zccl {
namespace {

// Which buffer only the root uses (the other ranks may pass anything, NULL included).
enum class RootOnly { kNone, kSend, kRecv };

struct CollectiveEntry {
  const char* function;  // named in messages
  const char* countName;
  Collective collective;
  bool sendHoldsAllBlocks;  // sendbuff is count x ranks elements
  bool recvHoldsAllBlocks;  // recvbuff is count x ranks elements
  bool takesOp;
  RootOnly rootOnly;

  bool takesRoot() const { return rootOnly != RootOnly::kNone; }
};

constexpr CollectiveEntry kEntries[kNumCollectives] = {
    {"zcclAllGather", "sendcount", Collective::kAllGather, false, true, false, RootOnly::kNone},
    {"zcclReduceScatter", "recvcount", Collective::kReduceScatter, true, false, true,
     RootOnly::kNone},
    {"zcclAllReduce", "count", Collective::kAllReduce, false, false, true, RootOnly::kNone},
    {"zcclBroadcast", "count", Collective::kBroadcast, false, false, false, RootOnly::kSend},
    {"zcclAllToAll", "count", Collective::kAllToAll, true, true, false, RootOnly::kNone},
    {"zcclReduce", "count", Collective::kReduce, false, false, true, RootOnly::kRecv},
    {"zcclGather", "sendcount", Collective::kGather, false, true, false, RootOnly::kRecv},
    {"zcclScatter", "recvcount", Collective::kScatter, true, false, false, RootOnly::kSend},
};

constexpr bool entriesFollowCollectives() {
  for (int i = 0; i < kNumCollectives; ++i) {
    if (static_cast<int>(kEntries[i].collective) != i) return false;
  }
  return true;
}
static_assert(entriesFollowCollectives(), "kEntries is indexed by Collective");

struct CollectiveCall {
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  zcclDataType_t datatype;
  zcclRedOp_t op;
  int root;
  zcclComm* comm;
  zcclStream_t stream;
  const zcclCollOptions* options;
};

DataType toType(zcclDataType_t type) { return static_cast<DataType>(type); }
RedOp toOp(zcclRedOp_t op) { return static_cast<RedOp>(op); }

Status checkCall(const CollectiveEntry& entry, const CollectiveCall& call) {
  ZCCL_CHECK(checkType(call.datatype));
  ZCCL_CHECK(checkStream(call.stream));
  if (insideGroup()) {
    return fail(Status::kInvalidUsage,
                "%s inside zcclGroupStart/zcclGroupEnd: collectives cannot be grouped; only "
                "zcclSend and zcclRecv may",
                entry.function);
  }
  if (entry.takesOp) ZCCL_CHECK(checkOp(call.op));
  if (entry.takesRoot()) ZCCL_CHECK(checkPeer("root", call.root, call.comm->size()));
  return Status::kSuccess;
}

// The call's options over the communicator's, checked against what the call can do.
Status callOptions(const CollectiveEntry& entry, const CollectiveCall& call,
                   CollectiveOptions* resolved) {
  const zcclComm* comm = call.comm;
  const bool blocked = entry.sendHoldsAllBlocks || entry.recvHoldsAllBlocks;
  const size_t bufferBytes = call.count * (blocked ? static_cast<size_t>(comm->size()) : 1) *
                             elementSize(toType(call.datatype));
  ZCCL_CHECK(
      resolveCollOptions(call.options, comm->config, entry.collective, bufferBytes, resolved));
  const zcclCollOptions* asked = call.options;
  const bool wireAsked =
      asked != nullptr && (asked->wireFormat == zcclWireInt8 || asked->wireFormat == zcclWireInt4 ||
                           asked->wireFormat == zcclWireInt2);
  if (wireAsked && !wireApplies(entry.collective, toType(call.datatype), toOp(call.op))) {
    return fail(Status::kInvalidArgument,
                "options.wireFormat=%s with datatype=%s op=%s: quantized wire formats carry "
                "float32, float16 and bfloat16, and reduce only with sum or avg",
                wireFormatName(resolved->wire), dataTypeName(toType(call.datatype)),
                redOpName(toOp(call.op)));
  }
  const bool twoLevelForm =
      findRow(entry.collective, Algorithm::kTwoLevel, false, MemoryKind::kHost) != nullptr;
  if (twoLevelForm && resolved->hierarchy == Hierarchy::kTwoLevel && !comm->hasLevels()) {
    return fail(Status::kInvalidUsage,
                "hierarchy=two-level needs the same number of ranks on every node; this "
                "communicator's %d nodes differ (rank %d's node holds %d)",
                comm->nodes.numNodes(), comm->rank(), comm->nodes.localSize(comm->rank()));
  }
  return Status::kSuccess;
}

// One call as every rank must make it (ZCCL_CHECK=1), field by field.
struct CallField {
  const char* name;
  int64_t value;
  std::string (*show)(int64_t value);
};

std::string showNumber(int64_t value) { return std::to_string(value); }
std::string showCollective(int64_t value) { return collectiveName(static_cast<Collective>(value)); }
std::string showType(int64_t value) { return dataTypeName(static_cast<DataType>(value)); }
std::string showOp(int64_t value) { return redOpName(static_cast<RedOp>(value)); }
std::string showAlgorithm(int64_t value) { return algorithmName(static_cast<Algorithm>(value)); }
std::string showWire(int64_t value) {
  return std::string(value >= 8 ? "allow-" : "") +
         wireFormatName(static_cast<WireFormat>(value % 8));
}
std::string showHierarchy(int64_t value) {
  static const char* const names[] = {"auto", "flat", "two-level"};
  return value >= 0 && value < 3 ? names[value] : "?";
}
std::string showQuantization(int64_t value) {
  return std::string(value & 1 ? "asym" : "sym") + (value & 2 ? " stochastic" : "") +
         (value & 4 ? " smoothed" : "") + " group " + std::to_string(value >> 3);
}
std::string showYesNo(int64_t value) { return value ? "yes" : "no"; }

// Every rank's call against rank 0's; a difference is kInvalidUsage on every rank, with the
// same message (each computes it from the same exchange). A rank whose own arguments were
// rejected (`checked`) takes part too, so that the others fail at once naming it instead of
// waiting for it until the timeout; it keeps its own error.
Status agreeOnCall(zcclComm* comm, const CollectiveEntry& entry, const CollectiveCall& call,
                   const CollectiveOptions& options, bool inPlace, Status checked) {
  const CallField fields[] = {
      {"arguments", checked == Status::kSuccess ? 1 : 0, showNumber},
      {"operation", static_cast<int64_t>(entry.collective), showCollective},
      {"count", static_cast<int64_t>(call.count), showNumber},
      {"datatype", call.datatype, showType},
      {"op", entry.takesOp ? call.op : 0, showOp},
      {"root", entry.takesRoot() ? call.root : 0, showNumber},
      {"algorithm", static_cast<int64_t>(options.algorithm), showAlgorithm},
      {"wire format", static_cast<int64_t>(options.wire) + (options.wireAllowedOnly ? 8 : 0),
       showWire},
      {"hierarchy", static_cast<int64_t>(options.hierarchy), showHierarchy},
      {"quantization",
       (static_cast<int64_t>(options.groupSize) << 3) | (options.smoothing ? 4 : 0) |
           (options.rounding == Rounding::kStochastic ? 2 : 0) |
           (options.scheme == QuantScheme::kAsymmetric ? 1 : 0),
       showQuantization},
      // A rooted collective's root and its other ranks differ in form by nature.
      {"in-place", entry.takesRoot() ? 0 : static_cast<int64_t>(inPlace), showYesNo},
      // Device messages travel in chunks, host messages whole.
      {"device memory (stream)", call.stream != nullptr ? 1 : 0, showYesNo},
      {"error feedback", call.options != nullptr && call.options->feedback != nullptr ? 1 : 0,
       showYesNo},
      {"weight differences", call.options != nullptr && call.options->reference != nullptr ? 1 : 0,
       showYesNo},
  };
  constexpr size_t kFields = sizeof(fields) / sizeof(fields[0]);
  int64_t mine[kFields];
  for (size_t f = 0; f < kFields; ++f) mine[f] = fields[f].value;
  const int n = comm->size();
  std::vector<int64_t> all(kFields * static_cast<size_t>(n));
  ZCCL_CHECK(comm->transport->allGatherControl(mine, sizeof(mine), all.data()));
  const auto valueOf = [&](int rank, size_t f) {
    return all[static_cast<size_t>(rank) * kFields + f];
  };
  std::string rejected;
  for (int r = 0; r < n; ++r) {
    if (valueOf(r, 0) == 0) rejected += (rejected.empty() ? "" : ", ") + std::to_string(r);
  }
  if (checked != Status::kSuccess) return checked;
  if (!rejected.empty()) {
    return fail(Status::kInvalidUsage,
                "%s: rank(s) %s rejected their own arguments to this call (ZCCL_CHECK); their "
                "errors say why",
                entry.function, rejected.c_str());
  }
  for (size_t f = 1; f < kFields; ++f) {
    std::string differing;
    int count = 0;
    for (int r = 1; r < n; ++r) {
      if (valueOf(r, f) == valueOf(0, f)) continue;
      if (++count <= 3) {
        differing += ", rank " + std::to_string(r) + " has " + fields[f].show(valueOf(r, f));
      }
    }
    if (count == 0) continue;
    if (count > 3) differing += " (and " + std::to_string(count - 3) + " more ranks)";
    return fail(Status::kInvalidUsage,
                "%s: the ranks' calls do not match (ZCCL_CHECK): %s: rank 0 has %s%s",
                entry.function, fields[f].name, fields[f].show(valueOf(0, f)).c_str(),
                differing.c_str());
  }
  return Status::kSuccess;
}

// What a call runs with once its arguments pass this rank's checks.
struct CheckedCall {
  CollectiveOptions options;
  bool inPlace = false;
  Residuals residual;                    // options.feedback's
  GatherReference* reference = nullptr;  // options.reference's
};

// The state the call's options name, against the call it serves.
Status checkCallState(const CollectiveEntry& entry, const CollectiveCall& call,
                      CheckedCall* checked) {
  const zcclCollOptions* o = call.options;
  if (o == nullptr || (o->feedback == nullptr && o->reference == nullptr)) {
    return Status::kSuccess;
  }
  if (call.stream != nullptr) {
    return fail(Status::kInvalidUsage,
                "%s: options.feedback and options.reference keep their state on host memory; "
                "this call is on device memory (stream=%p)",
                entry.function, call.stream);
  }
  const size_t ranks = static_cast<size_t>(call.comm->size());
  const DataType type = toType(call.datatype);
  if (o->feedback != nullptr) {
    const bool reduces = entry.collective == Collective::kReduceScatter ||
                         entry.collective == Collective::kAllReduce;
    const size_t input = call.count * (entry.sendHoldsAllBlocks ? ranks : 1);
    if (!reduces) {
      return fail(Status::kInvalidArgument,
                  "options.feedback=%p: error feedback serves reduce-scatters and all-reduces, "
                  "not %s",
                  static_cast<void*>(o->feedback), entry.function);
    }
    if (o->feedback->comm != call.comm || o->feedback->count != input ||
        o->feedback->type != type) {
      return fail(Status::kInvalidArgument,
                  "options.feedback=%p serves %zu elements of %s on comm %p; %s reduces %zu of %s "
                  "on comm %p",
                  static_cast<void*>(o->feedback), o->feedback->count,
                  dataTypeName(o->feedback->type), static_cast<void*>(o->feedback->comm),
                  entry.function, input, dataTypeName(type), static_cast<void*>(call.comm));
    }
    checked->residual =
        residualsIn(o->feedback->residual.data(), o->feedback->residualType, o->feedback->count);
    checked->options.errorFeedback = true;
  }
  if (o->reference != nullptr) {
    if (entry.collective != Collective::kAllGather || o->reference->comm != call.comm ||
        o->reference->sendcount != call.count || o->reference->type != type) {
      return fail(Status::kInvalidArgument,
                  "options.reference=%p serves all-gathers of %zu elements of %s on comm %p; "
                  "this is %s of %zu of %s on comm %p",
                  static_cast<void*>(o->reference), o->reference->sendcount,
                  dataTypeName(o->reference->type), static_cast<void*>(o->reference->comm),
                  entry.function, call.count, dataTypeName(type), static_cast<void*>(call.comm));
    }
    checked->reference = &o->reference->gather;
  }
  return Status::kSuccess;
}

Status checkArguments(const CollectiveEntry& entry, const CollectiveCall& call,
                      CheckedCall* checked) {
  ZCCL_CHECK(checkCall(entry, call));
  ZCCL_CHECK(callOptions(entry, call, &checked->options));
  ZCCL_CHECK(checkCallState(entry, call, checked));
  const zcclComm* comm = call.comm;
  const size_t ranks = static_cast<size_t>(comm->size());
  size_t sendBytes = 0;
  size_t recvBytes = 0;
  ZCCL_CHECK(checkBytes(entry.countName, call.count, entry.sendHoldsAllBlocks ? ranks : 1,
                        call.datatype, &sendBytes));
  ZCCL_CHECK(checkBytes(entry.countName, call.count, entry.recvHoldsAllBlocks ? ranks : 1,
                        call.datatype, &recvBytes));
  const bool isRoot = comm->rank() == call.root;
  const bool readsSend = entry.rootOnly != RootOnly::kSend || isRoot;
  const bool writesRecv = entry.rootOnly != RootOnly::kRecv || isRoot;
  if (readsSend) {
    ZCCL_CHECK(checkBuffer("sendbuff", call.sendbuff, entry.countName, call.count));
    ZCCL_CHECK(checkBufferMemory("sendbuff", call.sendbuff, call.stream));
  }
  if (writesRecv) {
    ZCCL_CHECK(checkBuffer("recvbuff", call.recvbuff, entry.countName, call.count));
    ZCCL_CHECK(checkBufferMemory("recvbuff", call.recvbuff, call.stream));
  }
  if (!readsSend || !writesRecv) return Status::kSuccess;
  // In place when this rank's block of the larger buffer is the smaller one.
  const ptrdiff_t blockBytes = static_cast<ptrdiff_t>(std::min(sendBytes, recvBytes));
  const ptrdiff_t direction = static_cast<ptrdiff_t>(entry.recvHoldsAllBlocks) -
                              static_cast<ptrdiff_t>(entry.sendHoldsAllBlocks);
  return checkInPlace(entry.function, call.sendbuff, sendBytes, call.recvbuff, recvBytes,
                      direction * blockBytes * comm->rank(), &checked->inPlace);
}

// How a call that passed its checks hands over its work: run here (a blocking host call), or
// queued (a device call; a host call with a request, or on a non-blocking communicator).
struct Handover {
  zcclRequest_t* request;  // where the caller wants the request, or null
  bool queued;
  bool inProgress;  // the call returns zcclInProgress (non-blocking communicator, no request)
};

Handover handoverOf(const CollectiveCall& call) {
  zcclRequest_t* request = call.options != nullptr ? call.options->request : nullptr;
  const bool nonBlocking = call.stream == nullptr && !call.comm->config.blocking;
  return Handover{request, call.stream != nullptr || request != nullptr || nonBlocking,
                  nonBlocking && request == nullptr};
}

// Queues the call's work, with a request where one was asked for: the request then carries
// what happens to the work, and the call returns kSuccess (or zcclInProgress on a
// non-blocking communicator without a request).
template <typename Enqueue>
Status handOver(const Handover& handover, Enqueue&& enqueue, const CallTrace* trace = nullptr) {
  auto request = std::make_unique<zcclRequest>();
  if (trace != nullptr) {
    request->tracedCall = trace->id();
    request->collective = trace->collective();
  }
  zcclRequest* completes = handover.request != nullptr ? request.get() : nullptr;
  const Status accepted = enqueue([completes](const JobOutcome& outcome) {
    if (completes != nullptr) completes->complete(outcome);
  });
  if (handover.request == nullptr) {
    ZCCL_CHECK(accepted);
    return handover.inProgress ? Status::kInProgress : Status::kSuccess;
  }
  // Work never handed to the queue (a check of the device failed) is the call's own failure.
  if (accepted != Status::kSuccess && !request->done()) return accepted;
  *handover.request = request.release();
  return Status::kSuccess;
}

Status runEntry(const CollectiveEntry& entry, const CollectiveCall& call) {
  CheckedCall checked;
  const Status valid = checkArguments(entry, call, &checked);
  zcclComm* comm = call.comm;
  const Handover handover = handoverOf(call);
  if (handover.request != nullptr) *handover.request = nullptr;
  // What runs on the caller's thread uses the communicator's transports: its work queued
  // earlier finishes first. A queued call itself only queues its work.
  if (!handover.queued || comm->config.checkCalls) ZCCL_CHECK(drainQueuedWork(comm));
  if (comm->config.checkCalls) {
    // A rank whose framework rejected the call (zcclCommRejectCollective) sends a notice
    // instead of its part of the exchange.
    comm->enterCollective();
    ZCCL_CHECK(comm->leaveCollective(
        agreeOnCall(comm, entry, call, checked.options, checked.inPlace, valid)));
  }
  if (valid != Status::kSuccess) {
    // ZCCL_CHECK's exchange told the peers already. A device call's number is taken when its
    // stream runs it, so its peers are not told.
    if (!comm->config.checkCalls && call.stream == nullptr && call.count > 0) {
      comm->tellPeersRejected(std::string(entry.function) + ": " + lastThreadError());
    }
    return valid;
  }
  const CollectiveOptions& options = checked.options;
  const bool inPlace = checked.inPlace;
  const size_t ranks = static_cast<size_t>(comm->size());
  if (call.count == 0) return Status::kSuccess;
  const bool ownBlockInRecv = inPlace && entry.recvHoldsAllBlocks && !entry.sendHoldsAllBlocks;
  const bool blocked = entry.sendHoldsAllBlocks || entry.recvHoldsAllBlocks;
  const CollectiveArgs args{ownBlockInRecv ? nullptr : call.sendbuff,
                            call.recvbuff,
                            Partition{call.count * (blocked ? ranks : 1), comm->size()},
                            toType(call.datatype),
                            toOp(call.op),
                            call.root};
  const auto name = [&] {
    return std::string(entry.function) + "(" + entry.countName + "=" + std::to_string(call.count) +
           ", " + dataTypeName(args.type) + ")";
  };
  const Collective collective = entry.collective;
  const auto trace = tracingCalls() ? std::make_shared<CallTrace>(*comm, collectiveName(collective),
                                                                  name(), call.stream != nullptr)
                                    : nullptr;
  // Queues the work, its request (where one was asked for) carrying its record's id.
  const auto queue = [&](auto&& enqueue) {
    const Status queued = handOver(handover, enqueue, trace.get());
    if (trace != nullptr) trace->handedOver();
    return queued;
  };
  if (call.stream != nullptr) {
    DeviceEngine* device = nullptr;
    ZCCL_CHECK(deviceEngineOf(comm, &device));
    CollectiveObserver observer;
    if (trace != nullptr) {
      observer.started = [comm, trace] { trace->started(*comm); };
      observer.ended = [comm, trace](Status status, const Plan& ran) {
        trace->ended(*comm, status, ran);
      };
    }
    return queue([&](std::function<void(const JobOutcome&)> done) {
      return device->enqueueCollective(call.stream, name(), collective, args, options,
                                       std::move(observer), std::move(done));
    });
  }
  const Residuals residual = checked.residual;
  GatherReference* reference = checked.reference;
  const auto work = [comm, collective, args, options, residual, reference, trace] {
    if (trace != nullptr) trace->started(*comm);
    Context ctx = comm->nextCollective(comm->hostKernels());
    ctx.residual = residual;
    Plan ran;
    if (trace != nullptr) ctx.ran = &ran;
    const Status status = comm->leaveCollective(
        reference != nullptr ? allGatherDifferences(ctx, args, options, reference)
                             : runCollective(ctx, collective, args, options));
    if (trace != nullptr) trace->ended(*comm, status, ran);
    return status;
  };
  if (handover.queued) {
    return queue([&](std::function<void(const JobOutcome&)> done) {
      return queueHostWork(comm, name(), work, std::move(done));
    });
  }
  const Status status = work();
  // A call that failed past its checks may have left messages in flight, and its peers
  // may be gone: nothing pending survives it, and the communicator takes no more work.
  if (status != Status::kSuccess) {
    addErrorContext(name(), comm->exitedRanks());
    for (Transport* t : comm->transports(/*withOwned=*/false)) t->abandon();
  }
  return status;
}

zcclResult_t run(Collective collective, const CollectiveCall& call) {
  return guardedComm(call.comm,
                     [&] { return runEntry(kEntries[static_cast<int>(collective)], call); });
}

}  // namespace
}  // namespace zccl

using zccl::Collective;

extern "C" {

zcclResult_t zcclAllGatherEx(const void* sendbuff, void* recvbuff, size_t sendcount,
                             zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream,
                             const zcclCollOptions* options) {
  return zccl::run(Collective::kAllGather,
                   {sendbuff, recvbuff, sendcount, datatype, zcclSum, 0, comm, stream, options});
}

zcclResult_t zcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream) {
  return zcclAllGatherEx(sendbuff, recvbuff, sendcount, datatype, comm, stream, nullptr);
}

zcclResult_t zcclReduceScatterEx(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                                 zcclStream_t stream, const zcclCollOptions* options) {
  return zccl::run(Collective::kReduceScatter,
                   {sendbuff, recvbuff, recvcount, datatype, op, 0, comm, stream, options});
}

zcclResult_t zcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                               zcclStream_t stream) {
  return zcclReduceScatterEx(sendbuff, recvbuff, recvcount, datatype, op, comm, stream, nullptr);
}

zcclResult_t zcclAllReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                             zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                             zcclStream_t stream, const zcclCollOptions* options) {
  return zccl::run(Collective::kAllReduce,
                   {sendbuff, recvbuff, count, datatype, op, 0, comm, stream, options});
}

zcclResult_t zcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                           zcclStream_t stream) {
  return zcclAllReduceEx(sendbuff, recvbuff, count, datatype, op, comm, stream, nullptr);
}

zcclResult_t zcclBroadcastEx(const void* sendbuff, void* recvbuff, size_t count,
                             zcclDataType_t datatype, int root, zcclComm_t comm,
                             zcclStream_t stream, const zcclCollOptions* options) {
  return zccl::run(Collective::kBroadcast,
                   {sendbuff, recvbuff, count, datatype, zcclSum, root, comm, stream, options});
}

zcclResult_t zcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           zcclDataType_t datatype, int root, zcclComm_t comm,
                           zcclStream_t stream) {
  return zcclBroadcastEx(sendbuff, recvbuff, count, datatype, root, comm, stream, nullptr);
}

zcclResult_t zcclAllToAllEx(const void* sendbuff, void* recvbuff, size_t count,
                            zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream,
                            const zcclCollOptions* options) {
  return zccl::run(Collective::kAllToAll,
                   {sendbuff, recvbuff, count, datatype, zcclSum, 0, comm, stream, options});
}

zcclResult_t zcclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                          zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream) {
  return zcclAllToAllEx(sendbuff, recvbuff, count, datatype, comm, stream, nullptr);
}

zcclResult_t zcclReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                          zcclDataType_t datatype, zcclRedOp_t op, int root, zcclComm_t comm,
                          zcclStream_t stream, const zcclCollOptions* options) {
  return zccl::run(Collective::kReduce,
                   {sendbuff, recvbuff, count, datatype, op, root, comm, stream, options});
}

zcclResult_t zcclReduce(const void* sendbuff, void* recvbuff, size_t count, zcclDataType_t datatype,
                        zcclRedOp_t op, int root, zcclComm_t comm, zcclStream_t stream) {
  return zcclReduceEx(sendbuff, recvbuff, count, datatype, op, root, comm, stream, nullptr);
}

zcclResult_t zcclGatherEx(const void* sendbuff, void* recvbuff, size_t sendcount,
                          zcclDataType_t datatype, int root, zcclComm_t comm, zcclStream_t stream,
                          const zcclCollOptions* options) {
  return zccl::run(Collective::kGather,
                   {sendbuff, recvbuff, sendcount, datatype, zcclSum, root, comm, stream, options});
}

zcclResult_t zcclGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                        zcclDataType_t datatype, int root, zcclComm_t comm, zcclStream_t stream) {
  return zcclGatherEx(sendbuff, recvbuff, sendcount, datatype, root, comm, stream, nullptr);
}

zcclResult_t zcclScatterEx(const void* sendbuff, void* recvbuff, size_t recvcount,
                           zcclDataType_t datatype, int root, zcclComm_t comm, zcclStream_t stream,
                           const zcclCollOptions* options) {
  return zccl::run(Collective::kScatter,
                   {sendbuff, recvbuff, recvcount, datatype, zcclSum, root, comm, stream, options});
}

zcclResult_t zcclScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                         zcclDataType_t datatype, int root, zcclComm_t comm, zcclStream_t stream) {
  return zcclScatterEx(sendbuff, recvbuff, recvcount, datatype, root, comm, stream, nullptr);
}

}  // extern "C"
