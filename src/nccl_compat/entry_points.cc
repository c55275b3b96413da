// NCCL's API, exported under NCCL's names (each pnccl* function, with its ncclX name a weak
// alias as in NCCL, so that profiling libraries can still interpose). Host memory goes to
// zccl, device memory to the real NCCL; what neither can do is an error that says why.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/log.h"
#include "nccl_compat/call.h"
#include "nccl_compat/cuda_driver.h"
#include "nccl_compat/nccl_comm.h"
#include "zccl/zccl_nccl.h"

using namespace zccl::nccl;  // NOLINT(google-build-using-namespace): NCCL's names, unqualified

#define NCCL_API(ret, name, params)                                                          \
  extern "C" __attribute__((visibility("default"), weak, alias("p" #name))) ret name params; \
  extern "C" __attribute__((visibility("default"))) ret p##name params

static_assert(sizeof(ncclUniqueId) == sizeof(zcclUniqueId), "ids travel as each other");

namespace {

// Under zcclrun (ZCCL_ROOT_ADDR set), the first id a process asks for names the launcher's
// rendezvous, so that every rank holds the same id without passing it around.
constexpr char kLauncherId[] = "zccl:launcher-rendezvous";
std::atomic<bool> launcherIdGiven{false};

bool isLauncherId(const ncclUniqueId& id) {
  return std::memcmp(id.internal, kLauncherId, sizeof(kLauncherId)) == 0;
}

int environmentInt(const char* name) {
  const char* text = std::getenv(name);
  return text == nullptr ? -1 : std::atoi(text);
}

ncclResult_t checkPointer(const void* pointer, const char* function, const char* name) {
  if (pointer != nullptr) return ncclSuccess;
  return fail(ncclInvalidArgument, "%s: %s=NULL", function, name);
}

// zccl's configuration for a communicator with these settings (blocking or not).
zcclConfig hostConfig(const CommSettings& settings) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.blocking = settings.blocking ? 1 : 0;
  return config;
}

ncclResult_t joinLauncherJob(zcclComm_t* host, int nranks, int rank, const zcclConfig& config,
                             const char* function) {
  const int launched = environmentInt("ZCCL_WORLD_SIZE");
  const int launchedRank = environmentInt("ZCCL_RANK");
  if (nranks != launched || rank != launchedRank) {
    return fail(ncclInvalidArgument,
                "%s(nranks=%d, rank=%d) with the launcher's id, but the launcher started "
                "ZCCL_WORLD_SIZE=%d, ZCCL_RANK=%d",
                function, nranks, rank, launched, launchedRank);
  }
  return fromZccl(zcclCommInitFromEnv(host, &config), function, nullptr);
}

// A communicator that is not live yet; `device` is the CUDA device it stands for, or -1.
ncclComm* unattached(const CommSettings& settings, const Policy& policy, int device) {
  auto* comm = new ncclComm();
  comm->settings = settings;
  comm->policy = policy;
  comm->device = device;
  return comm;
}

// Puts zccl's communicator under `comm` and makes it live.
void attach(ncclComm* comm, zcclComm_t host) {
  comm->host = host;
  zcclCommUserRank(host, &comm->rank);
  zcclCommCount(host, &comm->nranks);
  // Set on every rank alike (each read the same environment) before any call.
  zcclCommSetWirePolicy(host, &comm->policy.wire);
  zccl::setLogRank(comm->rank);
  addLiveComm(comm);
  ZCCL_LOG(kInfo,
           "NCCL drop-in: rank %d of %d%s%s on zccl (host memory); device memory goes to "
           "the real NCCL",
           comm->rank, comm->nranks, comm->settings.name.empty() ? "" : ", ",
           comm->settings.name.c_str());
}

ncclComm* wrap(zcclComm_t host, const CommSettings& settings, const Policy& policy, int device) {
  ncclComm* comm = unattached(settings, policy, device);
  attach(comm, host);
  return comm;
}

// Makes *newcomm over the zccl communicator `join` makes (none: *newcomm is NULL, a split's
// rank without a color). Inside a group the joining waits for ncclGroupEnd, where one thread
// may join several ranks at once; *newcomm is then the handle ncclGroupEnd makes live.
using Join = std::function<ncclResult_t(zcclComm_t* host)>;
ncclResult_t create(ncclComm_t* newcomm, bool member, const CommSettings& settings,
                    const Policy& policy, int device, Join join) {
  if (!insideGroup()) {
    zcclComm_t host = nullptr;
    NCCL_CHECK(join(&host));
    *newcomm = host != nullptr ? wrap(host, settings, policy, device) : nullptr;
    return ncclSuccess;
  }
  ncclComm* comm = member ? unattached(settings, policy, device) : nullptr;
  *newcomm = comm;
  deferInitToGroupEnd([comm, join = std::move(join)] {
    zcclComm_t host = nullptr;
    const ncclResult_t result = join(&host);
    if (comm == nullptr) return result;
    if (result != ncclSuccess || host == nullptr) {
      delete comm;  // never live: calls on the handle say so
      return result;
    }
    attach(comm, host);
    return ncclSuccess;
  });
  return ncclSuccess;
}

ncclResult_t readSettings(const void* config, const char* function, CommSettings* settings,
                          Policy* policy) {
  std::string error;
  if (readConfig(config, settings, &error) != ncclSuccess ||
      policyFromEnvironment(policy, &error) != ncclSuccess) {
    return fail(ncclInvalidArgument, "%s: %s", function, error.c_str());
  }
  return ncclSuccess;
}

ncclResult_t initRank(ncclComm_t* newcomm, int nranks, const ncclUniqueId& id, int rank,
                      const void* config, const char* function) {
  NCCL_CHECK(checkPointer(newcomm, function, "comm"));
  *newcomm = nullptr;
  CommSettings settings;
  Policy policy;
  NCCL_CHECK(readSettings(config, function, &settings, &policy));
  const zcclConfig hosted = hostConfig(settings);
  return create(newcomm, true, settings, policy, currentDevice(),
                [nranks, id, rank, hosted, function](zcclComm_t* host) {
                  if (isLauncherId(id))
                    return joinLauncherJob(host, nranks, rank, hosted, function);
                  zcclUniqueId zcclId;
                  std::memcpy(&zcclId, &id, sizeof(zcclId));
                  return fromZccl(zcclCommInitRank(host, nranks, zcclId, rank, &hosted), function,
                                  nullptr);
                });
}

ncclResult_t releaseComm(ncclComm_t comm, bool abort) {
  removeLiveComm(comm);
  std::string error;
  ncclResult_t result = ncclSuccess;
  if (comm->real != nullptr) {
    const NcclFunctions* real = realNccl(&error);
    result = abort ? real->commAbort(comm->real) : real->commDestroy(comm->real);
  }
  const zcclResult_t released = abort ? zcclCommAbort(comm->host) : zcclCommDestroy(comm->host);
  if (released != zcclSuccess) {
    result = fromZccl(released, abort ? "ncclCommAbort" : "ncclCommDestroy", nullptr);
  }
  delete comm;
  return result;
}

Call collective(Operation operation, const char* function, const void* sendbuff, void* recvbuff,
                size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                cudaStream_t stream) {
  return Call{operation, function, sendbuff, recvbuff, count, datatype, op, root, comm, stream};
}

// ncclMemAlloc's host memory on machines without a GPU, so that NCCL programs that allocate
// their buffers with it run there too.
std::mutex hostAllocationsMutex;
std::unordered_set<void*>& hostAllocations() {
  static auto* allocations = new std::unordered_set<void*>();
  return *allocations;
}

ncclResult_t unsupported(const char* function, const char* why) {
  return fail(ncclInvalidUsage, "%s is not supported by zccl's NCCL drop-in: %s", function, why);
}

}  // namespace

NCCL_API(ncclResult_t, ncclGetVersion, (int* version)) {
  NCCL_CHECK(checkPointer(version, "ncclGetVersion", "version"));
  *version = kImplementedVersion;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * uniqueId)) {
  NCCL_CHECK(checkPointer(uniqueId, "ncclGetUniqueId", "uniqueId"));
  std::memset(uniqueId, 0, sizeof(*uniqueId));
  const char* launcher = std::getenv("ZCCL_ROOT_ADDR");
  if (launcher != nullptr && *launcher != '\0' && !launcherIdGiven.exchange(true)) {
    std::memcpy(uniqueId->internal, kLauncherId, sizeof(kLauncherId));
    return ncclSuccess;
  }
  zcclUniqueId id;
  NCCL_CHECK(fromZccl(zcclGetUniqueId(&id), "ncclGetUniqueId", nullptr));
  std::memcpy(uniqueId, &id, sizeof(id));
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommInitRank,
         (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank)) {
  return initRank(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig,
         (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config)) {
  return initRank(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable,
         (ncclComm_t * comm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
          ncclConfig_t* config)) {
  NCCL_CHECK(checkPointer(commIds, "ncclCommInitRankScalable", "commIds"));
  if (nId < 1) {
    return fail(ncclInvalidArgument, "ncclCommInitRankScalable: nId=%d: expected at least 1", nId);
  }
  // zccl's rendezvous has one root: every rank holds the same ids, and the first serves.
  return initRank(comm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
}

NCCL_API(ncclResult_t, ncclCommInitAll, (ncclComm_t * comms, int ndev, const int* devlist)) {
  NCCL_CHECK(checkPointer(comms, "ncclCommInitAll", "comms"));
  if (ndev < 1) {
    return fail(ncclInvalidArgument, "ncclCommInitAll: ndev=%d: expected at least 1", ndev);
  }
  CommSettings settings;
  Policy policy;
  NCCL_CHECK(readSettings(nullptr, "ncclCommInitAll", &settings, &policy));
  std::vector<zcclComm_t> hosts(static_cast<size_t>(ndev));
  NCCL_CHECK(fromZccl(zcclCommInitAll(hosts.data(), ndev, nullptr), "ncclCommInitAll", nullptr));
  for (int i = 0; i < ndev; ++i) {
    const int device = devlist != nullptr ? devlist[i] : (cudaAvailable() ? i : -1);
    comms[i] = wrap(hosts[static_cast<size_t>(i)], settings, policy, device);
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommSplit,
         (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config)) {
  NCCL_CHECK(checkComm(comm, "ncclCommSplit"));
  NCCL_CHECK(checkPointer(newcomm, "ncclCommSplit", "newcomm"));
  *newcomm = nullptr;
  if (color < 0 && color != kSplitNoColor) {
    return fail(ncclInvalidArgument,
                "ncclCommSplit: color=%d: expected a color >= 0 or NCCL_SPLIT_NOCOLOR (-1)", color);
  }
  CommSettings settings = comm->settings;  // NULL config: the parent's, as in NCCL
  Policy policy = comm->policy;
  if (config != nullptr) NCCL_CHECK(readSettings(config, "ncclCommSplit", &settings, &policy));
  return create(newcomm, color != kSplitNoColor, settings, policy, comm->device,
                [comm, color, key, config = hostConfig(settings)](zcclComm_t* host) {
                  return fromZccl(zcclCommSplit(comm->host, color, key, host, &config),
                                  "ncclCommSplit", comm);
                });
}

NCCL_API(ncclResult_t, ncclCommFinalize, (ncclComm_t comm)) {
  NCCL_CHECK(checkComm(comm, "ncclCommFinalize"));
  // zccl's queued work (device calls, a non-blocking communicator's host calls) and the real
  // NCCL's may still be in flight: finalize waits for it.
  if (comm->host != nullptr) {
    NCCL_CHECK(fromZccl(zcclCommFinalize(comm->host), "ncclCommFinalize", comm));
  }
  if (comm->real != nullptr) {
    std::string error;
    const NcclFunctions* real = realNccl(&error);
    const ncclResult_t result = real->commFinalize(comm->real);
    if (result != ncclSuccess && result != ncclInProgress) {
      return fail(result, "ncclCommFinalize (the real NCCL): %s", real->getLastError(comm->real));
    }
  }
  comm->finalized = true;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDestroy, (ncclComm_t comm)) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  NCCL_CHECK(checkComm(comm, "ncclCommDestroy"));
  return releaseComm(comm, false);
}

NCCL_API(ncclResult_t, ncclCommAbort, (ncclComm_t comm)) {
  if (comm == nullptr) return ncclSuccess;
  NCCL_CHECK(checkComm(comm, "ncclCommAbort"));
  return releaseComm(comm, true);
}

NCCL_API(ncclResult_t, ncclCommRevoke, (ncclComm_t comm, int revokeFlags)) {
  NCCL_CHECK(checkComm(comm, "ncclCommRevoke"));
  (void)revokeFlags;
  return unsupported("ncclCommRevoke",
                     "zccl cannot cancel queued calls and keep the communicator; use "
                     "ncclCommAbort to end a communicator whose peers failed");
}

NCCL_API(ncclResult_t, ncclCommShrink,
         (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
          ncclConfig_t* config, int shrinkFlags)) {
  NCCL_CHECK(checkComm(comm, "ncclCommShrink"));
  (void)excludeRanksList, (void)excludeRanksCount, (void)newcomm, (void)config, (void)shrinkFlags;
  return unsupported("ncclCommShrink",
                     "zccl cannot make a communicator without the excluded ranks taking part; "
                     "use ncclCommSplit with NCCL_SPLIT_NOCOLOR on them while they are alive");
}

NCCL_API(const char*, ncclGetErrorString, (ncclResult_t result)) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with ZCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with ZCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the zccl developers";
    case ncclInvalidArgument:
      return "invalid argument (run with ZCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with ZCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

// Programs set NCCL_DEBUG-style variables after loading the library and call this to have
// them read: here ZCCL_DEBUG is read again at the next log line.
NCCL_API(void, ncclResetDebugInit, ()) { zccl::rereadLogLevel(); }

NCCL_API(const char*, ncclGetLastError, (ncclComm_t comm)) {
  (void)comm;  // as in NCCL: the calling thread's last failure, whatever its communicator
  return lastError().c_str();
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError)) {
  NCCL_CHECK(checkComm(comm, "ncclCommGetAsyncError"));
  NCCL_CHECK(checkPointer(asyncError, "ncclCommGetAsyncError", "asyncError"));
  *asyncError = static_cast<ncclResult_t>(comm->asyncError.load());
  if (*asyncError == ncclSuccess && comm->host != nullptr) {
    // zccl's queued work (device calls; host calls on a non-blocking communicator) runs after
    // the call that queued it: its failure comes later, and until it has run, ncclInProgress.
    zcclResult_t queued = zcclSuccess;
    NCCL_CHECK(fromZccl(zcclCommGetAsyncError(comm->host, &queued), "ncclCommGetAsyncError", comm));
    if (queued != zcclSuccess) {
      *asyncError = fromZccl(queued, "ncclCommGetAsyncError (work queued earlier)", comm);
    }
    if (queued != zcclInProgress) {
      std::lock_guard<std::mutex> lock(comm->mutex);
      comm->inFlightScratch.clear();
    }
  }
  if (*asyncError == ncclSuccess && comm->real != nullptr) {
    std::string error;
    return realNccl(&error)->commGetAsyncError(comm->real, asyncError);
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCount, (const ncclComm_t comm, int* count)) {
  NCCL_CHECK(checkComm(comm, "ncclCommCount"));
  NCCL_CHECK(checkPointer(count, "ncclCommCount", "count"));
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommUserRank, (const ncclComm_t comm, int* rank)) {
  NCCL_CHECK(checkComm(comm, "ncclCommUserRank"));
  NCCL_CHECK(checkPointer(rank, "ncclCommUserRank", "rank"));
  *rank = comm->rank;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommCuDevice, (const ncclComm_t comm, int* device)) {
  NCCL_CHECK(checkComm(comm, "ncclCommCuDevice"));
  NCCL_CHECK(checkPointer(device, "ncclCommCuDevice", "device"));
  if (comm->device < 0) {
    return fail(ncclInvalidUsage,
                "ncclCommCuDevice: the communicator has no CUDA device (%s): it carries host "
                "memory only",
                cudaAvailable() ? "no CUDA context was current when it was made"
                                : "there is no CUDA driver here");
  }
  *device = comm->device;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum,
         (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
          ncclComm_t comm)) {
  const char* function = "ncclRedOpCreatePreMulSum";
  NCCL_CHECK(checkComm(comm, function));
  NCCL_CHECK(checkPointer(op, function, "op"));
  NCCL_CHECK(checkPointer(scalar, function, "scalar"));
  if (datatype < 0 || datatype >= ncclNumTypes) {
    return fail(ncclInvalidArgument, "%s: datatype=%d is not an NCCL data type", function,
                static_cast<int>(datatype));
  }
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return fail(ncclInvalidArgument,
                "%s: residence=%d: expected ncclScalarDevice (0) or ncclScalarHostImmediate (1)",
                function, static_cast<int>(residence));
  }
  if (residence == ncclScalarHostImmediate && memoryKind(scalar) == MemoryKind::kDevice) {
    return fail(ncclInvalidArgument,
                "%s: scalar=%p is device memory, but residence=ncclScalarHostImmediate", function,
                scalar);
  }
  PreMulSum made{datatype, residence, {}, scalar, static_cast<ncclRedOp_t>(-1), true};
  if (residence == ncclScalarHostImmediate)
    std::memcpy(made.value.data(), scalar, typeBytes(datatype));
  std::lock_guard<std::mutex> lock(comm->mutex);
  comm->operations.push_back(made);
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(comm->operations.size()) - 1);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t op, ncclComm_t comm)) {
  NCCL_CHECK(checkComm(comm, "ncclRedOpDestroy"));
  PreMulSum operation{};
  // Its datatype is whatever it was made for: look it up without a type to compare.
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    const size_t index = static_cast<size_t>(op) - ncclNumOps;
    if (op >= ncclNumOps && index < comm->operations.size()) operation = comm->operations[index];
  }
  NCCL_CHECK(findPreMulSum(comm, op, operation.datatype, "ncclRedOpDestroy", &operation));
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    comm->operations[static_cast<size_t>(op) - ncclNumOps].live = false;
  }
  if (operation.realOp >= 0) {
    std::string error;
    return realNccl(&error)->redOpDestroy(operation.realOp, comm->real);
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclAllReduce,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kAllReduce, "ncclAllReduce", sendbuff, recvbuff, count,
                           datatype, op, 0, comm, stream));
}

