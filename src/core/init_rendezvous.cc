// zcclGetUniqueId, zcclCommInitRank, zcclCommInitAll, zcclCommInitFromEnv and
// zcclCommInitStore: every way in that needs no MPI. Each joins a rendezvous
// (src/bootstrap), builds the UCX transport over it and the communicator on that.
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/launch_environment.h"
#include "common/log.h"
#include "core/comm.h"
#include "core/guarded.h"
#include "transport/ucx/ucx_transport.h"

namespace zccl {
namespace {

// The user's store callbacks as the bootstrap's KeyValueStore.
class CallbackStore final : public KeyValueStore {
 public:
  explicit CallbackStore(const zcclStore& store) : store_(store) {}

  Status set(const std::string& key, const std::string& value) override {
    return check("set", key, store_.set(store_.context, key.c_str(), value.data(), value.size()));
  }
  Status get(const std::string& key, std::string* value) override {
    size_t bytes = 4096;
    for (int attempt = 0; attempt < 2; ++attempt) {
      value->resize(bytes);
      const size_t capacity = bytes;
      const zcclResult_t result = store_.get(store_.context, key.c_str(), value->data(), &bytes);
      if (result == zcclSuccess && bytes <= capacity) {
        value->resize(bytes);
        return Status::kSuccess;
      }
      if (result != zcclInvalidUsage || bytes <= capacity) return check("get", key, result);
    }
    return fail(Status::kInvalidUsage, "store get(%s): the value's length keeps changing",
                key.c_str());
  }
  Status wait(const std::vector<std::string>& keys, double timeoutSeconds) override {
    std::vector<const char*> names;
    for (const std::string& key : keys) names.push_back(key.c_str());
    const zcclResult_t result =
        store_.wait(store_.context, names.data(), static_cast<int>(names.size()), timeoutSeconds);
    if (result == zcclTimeout) return Status::kTimeout;  // the bootstrap names who is missing
    return check("wait", keys.empty() ? "" : keys.front(), result);
  }

 private:
  static Status check(const char* what, const std::string& key, zcclResult_t result) {
    if (result == zcclSuccess) return Status::kSuccess;
    return fail(Status::kRemoteError, "the store's %s(%s) returned %s", what, key.c_str(),
                zcclGetErrorString(result));
  }
  zcclStore store_;
};

}  // namespace

// Joins a rendezvous (`connect`, given the bootstrap timeout), builds the UCX transport over
// it and the communicator on that. `config` may be null.
using ConnectBootstrap = std::function<Status(double timeoutSeconds, std::unique_ptr<Bootstrap>*)>;
Status initOverBootstrap(const ConnectBootstrap& connect, const zcclConfig* config,
                         zcclComm** out) {
  // A configuration this rank rejects still joins, so that the others learn of it.
  CommConfig resolved;
  Status configured = resolveConfig(config, &resolved);
  if (configured == Status::kSuccess && resolved.transport == TransportKind::kMpi) {
    configured = fail(Status::kInvalidUsage,
                      "ZCCL_TRANSPORT=mpi: this communicator was not made from an MPI "
                      "communicator (zcclCommInitMPI); use auto or ucx");
  }
  const std::string why = lastThreadError();
  double timeout = 0;
  ZCCL_CHECK(bootstrapTimeout(resolved.timeoutSeconds, &timeout));
  std::unique_ptr<Bootstrap> bootstrap;
  ZCCL_CHECK(connect(timeout, &bootstrap));
  setLogRank(bootstrap->rank());
  std::unique_ptr<Transport> transport;
  ZCCL_CHECK(createUcxTransport(*bootstrap, resolved.transportOptions(), &transport));
  restoreThreadError(why);
  return createComm(std::move(transport), resolved, configured, out);
}

}  // namespace zccl

using zccl::Status;

