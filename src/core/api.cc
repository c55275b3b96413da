// The C entry points: validate, then hand over to collectives; nothing throws past here.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#include "common/log.h"
#include "core/comm.h"
#include "core/validate.h"
#include "transport/mpi_transport.h"

using zccl::Status;

static_assert(static_cast<int>(Status::kInProgress) == zcclInProgress, "result codes drifted");
static_assert(static_cast<int>(zccl::DataType::kCount) == zcclNumTypes, "data types drifted");
static_assert(static_cast<int>(zccl::RedOp::kCount) == zcclNumOps, "ops drifted");
static_assert(static_cast<int>(zccl::Algorithm::kNative) == zcclAlgoNative, "algorithms drifted");

namespace {

thread_local int groupDepth = 0;
thread_local std::vector<zcclComm*> groupComms;

// Runs an entry point's body, turning its Status (and any C++ exception) into a result
// code and keeping the failure's message on the communicator.
template <typename Body>
zcclResult_t guarded(zcclComm* comm, Body&& body) {
  zccl::clearThreadError();
  Status status;
  try {
    status = body();
  } catch (const std::bad_alloc&) {
    status = zccl::fail(Status::kSystemError, "out of memory");
  } catch (const std::exception& error) {
    status = zccl::fail(Status::kInternalError, "unexpected exception: %s", error.what());
  }
  if (status != Status::kSuccess && comm != nullptr) comm->lastError = zccl::lastThreadError();
  return static_cast<zcclResult_t>(status);
}

zccl::DataType toType(zcclDataType_t type) { return static_cast<zccl::DataType>(type); }
zccl::RedOp toOp(zcclRedOp_t op) { return static_cast<zccl::RedOp>(op); }

Status checkCollective(const zcclComm* comm, zcclDataType_t type, zcclStream_t stream) {
  ZCCL_CHECK(zccl::checkComm(comm));
  ZCCL_CHECK(zccl::checkType(type));
  ZCCL_CHECK(zccl::checkStream(stream));
  if (groupDepth > 0) {
    return zccl::fail(Status::kInvalidUsage,
                      "collectives inside zcclGroupStart/zcclGroupEnd are not supported; "
                      "only zcclSend and zcclRecv may be grouped");
  }
  return Status::kSuccess;
}

// The options of one collective call, checked against what the call can do.
Status callOptions(const zcclComm* comm, const zcclCollOptions* options,
                   zccl::Collective collective, zcclDataType_t type, zcclRedOp_t op,
                   zccl::CollectiveOptions* resolved) {
  ZCCL_CHECK(zccl::resolveCollOptions(options, comm->config, resolved));
  const bool wireAsked = options != nullptr && (options->wireFormat == zcclWireInt8 ||
                                                options->wireFormat == zcclWireInt4);
  if (wireAsked && !zccl::wireApplies(collective, toType(type), toOp(op))) {
    return zccl::fail(Status::kInvalidArgument,
                      "options.wireFormat=%s with datatype=%s op=%s: quantized wire formats carry "
                      "float32, float16 and bfloat16, and reduce only with sum or avg",
                      zccl::wireFormatName(resolved->wire), zccl::dataTypeName(toType(type)),
                      zccl::redOpName(toOp(op)));
  }
  if (resolved->hierarchy == zccl::Hierarchy::kTwoLevel && !comm->hasLevels()) {
    return zccl::fail(Status::kInvalidUsage,
                      "hierarchy=two-level needs the same number of ranks on every node; this "
                      "communicator's %d nodes differ (rank %d's node holds %d)",
                      comm->nodes.numNodes(), comm->rank(), comm->nodes.localSize(comm->rank()));
  }
  return Status::kSuccess;
}

Status initComm(MPI_Comm mpiComm, const zcclConfig* config, zcclComm** out) {
  CommConfig resolved;
  ZCCL_CHECK(zccl::resolveConfig(config, &resolved));
  auto comm = std::make_unique<zcclComm>();
  comm->config = resolved;
  ZCCL_CHECK(zccl::createMpiTransport(mpiComm, zccl::MpiTransportOptions{resolved.timeoutSeconds},
                                      &comm->transport));
  int worldRank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  zccl::setLogRank(worldRank);
  ZCCL_CHECK(zccl::discoverNodeMap(mpiComm, resolved.ranksPerNode, &comm->nodes));
  static std::atomic<bool> emulationAnnounced{false};
  if (resolved.ranksPerNode > 0 && comm->rank() == 0 && !emulationAnnounced.exchange(true)) {
    // Printed once per process whatever ZCCL_DEBUG says: byte counts per link class mean
    // something else under emulation.
    zccl::logMessage(zccl::LogLevel::kWarn,
                     "ZCCL_RANKS_PER_NODE=%d: emulating %d nodes of up to %d consecutive ranks; "
                     "intra/inter-node statistics follow this map, not the hardware",
                     resolved.ranksPerNode, comm->nodes.numNodes(), resolved.ranksPerNode);
  }
  ZCCL_CHECK(zccl::buildLevels(comm.get()));
  ZCCL_CHECK(zccl::buildClusterModel(comm.get()));
  ZCCL_LOG(kInfo,
           "comm %p: rank %d of %d, node %d of %d (local rank %d of %d), algorithm %s, wire %s, "
           "two-level algorithms %s",
           static_cast<void*>(comm.get()), comm->rank(), comm->size(),
           comm->nodes.nodeOf(comm->rank()), comm->nodes.numNodes(),
           comm->nodes.localRank(comm->rank()), comm->nodes.localSize(comm->rank()),
           zccl::algorithmName(resolved.collective.algorithm),
           zccl::wireFormatName(resolved.collective.wire),
           comm->hasLevels() ? "available" : "unavailable (nodes differ in size)");
  *out = comm.release();
  return Status::kSuccess;
}

Status splitComm(zcclComm* parent, int color, int key, zcclComm** out, const zcclConfig* config) {
  CommConfig resolved = parent->config;
  if (config != nullptr) ZCCL_CHECK(zccl::resolveConfig(config, &resolved));
  std::unique_ptr<zccl::Transport> child;
  ZCCL_CHECK(parent->transport->split(color, key, &child));
  *out = nullptr;
  if (!child) return Status::kSuccess;
  auto comm = std::make_unique<zcclComm>();
  comm->config = resolved;
  comm->transport = std::move(child);
  const int parentRank = parent->rank();
  std::vector<int> parentRanks(static_cast<size_t>(comm->size()));
  ZCCL_CHECK(comm->transport->allGatherControl(&parentRank, sizeof(int), parentRanks.data()));
  comm->nodes = parent->nodes.subset(parentRanks);
  ZCCL_CHECK(zccl::buildLevels(comm.get()));
  ZCCL_CHECK(zccl::buildClusterModel(comm.get()));
  *out = comm.release();
  return Status::kSuccess;
}

// The cached node or cross-node sub-communicator of `parent`, created on first use.
Status cachedSplit(zcclComm* parent, bool crossNode, zcclComm** out) {
  std::unique_ptr<zcclComm>& cached = crossNode ? parent->crossComm : parent->nodeComm;
  if (!cached) {
    const int me = parent->rank();
    const int node = parent->nodes.nodeOf(me);
    const int local = parent->nodes.localRank(me);
    zcclComm* created = nullptr;
    ZCCL_CHECK(crossNode ? splitComm(parent, local, node, &created, nullptr)
                         : splitComm(parent, node, me, &created, nullptr));
    created->ownedByParent = true;
    cached.reset(created);
  }
  *out = cached.get();
  return Status::kSuccess;
}

// Posts one point-to-point message; outside a group it also waits for it.
Status pointToPoint(zcclComm* comm, bool isSend, void* buffer, size_t bytes, int peer) {
  zccl::Ticket ticket;
  if (isSend) {
    ZCCL_CHECK(comm->transport->postSend(buffer, bytes, peer, zccl::kPointToPointTag, &ticket));
  } else {
    ZCCL_CHECK(comm->transport->postRecv(buffer, bytes, peer, zccl::kPointToPointTag, &ticket));
  }
  if (groupDepth == 0) return comm->transport->waitAll();
  for (zcclComm* pending : groupComms) {
    if (pending == comm) return Status::kSuccess;
  }
  groupComms.push_back(comm);
  return Status::kSuccess;
}

Status checkPointToPoint(zcclComm* comm, const void* buffer, const char* name, size_t count,
                         zcclDataType_t type, int peer, zcclStream_t stream, size_t* bytes) {
  ZCCL_CHECK(zccl::checkComm(comm));
  ZCCL_CHECK(zccl::checkType(type));
  ZCCL_CHECK(zccl::checkStream(stream));
  ZCCL_CHECK(zccl::checkBuffer(name, buffer, count));
  ZCCL_CHECK(zccl::checkPeer("peer", peer, comm->size()));
  return zccl::checkBytes("count", count, 1, type, bytes);
}

}  // namespace