NCCL_API(ncclResult_t, ncclReduceScatter,
         (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kReduceScatter, "ncclReduceScatter", sendbuff, recvbuff,
                           recvcount, datatype, op, 0, comm, stream));
}

NCCL_API(ncclResult_t, ncclAllGather,
         (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kAllGather, "ncclAllGather", sendbuff, recvbuff, sendcount,
                           datatype, ncclSum, 0, comm, stream));
}

NCCL_API(ncclResult_t, ncclBroadcast,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
          ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kBroadcast, "ncclBroadcast", sendbuff, recvbuff, count,
                           datatype, ncclSum, root, comm, stream));
}

NCCL_API(ncclResult_t, ncclBcast,
         (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
          cudaStream_t stream)) {
  return submit(collective(Operation::kBroadcast, "ncclBcast", buff, buff, count, datatype, ncclSum,
                           root, comm, stream));
}

NCCL_API(ncclResult_t, ncclReduce,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kReduce, "ncclReduce", sendbuff, recvbuff, count, datatype,
                           op, root, comm, stream));
}

NCCL_API(ncclResult_t, ncclAlltoAll,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
          ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kAllToAll, "ncclAlltoAll", sendbuff, recvbuff, count,
                           datatype, ncclSum, 0, comm, stream));
}

NCCL_API(ncclResult_t, ncclGather,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
          ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kGather, "ncclGather", sendbuff, recvbuff, count, datatype,
                           ncclSum, root, comm, stream));
}

