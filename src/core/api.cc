// The C entry points for communicators, point-to-point and groups: validate, then hand over
// to core; nothing throws past here. The collectives are in collective_api.cc.
#include <strings.h>

#include <functional>
#include <string>
#include <vector>

#include "core/call_trace.h"
#include "core/group.h"
#include "core/guarded.h"
#include "core/validate.h"

using zccl::Status;

static_assert(static_cast<int>(Status::kInProgress) == zcclInProgress, "result codes drifted");
static_assert(static_cast<int>(zccl::DataType::kCount) == zcclNumTypes, "data types drifted");
static_assert(static_cast<int>(zccl::RedOp::kCount) == zcclNumOps, "ops drifted");
static_assert(static_cast<int>(zccl::Algorithm::kNative) == zcclAlgoNative, "algorithms drifted");

namespace {

// A communicator with messages pending in this thread's group, and the stream they are on
// (NULL: host memory), posted together when the group ends.
struct PendingMessages {
  zcclComm* comm;
  zcclStream_t stream;
  std::vector<zccl::PeerMessage> messages;
};

// A finished (or awaited) request's outcome as the calling thread's result; frees it.
Status finishRequest(zcclRequest* request) {
  const double began = request->tracedCall != 0 ? zccl::traceClockMicros() : 0;
  const zccl::JobOutcome outcome = request->wait();
  if (request->tracedCall != 0) zccl::traceWait(request->tracedCall, request->collective, began);
  delete request;
  if (outcome.status != Status::kSuccess) zccl::restoreThreadError(outcome.error);
  return outcome.status;
}

thread_local int groupDepth = 0;
thread_local std::vector<PendingMessages> groupComms;

// Point-to-point work on the host transport: run here once the communicator's queued work is
// done, or queued behind it on a non-blocking communicator (zcclInProgress).
Status runOrQueue(zcclComm* comm, const char* call, std::function<Status()> work) {
  if (comm->config.blocking) {
    ZCCL_CHECK(zccl::drainQueuedWork(comm));
    return work();
  }
  ZCCL_CHECK(zccl::queueHostWork(comm, call, std::move(work), {}));
  return Status::kInProgress;
}

// Host messages: posted and waited for here, after the communicator's queued work, or queued
// on a non-blocking communicator (zcclInProgress). Device messages: queued on their stream as
// one batch.
Status completeMessages(PendingMessages& pending) {
  zcclComm* comm = pending.comm;
  if (pending.stream != nullptr) {
    zccl::DeviceEngine* device = nullptr;
    ZCCL_CHECK(zccl::deviceEngineOf(comm, &device));
    return device->enqueueMessages(pending.stream, std::move(pending.messages));
  }
  return runOrQueue(comm, "zcclSend/zcclRecv", [comm, messages = std::move(pending.messages)] {
    return zccl::exchangeMessages(*comm->transport, messages, zccl::kPointToPointTag);
  });
}

// Joins `comm` on `stream` to this thread's group; a communicator's messages in one group
// share one stream (or host memory), which GroupEnd completes.
Status joinGroup(zcclComm* comm, zcclStream_t stream, PendingMessages** joined) {
  for (PendingMessages& pending : groupComms) {
    if (pending.comm != comm) continue;
    *joined = &pending;
    if (pending.stream == stream) return Status::kSuccess;
    return zccl::fail(Status::kInvalidUsage,
                      "stream=%p: this group already holds messages of comm=%p on stream=%p; "
                      "a communicator's sends and receives in one group share one stream "
                      "(NULL: host memory)",
                      stream, static_cast<void*>(comm), pending.stream);
  }
  groupComms.push_back({comm, stream, {}});
  *joined = &groupComms.back();
  return Status::kSuccess;
}

// One point-to-point message: it joins its group's batch, or outside a group is completed
// (host) or queued (device, non-blocking host) at once.
Status pointToPoint(zcclComm* comm, bool isSend, void* buffer, size_t bytes, int peer,
                    zcclStream_t stream) {
  PendingMessages single{comm, stream, {}};
  PendingMessages* pending = &single;
  if (groupDepth > 0) ZCCL_CHECK(joinGroup(comm, stream, &pending));
  pending->messages.push_back({isSend, buffer, bytes, peer});
  return groupDepth == 0 ? completeMessages(single) : Status::kSuccess;
}

Status checkPointToPoint(zcclComm* comm, const void* buffer, const char* name, size_t count,
                         zcclDataType_t type, int peer, zcclStream_t stream, size_t* bytes) {
  ZCCL_CHECK(zccl::checkType(type));
  ZCCL_CHECK(zccl::checkStream(stream));
  ZCCL_CHECK(zccl::checkBuffer(name, buffer, "count", count));
  ZCCL_CHECK(zccl::checkBufferMemory(name, buffer, stream));
  ZCCL_CHECK(zccl::checkPeer("peer", peer, comm->size()));
  return zccl::checkBytes("count", count, 1, type, bytes);
}

// Destroy (waits for pending grouped operations) or abort (does not).
Status endComm(zcclComm* comm, bool abort) {
  if (comm == nullptr) return zccl::fail(Status::kInvalidArgument, "comm=NULL");
  if (!zccl::acquireComm(comm)) {
    return zccl::fail(Status::kInvalidUsage,
                      "comm=%p is not a live communicator: it was destroyed or aborted, or never "
                      "created",
                      static_cast<void*>(comm));
  }
  if (comm->ownedByParent) {
    zccl::releaseComm(comm);
    return zccl::fail(Status::kInvalidUsage,
                      "comm=%p came from zcclCommSplitNode/zcclCommSplitCrossNode: it is "
                      "destroyed with its parent",
                      static_cast<void*>(comm));
  }
  if (!zccl::retireComm(comm)) {  // another thread ended it first
    zccl::releaseComm(comm);
    return zccl::fail(Status::kInvalidUsage, "comm=%p is being destroyed by another thread",
                      static_cast<void*>(comm));
  }
  Status status = Status::kSuccess;
  if (!abort) {
    status = zccl::drainQueuedWork(comm);
    if (status == Status::kSuccess) status = comm->transport->waitAll();
  }
  zccl::abortComm(comm);  // nothing pending after a successful wait: this only frees
  return status;
}

}  // namespace