extern "C" {

const char* zcclGetErrorString(zcclResult_t result) {
  if (static_cast<int>(result) < 0 || static_cast<int>(result) >= zcclNumResults) {
    return "unknown result code";
  }
  return zccl::statusName(static_cast<Status>(result));
}

const char* zcclGetLastError(zcclComm_t comm) {
  if (comm == nullptr) return zccl::lastThreadError().c_str();
  return comm->lastError.c_str();
}

zcclResult_t zcclGetVersion(int* version) {
  return guarded(nullptr, [&] {
    if (version == nullptr) return zccl::fail(Status::kInvalidArgument, "version=NULL");
    *version = ZCCL_VERSION_CODE;
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommInitMPI(MPI_Comm mpiComm, const zcclConfig* config, zcclComm_t* comm) {
  return guarded(nullptr, [&] {
    if (comm == nullptr) return zccl::fail(Status::kInvalidArgument, "comm=NULL (output)");
    *comm = nullptr;
    return initComm(mpiComm, config, comm);
  });
}

zcclResult_t zcclCommSplit(zcclComm_t comm, int color, int key, zcclComm_t* newcomm,
                           const zcclConfig* config) {
  return guarded(comm, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    if (newcomm == nullptr) return zccl::fail(Status::kInvalidArgument, "newcomm=NULL");
    return splitComm(comm, color, key, newcomm, config);
  });
}

zcclResult_t zcclCommDestroy(zcclComm_t comm) {
  return guarded(nullptr, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    if (comm->ownedByParent) {
      return zccl::fail(Status::kInvalidUsage,
                        "comm=%p came from zcclCommSplitNode/zcclCommSplitCrossNode: it is "
                        "destroyed with its parent",
                        static_cast<void*>(comm));
    }
    const Status status = comm->transport->waitAll();
    delete comm;
    return status;
  });
}

zcclResult_t zcclCommAbort(zcclComm_t comm) {
  return guarded(nullptr, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    comm->transport->abandon();
    delete comm;
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommCount(const zcclComm_t comm, int* count) {
  return guarded(comm, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    if (count == nullptr) return zccl::fail(Status::kInvalidArgument, "count=NULL");
    *count = comm->size();
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommUserRank(const zcclComm_t comm, int* rank) {
  return guarded(comm, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    if (rank == nullptr) return zccl::fail(Status::kInvalidArgument, "rank=NULL");
    *rank = comm->rank();
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommGetStats(const zcclComm_t comm, zcclStats* stats) {
  return guarded(comm, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    if (stats == nullptr) return zccl::fail(Status::kInvalidArgument, "stats=NULL");
    *stats = zcclStats{};
    const auto traffic = comm->trafficByPeer();
    for (int peer = 0; peer < comm->size(); ++peer) {
      const zcclLinkClass_t link = comm->linkTo(peer);
      stats->bytesSent[link] += traffic[peer].bytes;
      stats->messagesSent[link] += traffic[peer].messages;
    }
    stats->nativeBytesEstimated = comm->native.bytesEstimated;
    stats->nativeCalls = comm->native.calls;
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommResetStats(zcclComm_t comm) {
  return guarded(comm, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    comm->resetTraffic();
    return Status::kSuccess;
  });
}

zcclResult_t zcclAllGatherEx(const void* sendbuff, void* recvbuff, size_t sendcount,
                             zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream,
                             const zcclCollOptions* options) {
  return guarded(comm, [&] {
    ZCCL_CHECK(checkCollective(comm, datatype, stream));
    zccl::CollectiveOptions resolved;
    ZCCL_CHECK(
        callOptions(comm, options, zccl::Collective::kAllGather, datatype, zcclSum, &resolved));
    size_t sendBytes = 0;
    size_t recvBytes = 0;
    ZCCL_CHECK(zccl::checkBytes("sendcount", sendcount, 1, datatype, &sendBytes));
    ZCCL_CHECK(zccl::checkBytes("sendcount", sendcount, comm->size(), datatype, &recvBytes));
    ZCCL_CHECK(zccl::checkBuffer("sendbuff", sendbuff, sendcount));
    ZCCL_CHECK(zccl::checkBuffer("recvbuff", recvbuff, sendcount));
    bool inPlace = false;
    ZCCL_CHECK(zccl::checkInPlace("zcclAllGather", sendbuff, sendBytes, recvbuff, recvBytes,
                                  static_cast<ptrdiff_t>(sendBytes) * comm->rank(), &inPlace));
    if (sendcount == 0) return Status::kSuccess;
    auto ctx = comm->context();
    return zccl::allGather(ctx, resolved, inPlace ? nullptr : sendbuff, recvbuff, sendcount,
                           toType(datatype));
  });
}

zcclResult_t zcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream) {
  return zcclAllGatherEx(sendbuff, recvbuff, sendcount, datatype, comm, stream, nullptr);
}

zcclResult_t zcclReduceScatterEx(const void* sendbuff, void* recvbuff, size_t recvcount,
                                 zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                                 zcclStream_t stream, const zcclCollOptions* options) {
  return guarded(comm, [&] {
    ZCCL_CHECK(checkCollective(comm, datatype, stream));
    ZCCL_CHECK(zccl::checkOp(op));
    zccl::CollectiveOptions resolved;
    ZCCL_CHECK(
        callOptions(comm, options, zccl::Collective::kReduceScatter, datatype, op, &resolved));
    size_t sendBytes = 0;
    size_t recvBytes = 0;
    ZCCL_CHECK(zccl::checkBytes("recvcount", recvcount, comm->size(), datatype, &sendBytes));
    ZCCL_CHECK(zccl::checkBytes("recvcount", recvcount, 1, datatype, &recvBytes));
    ZCCL_CHECK(zccl::checkBuffer("sendbuff", sendbuff, recvcount));
    ZCCL_CHECK(zccl::checkBuffer("recvbuff", recvbuff, recvcount));
    bool inPlace = false;
    ZCCL_CHECK(zccl::checkInPlace("zcclReduceScatter", sendbuff, sendBytes, recvbuff, recvBytes,
                                  -static_cast<ptrdiff_t>(recvBytes) * comm->rank(), &inPlace));
    if (recvcount == 0) return Status::kSuccess;
    auto ctx = comm->context();
    return zccl::reduceScatter(ctx, resolved, sendbuff, recvbuff, recvcount, toType(datatype),
                               toOp(op));
  });
}

zcclResult_t zcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                               zcclStream_t stream) {
  return zcclReduceScatterEx(sendbuff, recvbuff, recvcount, datatype, op, comm, stream, nullptr);
}

zcclResult_t zcclAllReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                             zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                             zcclStream_t stream, const zcclCollOptions* options) {
  return guarded(comm, [&] {
    ZCCL_CHECK(checkCollective(comm, datatype, stream));
    ZCCL_CHECK(zccl::checkOp(op));
    zccl::CollectiveOptions resolved;
    ZCCL_CHECK(callOptions(comm, options, zccl::Collective::kAllReduce, datatype, op, &resolved));
    size_t bytes = 0;
    ZCCL_CHECK(zccl::checkBytes("count", count, 1, datatype, &bytes));
    ZCCL_CHECK(zccl::checkBuffer("sendbuff", sendbuff, count));
    ZCCL_CHECK(zccl::checkBuffer("recvbuff", recvbuff, count));
    bool inPlace = false;
    ZCCL_CHECK(zccl::checkInPlace("zcclAllReduce", sendbuff, bytes, recvbuff, bytes, 0, &inPlace));
    if (count == 0) return Status::kSuccess;
    auto ctx = comm->context();
    return zccl::allReduce(ctx, resolved, sendbuff, recvbuff, count, toType(datatype), toOp(op));
  });
}

zcclResult_t zcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                           zcclStream_t stream) {
  return zcclAllReduceEx(sendbuff, recvbuff, count, datatype, op, comm, stream, nullptr);
}

zcclResult_t zcclCommSplitNode(zcclComm_t comm, zcclComm_t* nodeComm) {
  return guarded(comm, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    if (nodeComm == nullptr) return zccl::fail(Status::kInvalidArgument, "nodeComm=NULL");
    return cachedSplit(comm, false, nodeComm);
  });
}

zcclResult_t zcclCommSplitCrossNode(zcclComm_t comm, zcclComm_t* crossComm) {
  return guarded(comm, [&] {
    ZCCL_CHECK(zccl::checkComm(comm));
    if (crossComm == nullptr) return zccl::fail(Status::kInvalidArgument, "crossComm=NULL");
    return cachedSplit(comm, true, crossComm);
  });
}

zcclResult_t zcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           zcclDataType_t datatype, int root, zcclComm_t comm,
                           zcclStream_t stream) {
  return guarded(comm, [&] {
    ZCCL_CHECK(checkCollective(comm, datatype, stream));
    ZCCL_CHECK(zccl::checkPeer("root", root, comm->size()));
    size_t bytes = 0;
    ZCCL_CHECK(zccl::checkBytes("count", count, 1, datatype, &bytes));
    ZCCL_CHECK(zccl::checkBuffer("recvbuff", recvbuff, count));
    if (comm->rank() == root) {
      ZCCL_CHECK(zccl::checkBuffer("sendbuff", sendbuff, count));
      bool inPlace = false;
      ZCCL_CHECK(
          zccl::checkInPlace("zcclBroadcast", sendbuff, bytes, recvbuff, bytes, 0, &inPlace));
    }
    if (count == 0) return Status::kSuccess;
    auto ctx = comm->context();
    return zccl::broadcast(ctx, comm->config.collective, sendbuff, recvbuff, count,
                           toType(datatype), root);
  });
}

zcclResult_t zcclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                          zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream) {
  return guarded(comm, [&] {
    ZCCL_CHECK(checkCollective(comm, datatype, stream));
    size_t bytes = 0;
    ZCCL_CHECK(zccl::checkBytes("count", count, comm->size(), datatype, &bytes));
    ZCCL_CHECK(zccl::checkBuffer("sendbuff", sendbuff, count));
    ZCCL_CHECK(zccl::checkBuffer("recvbuff", recvbuff, count));
    bool inPlace = false;
    ZCCL_CHECK(zccl::checkInPlace("zcclAllToAll", sendbuff, bytes, recvbuff, bytes, 0, &inPlace));
    if (count == 0) return Status::kSuccess;
    auto ctx = comm->context();
    return zccl::allToAll(ctx, comm->config.collective, sendbuff, recvbuff, count,
                          toType(datatype));
  });
}

zcclResult_t zcclSend(const void* sendbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream) {
  return guarded(comm, [&] {
    size_t bytes = 0;
    ZCCL_CHECK(
        checkPointToPoint(comm, sendbuff, "sendbuff", count, datatype, peer, stream, &bytes));
    return pointToPoint(comm, true, const_cast<void*>(sendbuff), bytes, peer);
  });
}

zcclResult_t zcclRecv(void* recvbuff, size_t count, zcclDataType_t datatype, int peer,
                      zcclComm_t comm, zcclStream_t stream) {
  return guarded(comm, [&] {
    size_t bytes = 0;
    ZCCL_CHECK(
        checkPointToPoint(comm, recvbuff, "recvbuff", count, datatype, peer, stream, &bytes));
    return pointToPoint(comm, false, recvbuff, bytes, peer);
  });
}

zcclResult_t zcclGroupStart(void) {
  ++groupDepth;
  return zcclSuccess;
}

zcclResult_t zcclGroupEnd(void) {
  return guarded(nullptr, [&] {
    if (groupDepth == 0) {
      return zccl::fail(Status::kInvalidUsage, "zcclGroupEnd without a matching zcclGroupStart");
    }
    if (--groupDepth > 0) return Status::kSuccess;
    Status first = Status::kSuccess;
    for (zcclComm* comm : groupComms) {
      const Status status = comm->transport->waitAll();
      if (status != Status::kSuccess) {
        comm->lastError = zccl::lastThreadError();
        if (first == Status::kSuccess) first = status;
      }
    }
    groupComms.clear();
    return first;
  });
}

}  // extern "C"