NCCL_API(ncclResult_t, ncclScatter,
         (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
          ncclComm_t comm, cudaStream_t stream)) {
  return submit(collective(Operation::kScatter, "ncclScatter", sendbuff, recvbuff, count, datatype,
                           ncclSum, root, comm, stream));
}

NCCL_API(ncclResult_t, ncclSend,
         (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
          cudaStream_t stream)) {
  return submit(collective(Operation::kSend, "ncclSend", sendbuff, nullptr, count, datatype,
                           ncclSum, peer, comm, stream));
}

NCCL_API(ncclResult_t, ncclRecv,
         (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
          cudaStream_t stream)) {
  return submit(collective(Operation::kRecv, "ncclRecv", nullptr, recvbuff, count, datatype,
                           ncclSum, peer, comm, stream));
}

NCCL_API(ncclResult_t, ncclGroupStart, ()) { return groupStart(); }

NCCL_API(ncclResult_t, ncclGroupEnd, ()) { return groupEnd(); }

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo)) {
  (void)simInfo;
  // The group ends without running anything, as a simulation does.
  NCCL_CHECK(groupEndWithoutRunning("ncclGroupSimulateEnd"));
  return unsupported("ncclGroupSimulateEnd",
                     "zccl does not estimate groups (its planner's estimate of one collective "
                     "is zcclCommGetPlan's); the group ended without running its calls");
}

