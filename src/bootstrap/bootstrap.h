// How ranks that share nothing yet find each other: a rendezvous that lets a transport
// exchange the addresses it needs. Over TCP at a root whose address travels in a unique id
// (NCCL's way), or through a key-value store a framework already has (PyTorch's c10d).
// Every wait is bounded and ends in an error naming who did not arrive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace zccl {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank contributes `bytes` (the same on every rank); all[r * bytes ...] is rank r's.
  virtual Status allGather(const void* mine, size_t bytes, void* all) = 0;
};

// The opaque 128 bytes of zcclUniqueId: the root's address and a random job nonce.
constexpr size_t kUniqueIdBytes = 128;
struct UniqueIdBytes {
  char bytes[kUniqueIdBytes];
};

struct SocketAddress;
// The root's address and the job's nonce in an id; an error when it is not a zccl id.
Status parseUniqueId(const UniqueIdBytes& id, SocketAddress* address, uint64_t* nonce);

// How long the rendezvous waits: ZCCL_BOOTSTRAP_TIMEOUT_S, else `fallback` (the
// communicator's ZCCL_TIMEOUT_S).
Status bootstrapTimeout(double fallback, double* seconds);

// Starts a root in this process (a thread that serves one rendezvous, then ends) on this
// host's interface (ZCCL_SOCKET_IFNAME), and returns the id that names it.
Status createUniqueId(UniqueIdBytes* id);

// The root of a job whose address every rank knows in advance (host:port from the launcher's
// environment) and whose nonce it derives from the job's name: `serve` starts the root here
// (rank 0), listening on every interface at that port.
Status uniqueIdAt(const std::string& hostPort, const std::string& jobName, bool serve,
                  UniqueIdBytes* id);

// Joins the rendezvous named by `id` as `rank` of `nranks`.
Status connectBootstrap(const UniqueIdBytes& id, int rank, int nranks, double timeoutSeconds,
                        std::unique_ptr<Bootstrap>* out);

// A key-value store, as a framework offers one: set, get of a key that exists, and a
// bounded wait for keys.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual Status set(const std::string& key, const std::string& value) = 0;
  virtual Status get(const std::string& key, std::string* value) = 0;
  virtual Status wait(const std::vector<std::string>& keys, double timeoutSeconds) = 0;
};

// A rendezvous over `store` under keys starting with `prefix`.
Status storeBootstrap(KeyValueStore* store, const std::string& prefix, int rank, int nranks,
                      double timeoutSeconds, std::unique_ptr<Bootstrap>* out);

}  // namespace zccl
