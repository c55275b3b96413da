// The transport interface's shared parts (transport.h), and how waits poll.
#include "transport/transport.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

namespace zccl {
namespace {

std::atomic<bool> ranksOutnumberCpus{false};

}  // namespace

Status Transport::receiveFromAny(void*, size_t, int, int*) {
  return fail(Status::kInvalidUsage,
              "a receive from any source needs a host transport (MPI or UCX); this communicator's "
              "engine matches messages by sender only");
}

Status Transport::checkUsable() const {
  if (abortRequested()) {
    return fail(Status::kRemoteError, "rank %d: the communicator was aborted", rank());
  }
  if (broken_) {
    return fail(Status::kRemoteError,
                "rank %d: an earlier call on this communicator failed and its peers may be "
                "gone; abort it (zcclCommAbort)",
                rank());
  }
  return Status::kSuccess;
}

Status Transport::timedOut(double timeoutSeconds, const std::string& pending) const {
  return fail(Status::kTimeout, "rank %d waited %.1f s (ZCCL_TIMEOUT_S) without completion of: %s",
              peerRank(rank()), timeoutSeconds, pending.c_str());
}

Status exchangeMessages(Transport& t, const std::vector<PeerMessage>& batch, int tag) {
  for (const PeerMessage& m : batch) {
    Ticket ticket;
    if (m.isSend) {
      ZCCL_CHECK(t.postSend(m.buffer, m.bytes, m.peer, tag, &ticket));
    } else {
      ZCCL_CHECK(t.postRecv(m.buffer, m.bytes, m.peer, tag, &ticket));
    }
  }
  return t.waitAll();
}

void noteRanksOnThisMachine(int ranks) {
  // Online CPUs, not this process's affinity mask: a launcher that binds each rank to a core of
  // its own leaves every rank a mask of one CPU without any core being shared.
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 0 && ranks > cpus) ranksOutnumberCpus.store(true, std::memory_order_relaxed);
}

void pauseBetweenPolls(unsigned poll, const Transport* engine) {
  constexpr unsigned kYieldingPolls = 256;
  if (!ranksOutnumberCpus.load(std::memory_order_relaxed) || poll < kYieldingPolls) {
    sched_yield();
    return;
  }
  // Bounded: an event the engine does not signal costs at most a millisecond, and the wait's
  // checks for an abort and its timeout keep running.
  constexpr double kLongestSleepSeconds = 1e-3;
  const Transport::SleepOutcome slept = engine != nullptr
                                            ? engine->sleepUntilActivity(kLongestSleepSeconds)
                                            : Transport::SleepOutcome::kNotSupported;
  // An engine that keeps finding work would otherwise hold the core against its co-tenants
  // (without this yield a third of 4-rank all-reduces on 2 cores ran 2.5x slower).
  if (slept == Transport::SleepOutcome::kFoundWork) sched_yield();
  if (slept != Transport::SleepOutcome::kNotSupported) return;
  const timespec pause{0, 20000};
  nanosleep(&pause, nullptr);
}

}  // namespace zccl