namespace zccl {

bool insideGroup() { return groupDepth > 0; }

}  // namespace zccl

extern "C" {

const char* zcclGetErrorString(zcclResult_t result) {
  if (static_cast<int>(result) < 0 || static_cast<int>(result) >= zcclNumResults) {
    return "unknown result code";
  }
  return zccl::statusName(static_cast<Status>(result));
}

const char* zcclGetLastError(zcclComm_t comm) {
  if (comm == nullptr || !zccl::acquireComm(comm)) return zccl::lastThreadError().c_str();
  const char* message = comm->lastError.c_str();
  zccl::releaseComm(comm);
  return message;
}

zcclResult_t zcclGetVersion(int* version) {
  return zccl::guarded([&] {
    if (version == nullptr) return zccl::fail(Status::kInvalidArgument, "version=NULL");
    *version = ZCCL_VERSION_CODE;
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommSplit(zcclComm_t comm, int color, int key, zcclComm_t* newcomm,
                           const zcclConfig* config) {
  return zccl::guardedComm(comm, [&] {
    if (newcomm == nullptr) return zccl::fail(Status::kInvalidArgument, "newcomm=NULL");
    ZCCL_CHECK(zccl::drainQueuedWork(comm));
    return zccl::splitComm(comm, color, key, config, newcomm);
  });
}

zcclResult_t zcclCommFinalize(zcclComm_t comm) {
  return zccl::guardedComm(comm, [&] { return zccl::drainQueuedWork(comm); });
}

zcclResult_t zcclCommDestroy(zcclComm_t comm) {
  return zccl::guarded([&] { return endComm(comm, /*abort=*/false); });
}

zcclResult_t zcclCommAbort(zcclComm_t comm) {
  return zccl::guarded([&] { return endComm(comm, /*abort=*/true); });
}

zcclResult_t zcclCommCount(const zcclComm_t comm, int* count) {
  return zccl::guardedComm(comm, [&] {
    if (count == nullptr) return zccl::fail(Status::kInvalidArgument, "count=NULL");
    *count = comm->size();
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommUserRank(const zcclComm_t comm, int* rank) {
  return zccl::guardedComm(comm, [&] {
    if (rank == nullptr) return zccl::fail(Status::kInvalidArgument, "rank=NULL");
    *rank = comm->rank();
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommGetStats(const zcclComm_t comm, zcclStats* stats) {
  return zccl::guardedComm(comm, [&] {
    if (stats == nullptr) return zccl::fail(Status::kInvalidArgument, "stats=NULL");
    ZCCL_CHECK(zccl::drainQueuedWork(comm));  // its counts are complete, and no longer moving
    *stats = comm->statsNow();
    return Status::kSuccess;
  });
}

const char* zcclWireFormatName(zcclWireFormat_t format) {
  const int index = static_cast<int>(format);
  return index >= 0 && index < zccl::kNumWireFormatNames ? zccl::kWireFormatNames[index] : nullptr;
}

zcclResult_t zcclWireFormatFromName(const char* name, zcclWireFormat_t* format) {
  return zccl::guarded([&] {
    if (format == nullptr) return zccl::fail(Status::kInvalidArgument, "format=NULL");
    if (name == nullptr) return zccl::fail(Status::kInvalidArgument, "name=NULL");
    std::string accepted;
    for (int i = 0; i < zccl::kNumWireFormatNames; ++i) {
      if (strcasecmp(name, zccl::kWireFormatNames[i]) == 0) {
        *format = static_cast<zcclWireFormat_t>(i);
        return Status::kSuccess;
      }
      accepted += (i == 0 ? "" : "|") + std::string(zccl::kWireFormatNames[i]);
    }
    return zccl::fail(Status::kInvalidArgument, "name=\"%s\": not a wire format (%s)", name,
                      accepted.c_str());
  });
}

zcclResult_t zcclCommSetWirePolicy(zcclComm_t comm, const zcclWirePolicy* policy) {
  return zccl::guardedComm(comm, [&] {
    if (policy == nullptr) return zccl::fail(Status::kInvalidArgument, "policy=NULL");
    ZCCL_CHECK(zccl::checkWirePolicy(*policy));
    comm->config.wirePolicy = *policy;
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommGetWirePolicy(const zcclComm_t comm, zcclWirePolicy* policy) {
  return zccl::guardedComm(comm, [&] {
    if (policy == nullptr) return zccl::fail(Status::kInvalidArgument, "policy=NULL");
    *policy = comm->config.wirePolicy;
    return Status::kSuccess;
  });
}

zcclResult_t zcclTest(zcclRequest_t request, int* done) {
  return zccl::guarded([&] {
    if (done == nullptr) return zccl::fail(Status::kInvalidArgument, "done=NULL");
    if (request == nullptr) return zccl::fail(Status::kInvalidArgument, "request=NULL");
    *done = request->done() ? 1 : 0;
    return *done == 1 ? finishRequest(request) : Status::kSuccess;
  });
}

zcclResult_t zcclWait(zcclRequest_t request) {
  return zccl::guarded([&] {
    if (request == nullptr) return zccl::fail(Status::kInvalidArgument, "request=NULL");
    return finishRequest(request);
  });
}

zcclResult_t zcclCommGetAsyncError(zcclComm_t comm, zcclResult_t* asyncError) {
  return zccl::guardedComm(comm, [&] {
    if (asyncError == nullptr) return zccl::fail(Status::kInvalidArgument, "asyncError=NULL");
    const Status failure = comm->work.failure();
    const bool pending = !comm->config.blocking && !comm->work.idle();
    *asyncError = failure == Status::kSuccess && pending ? zcclInProgress
                                                         : static_cast<zcclResult_t>(failure);
    // zcclGetLastError(comm) says why, as after a failed call.
    if (failure != Status::kSuccess) comm->lastError = zccl::lastThreadError();
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommResetStats(zcclComm_t comm) {
  return zccl::guardedComm(comm, [&] {
    ZCCL_CHECK(zccl::drainQueuedWork(comm));
    comm->resetTraffic();
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommSplitNode(zcclComm_t comm, zcclComm_t* nodeComm) {
  return zccl::guardedComm(comm, [&] {
    if (nodeComm == nullptr) return zccl::fail(Status::kInvalidArgument, "nodeComm=NULL");
    ZCCL_CHECK(zccl::drainQueuedWork(comm));
    return zccl::cachedSplit(comm, false, nodeComm);
  });
}

zcclResult_t zcclCommSplitCrossNode(zcclComm_t comm, zcclComm_t* crossComm) {
  return zccl::guardedComm(comm, [&] {
    if (crossComm == nullptr) return zccl::fail(Status::kInvalidArgument, "crossComm=NULL");
    ZCCL_CHECK(zccl::drainQueuedWork(comm));
    return zccl::cachedSplit(comm, true, crossComm);
  });
}

zcclResult_t zcclSend(const void* sendbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream) {
  return zccl::guardedComm(comm, [&] {
    size_t bytes = 0;
    ZCCL_CHECK(
        checkPointToPoint(comm, sendbuff, "sendbuff", count, datatype, peer, stream, &bytes));
    return pointToPoint(comm, true, const_cast<void*>(sendbuff), bytes, peer, stream);
  });
}

zcclResult_t zcclRecv(void* recvbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream) {
  return zccl::guardedComm(comm, [&] {
    size_t bytes = 0;
    ZCCL_CHECK(
        checkPointToPoint(comm, recvbuff, "recvbuff", count, datatype, peer, stream, &bytes));
    return pointToPoint(comm, false, recvbuff, bytes, peer, stream);
  });
}

zcclResult_t zcclRecvFromAny(void* recvbuff, size_t count, zcclDataType_t datatype, int* source,
                             zcclComm_t comm) {
  return zccl::guardedComm(comm, [&] {
    if (source == nullptr) return zccl::fail(Status::kInvalidArgument, "source=NULL");
    if (count == 0) {
      return zccl::fail(Status::kInvalidArgument,
                        "count=0: a receive from any source learns its sender from the message, "
                        "so it takes at least one element");
    }
    size_t bytes = 0;
    ZCCL_CHECK(checkPointToPoint(comm, recvbuff, "recvbuff", count, datatype, 0, nullptr, &bytes));
    if (groupDepth > 0) {
      return zccl::fail(Status::kInvalidUsage,
                        "zcclRecvFromAny inside a group: its sender is known only once it "
                        "arrives, so it is not grouped; call it outside zcclGroupStart/End");
    }
    return runOrQueue(comm, "zcclRecvFromAny", [comm, recvbuff, bytes, source] {
      return comm->transport->receiveFromAny(recvbuff, bytes, zccl::kPointToPointTag, source);
    });
  });
}

zcclResult_t zcclCommRejectCollective(zcclComm_t comm, const char* reason) {
  return zccl::guardedComm(comm, [&] {
    if (reason == nullptr) return zccl::fail(Status::kInvalidArgument, "reason=NULL");
    comm->tellPeersRejected(reason);
    return Status::kSuccess;
  });
}

zcclResult_t zcclGroupStart(void) {
  ++groupDepth;
  return zcclSuccess;
}

zcclResult_t zcclGroupEnd(void) {
  return zccl::guarded([&] {
    if (groupDepth == 0) {
      return zccl::fail(Status::kInvalidUsage, "zcclGroupEnd without a matching zcclGroupStart");
    }
    if (--groupDepth > 0) return Status::kSuccess;
    Status first = Status::kSuccess;
    for (PendingMessages& pending : groupComms) {
      zcclComm* comm = pending.comm;
      Status status = Status::kInvalidUsage;
      if (!zccl::acquireComm(comm)) {
        zccl::fail(status, "comm=%p was destroyed inside the group", static_cast<void*>(comm));
      } else {
        status = completeMessages(pending);
        if (status != Status::kSuccess) comm->lastError = zccl::lastThreadError();
        zccl::releaseComm(comm);
      }
      if (first == Status::kSuccess) first = status;
    }
    groupComms.clear();
    return first;
  });
}

}  // extern "C"