extern "C" {

zcclResult_t zcclGetUniqueId(zcclUniqueId* uniqueId) {
  return zccl::guarded([&] {
    if (uniqueId == nullptr) return zccl::fail(Status::kInvalidArgument, "uniqueId=NULL");
    zccl::UniqueIdBytes id;
    ZCCL_CHECK(zccl::createUniqueId(&id));
    std::memcpy(uniqueId->internal, id.bytes, sizeof(id.bytes));
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommInitRank(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank,
                              const zcclConfig* config) {
  return zccl::guarded([&] {
    if (comm == nullptr) return zccl::fail(Status::kInvalidArgument, "comm=NULL (output)");
    *comm = nullptr;
    zccl::UniqueIdBytes id;
    std::memcpy(id.bytes, commId.internal, sizeof(id.bytes));
    return zccl::initOverBootstrap(
        [&](double timeout, std::unique_ptr<zccl::Bootstrap>* bootstrap) {
          return zccl::connectBootstrap(id, rank, nranks, timeout, bootstrap);
        },
        config, comm);
  });
}

zcclResult_t zcclCommInitAll(zcclComm_t* comms, int ndev, const zcclConfig* config) {
  return zccl::guarded([&] {
    if (comms == nullptr) return zccl::fail(Status::kInvalidArgument, "comms=NULL");
    if (ndev <= 0) return zccl::fail(Status::kInvalidArgument, "ndev=%d: expected > 0", ndev);
    zcclUniqueId id;
    if (zcclGetUniqueId(&id) != zcclSuccess) return Status::kSystemError;
    std::vector<zcclResult_t> results(static_cast<size_t>(ndev), zcclSuccess);
    std::vector<std::string> errors(static_cast<size_t>(ndev));
    std::vector<std::thread> threads;
    for (int r = 0; r < ndev; ++r) {
      threads.emplace_back([&, r] {
        results[r] = zcclCommInitRank(&comms[r], ndev, id, r, config);
        errors[r] = zccl::lastThreadError();
      });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < ndev; ++r) {
      if (results[r] == zcclSuccess) continue;
      for (int c = 0; c < ndev; ++c) {
        if (comms[c] != nullptr) zcclCommAbort(comms[c]);
        comms[c] = nullptr;
      }
      return zccl::fail(static_cast<Status>(results[r]), "zcclCommInitAll: rank %d: %s", r,
                        errors[r].c_str());
    }
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommInitFromEnv(zcclComm_t* comm, const zcclConfig* config) {
  return zccl::guarded([&] {
    if (comm == nullptr) return zccl::fail(Status::kInvalidArgument, "comm=NULL (output)");
    *comm = nullptr;
    zccl::LaunchEnvironment launch;
    ZCCL_CHECK(zccl::readLaunchEnvironment(&launch));
    return zccl::initOverBootstrap(
        [&](double timeout, std::unique_ptr<zccl::Bootstrap>* bootstrap) {
          zccl::UniqueIdBytes id;
          ZCCL_CHECK(zccl::uniqueIdAt(launch.root, launch.job, launch.rank == 0, &id));
          return zccl::connectBootstrap(id, launch.rank, launch.size, timeout, bootstrap);
        },
        config, comm);
  });
}

zcclResult_t zcclCommInitStore(zcclComm_t* comm, int nranks, int rank, const zcclStore* store,
                               const char* prefix, const zcclConfig* config) {
  return zccl::guarded([&] {
    if (comm == nullptr) return zccl::fail(Status::kInvalidArgument, "comm=NULL (output)");
    *comm = nullptr;
    if (store == nullptr || store->set == nullptr || store->get == nullptr ||
        store->wait == nullptr) {
      return zccl::fail(Status::kInvalidArgument,
                        "store=%p: expected a zcclStore with set, get and wait",
                        static_cast<const void*>(store));
    }
    if (prefix == nullptr) return zccl::fail(Status::kInvalidArgument, "prefix=NULL");
    zccl::CallbackStore keys(*store);
    return zccl::initOverBootstrap(
        [&](double timeout, std::unique_ptr<zccl::Bootstrap>* bootstrap) {
          return zccl::storeBootstrap(&keys, prefix, rank, nranks, timeout, bootstrap);
        },
        config, comm);
  });
}

}  // extern "C"