NCCL_API(ncclResult_t, ncclMemAlloc, (void** ptr, size_t size)) {
  NCCL_CHECK(checkPointer(ptr, "ncclMemAlloc", "ptr"));
  std::string error;
  if (cudaAvailable()) {
    const NcclFunctions* real = realNccl(&error);
    if (real == nullptr) return fail(ncclInvalidUsage, "ncclMemAlloc: %s", error.c_str());
    return real->memAlloc(ptr, size);
  }
  // No GPU: host memory, page-aligned, which every zccl call takes.
  const size_t page = 4096;
  *ptr = std::aligned_alloc(page, (size + page - 1) / page * page + (size == 0 ? page : 0));
  if (*ptr == nullptr) {
    return fail(ncclSystemError, "ncclMemAlloc: size=%zu: out of host memory", size);
  }
  std::lock_guard<std::mutex> lock(hostAllocationsMutex);
  hostAllocations().insert(*ptr);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclMemFree, (void* ptr)) {
  {
    std::lock_guard<std::mutex> lock(hostAllocationsMutex);
    if (hostAllocations().erase(ptr) != 0) {
      std::free(ptr);
      return ncclSuccess;
    }
  }
  std::string error;
  const NcclFunctions* real = cudaAvailable() ? realNccl(&error) : nullptr;
  if (real == nullptr) {
    return fail(ncclInvalidArgument, "ncclMemFree: ptr=%p was not allocated by ncclMemAlloc", ptr);
  }
  return real->memFree(ptr);
}

