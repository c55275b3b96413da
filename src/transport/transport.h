// A backend that moves bytes between the ranks of a group: non-blocking point-to-point
// with tags, sub-groups, and the engine's own collectives. It counts every byte it sends
// per destination rank; it knows nothing of nodes or links (core folds peers into links).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "common/types.h"

namespace zccl {

// Identifies one posted send or receive until the next waitAll().
using Ticket = size_t;

struct PeerTraffic {
  uint64_t bytes = 0;
  uint64_t messages = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // The buffer must stay valid and untouched until the ticket is waited for. Zero bytes
  // post nothing: both sides of every zccl message know its size.
  virtual Status postSend(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) = 0;
  virtual Status postRecv(void* data, size_t bytes, int peer, int tag, Ticket* ticket) = 0;
  // Waits for one ticket, or for everything posted; both give up after the timeout.
  virtual Status wait(Ticket ticket) = 0;
  virtual Status waitAll() = 0;

  // Collective: ranks with the same color >= 0 form a new group ordered by (key, rank);
  // color < 0 gives *out = nullptr.
  virtual Status split(int color, int key, std::unique_ptr<Transport>* out) = 0;
  // Control-plane exchange used while setting up (not counted as traffic).
  virtual Status allGatherControl(const void* mine, size_t bytes, void* all) = 0;

  // The engine's own collectives (the "native" algorithm). kAvg is not accepted here:
  // callers sum and divide. In-place forms are not accepted either.
  virtual Status nativeAllGather(const void* send, void* recv, size_t count, DataType type) = 0;
  virtual Status nativeReduceScatter(const void* send, void* recv, size_t recvCount, DataType type,
                                     RedOp op) = 0;
  virtual Status nativeAllReduce(const void* send, void* recv, size_t count, DataType type,
                                 RedOp op) = 0;
  virtual Status nativeBroadcast(void* data, size_t count, DataType type, int root) = 0;
  virtual Status nativeAllToAll(const void* send, void* recv, size_t count, DataType type) = 0;

  // Drops every pending operation without waiting for peers (abort, or after a timeout).
  virtual void abandon() = 0;

  const std::vector<PeerTraffic>& traffic() const { return traffic_; }
  void resetTraffic() { traffic_.assign(traffic_.size(), PeerTraffic{}); }

 protected:
  void countSend(int peer, size_t bytes, size_t messages) {
    traffic_[peer].bytes += bytes;
    traffic_[peer].messages += messages;
  }
  std::vector<PeerTraffic> traffic_;
};

struct TransportOptions {
  double timeoutSeconds = 1800;  // 0 waits forever
};

}  // namespace zccl
