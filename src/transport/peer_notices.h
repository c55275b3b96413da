// Notices a rank sends its peers when it rejects its own arguments to a collective: the peers'
// calls to that collective then fail at once naming the rank and why, instead of waiting for
// it until the timeout. Collectives are numbered alike on every rank (the communicator's
// collective sequence); a notice names its number, and fails only the call of that number.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace zccl {

// The fixed-size message on the wire (a transport's notice tag, not counted as traffic).
struct CallNotice {
  uint64_t call = 0;
  int32_t rank = -1;
  char reason[500] = {};
};

class Transport;

// One communicator's notices, read through the transport its peers send them on (`source`)
// and checked by the waits of every transport of the communicator (pollUntilDone).
class PeerNotices {
 public:
  explicit PeerNotices(Transport& source) : source_(source) {}

  // The collective this rank runs now (notices of earlier ones are dropped), and its end:
  // waits outside a collective (splits, sends and receives) are not failed by notices.
  void enter(uint64_t call);
  void leave();
  // kInvalidUsage naming the rank that rejected the current collective, once its notice came.
  Status check();
  // The current collective's failure: a peer that rejected it and then left (aborted) makes
  // the others' messages to it fail as "gone" before its notice is read; the notice, which
  // says why, is looked for a moment and given instead.
  Status explain(Status failure);
  // Tells every peer that this rank rejected collective `call` because of `reason`.
  void tellPeers(uint64_t call, const std::string& reason);

 private:
  Transport& source_;
  std::mutex mutex_;  // the device engine's waits may check from its own thread
  uint64_t current_ = 0;
  bool entered_ = false;
  std::vector<CallNotice> later_;  // notices of collectives this rank has not reached
};

}  // namespace zccl
