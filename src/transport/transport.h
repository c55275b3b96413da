// A backend that moves bytes between the ranks of a group: non-blocking point-to-point
// with tags, sub-groups and a control channel; the engine's own collectives where it has
// them (engine_collectives.h). It counts every byte it sends per destination rank; it knows
// nothing of nodes or links (core folds peers into links). Every wait is bounded by the
// timeout and ends early on abort.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/types.h"
#include "transport/peer_notices.h"

namespace zccl {

// Identifies one posted send or receive until the next waitAll().
using Ticket = size_t;

struct PeerTraffic {
  uint64_t bytes = 0;
  uint64_t messages = 0;
};

struct TransportOptions {
  double timeoutSeconds = 1800;  // 0 waits forever
  // UCX: large messages between the processes of one host may be copied by the kernel straight
  // from the other process (CMA). A peer that dies during such a copy makes UCX 1.13 abort the
  // survivors, so it is off unless asked for (ZCCL_UCX_CMA=1); shared memory carries them
  // instead. The process's first communicator over UCX decides.
  bool crossMemoryAttach = false;
};

class EngineCollectives;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Tags run from 0 to maxTag() inclusive.
  virtual int maxTag() const = 0;

  // The buffer must stay valid and untouched until the ticket is waited for. Zero bytes
  // post nothing: both sides of every zccl message know its size.
  virtual Status postSend(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) = 0;
  virtual Status postRecv(void* data, size_t bytes, int peer, int tag, Ticket* ticket) = 0;
  // Receives one message of `bytes` (> 0) on `tag` from whichever member sends first, waiting as
  // wait() does; *source names it. What was posted before is waited for first. Messages from
  // one member still arrive in the order it sent them. Host engines only (MPI, UCX).
  virtual Status receiveFromAny(void* data, size_t bytes, int tag, int* source);
  // Notices (peer_notices.h): sent to every other member on a tag of their own, not waited
  // for and not counted as traffic; takeNotice hands over one that arrived, without waiting.
  // Engines without them (the simulated, staged and NCCL transports) neither send nor take.
  virtual void sendNotice(const CallNotice& /*notice*/) {}
  virtual bool takeNotice(CallNotice* /*notice*/) { return false; }
  // The notices every wait of this transport checks (may be null: none); its owner's.
  void setPeerNotices(PeerNotices* notices) { notices_ = notices; }
  Status checkPeerNotices() const {
    return notices_ != nullptr ? notices_->check() : Status::kSuccess;
  }

  // Moves what is posted along without waiting (an engine that moves bytes only while polled
  // stalls while its caller does other work). No-op where the engine progresses on its own.
  virtual void progress() {}
  // Waits for one ticket, or for everything posted; both give up after the timeout (and
  // then abandon what is pending) or when abort was requested.
  virtual Status wait(Ticket ticket) = 0;
  virtual Status waitAll() = 0;

  // Collective: ranks with the same color >= 0 form a new group ordered by (key, rank);
  // color < 0 gives *out = nullptr.
  virtual Status split(int color, int key, std::unique_ptr<Transport>* out) = 0;
  // Control-plane exchange (not counted as traffic), bounded like every wait.
  virtual Status allGatherControl(const void* mine, size_t bytes, void* all) = 0;

  // Whether another thread than the program's may use it, one thread at a time, while the
  // program makes its own calls to the engine (MPI: only under MPI_THREAD_MULTIPLE).
  virtual bool allowsOtherThreads() const { return true; }

  // Where the engine can wake a waiting thread once something arrives or can leave (UCX's
  // event file descriptor): progresses it and, with nothing to do, sleeps until its next event,
  // at most `seconds`. Engines that cannot answer kNotSupported, and waits pause for a fixed
  // time instead (pauseBetweenPolls).
  enum class SleepOutcome { kNotSupported, kFoundWork, kWoken, kBoundReached };
  virtual SleepOutcome sleepUntilActivity(double /*seconds*/) const {
    return SleepOutcome::kNotSupported;
  }

  // The engine's own collectives (the "native" algorithm), or nullptr where it has none.
  virtual EngineCollectives* engineCollectives() { return nullptr; }

  // Cancels what is pending without waiting for peers (abort, timeout, a failed call) and
  // gives the engine a bounded grace to confirm it. True when nothing pending is left; else
  // the memory of what is left may still be written or read, and must be kept alive for as
  // long as the transport lives. Once abandoned, a transport refuses new work.
  virtual bool abandon() = 0;

  // From any thread: a wait in progress (or the next) ends with kRemoteError.
  void requestAbort() { abortRequested_.store(true); }
  bool abortRequested() const { return abortRequested_.load(); }

  const std::vector<PeerTraffic>& traffic() const { return traffic_; }
  void resetTraffic() { traffic_.assign(traffic_.size(), PeerTraffic{}); }

  // How errors name member i: its rank in the communicator this transport serves (a node or
  // cross-node level's members are ranks of the whole communicator), by default i itself.
  void setPeerRanks(std::vector<int> ranks) { peerRanks_ = std::move(ranks); }
  int peerRank(int member) const {
    return member >= 0 && static_cast<size_t>(member) < peerRanks_.size()
               ? peerRanks_[static_cast<size_t>(member)]
               : member;
  }

  // Refuses new work once the communicator was aborted or an earlier call failed.
  Status checkUsable() const;

 protected:
  void markBroken() { broken_ = true; }
  // A wait that gave up after the timeout, naming what was still pending.
  Status timedOut(double timeoutSeconds, const std::string& pending) const;

  void countSend(int peer, size_t bytes, size_t messages) {
    traffic_[peer].bytes += bytes;
    traffic_[peer].messages += messages;
  }
  std::vector<PeerTraffic> traffic_;

 private:
  bool broken_ = false;
  std::vector<int> peerRanks_;
  PeerNotices* notices_ = nullptr;
  std::atomic<bool> abortRequested_{false};
};

// One point-to-point message of a batch (a group's sends and receives).
struct PeerMessage {
  bool isSend;
  void* buffer;
  size_t bytes;
  int peer;
};

// Posts every message of `batch` with `tag`, then waits for all of them.
Status exchangeMessages(Transport& t, const std::vector<PeerMessage>& batch, int tag);

// A communicator's count of its ranks on this machine's kernel. Once any count exceeds the
// machine's online CPUs, waits leave their cores to the ranks that compute (below).
void noteRanksOnThisMachine(int ranks);

// Between two polls of a wait. While ranks do not outnumber CPUs: sched_yield only, so polling
// stays tight, which a link-bound transfer needs (over TCP the engine pushes bytes only when
// polled). When they do: sched_yield for the first polls, so that a message that is nearly
// there is taken at once, then sleeps, so that a rank waiting on a slow link leaves its core
// to the ranks that compute instead of taking turns with them (docs/measurements.md): until
// `engine` reports activity where it can (sleepUntilActivity), short fixed pauses otherwise.
void pauseBetweenPolls(unsigned poll, const Transport* engine = nullptr);

}  // namespace zccl