NCCL_API(ncclResult_t, ncclCommRegister,
         (const ncclComm_t comm, void* buff, size_t size, void** handle)) {
  NCCL_CHECK(checkComm(comm, "ncclCommRegister"));
  NCCL_CHECK(checkPointer(buff, "ncclCommRegister", "buff"));
  NCCL_CHECK(checkPointer(handle, "ncclCommRegister", "handle"));
  // Host memory needs no registration with zccl; device memory is registered with the real
  // NCCL's communicator, now or when the first device call makes it.
  auto registration = std::make_unique<Registration>(
      Registration{buff, size, memoryKind(buff) == MemoryKind::kDevice, nullptr});
  if (registration->device && comm->real != nullptr) {
    std::string error;
    NCCL_CHECK(realNccl(&error)->commRegister(comm->real, buff, size, &registration->realHandle));
  }
  std::lock_guard<std::mutex> lock(comm->mutex);
  *handle = registration.get();
  comm->registrations.push_back(std::move(registration));
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, (const ncclComm_t comm, void* handle)) {
  NCCL_CHECK(checkComm(comm, "ncclCommDeregister"));
  std::unique_ptr<Registration> found;
  {
    std::lock_guard<std::mutex> lock(comm->mutex);
    for (auto it = comm->registrations.begin(); it != comm->registrations.end(); ++it) {
      if (it->get() != handle) continue;
      found = std::move(*it);
      comm->registrations.erase(it);
      break;
    }
  }
  if (found == nullptr) {
    return fail(ncclInvalidArgument,
                "ncclCommDeregister: handle=%p is not a registration of this communicator", handle);
  }
  if (found->realHandle != nullptr) {
    std::string error;
    return realNccl(&error)->commDeregister(comm->real, found->realHandle);
  }
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommWindowRegister,
         (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags)) {
  NCCL_CHECK(checkComm(comm, "ncclCommWindowRegister"));
  (void)buff, (void)size, (void)win, (void)winFlags;
  return unsupported("ncclCommWindowRegister",
                     "symmetric memory windows are NCCL's own device kernels' feature; "
                     "register buffers with ncclCommRegister");
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win)) {
  NCCL_CHECK(checkComm(comm, "ncclCommWindowDeregister"));
  (void)win;
  return unsupported("ncclCommWindowDeregister",
                     "no window was registered (see ncclCommWindowRegister)");
}

extern "C" zcclResult_t zcclNcclGetComm(ncclComm* comm, zcclComm_t* zcclComm) {
  if (checkComm(comm, "zcclNcclGetComm") != ncclSuccess || zcclComm == nullptr) {
    return zcclInvalidArgument;
  }
  *zcclComm = comm->host;
  return zcclSuccess;
}
