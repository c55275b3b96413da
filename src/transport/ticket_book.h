// The bookkeeping every engine transport shares: what was posted since the last waitAll(), as
// tickets over the engine's requests (a message cut into parts holds several, zero bytes
// none), each with its peer and kind; the bounded wait that polls them; and the timeout's
// message naming what is still pending.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace zccl {

class TicketBook {
 public:
  enum class Kind : int { kSend, kReceive, kReceiveFromAny, kCollective };
  struct Entry {
    size_t first;  // the engine's requests [first, last)
    size_t last;
    int peer;  // -1: every member (a collective), or any (a receive from any)
    Kind kind;
  };

  // A new ticket on `t` whose requests start at the engine's `requests` (its count now), once
  // `t` takes work and `peer` is one of its members (-1 for a collective or a receive from any).
  Status open(const Transport& t, int peer, Kind kind, size_t requests, Ticket* ticket);
  // `ticket`'s requests end at the engine's count now.
  void close(Ticket ticket, size_t requests) { entries_[ticket].last = requests; }
  // `ticket`'s requests; an internal error for a ticket this book did not issue.
  Status range(Ticket ticket, size_t* first, size_t* last) const;
  const std::vector<Entry>& entries() const { return entries_; }
  // The entry that holds request `request`, or nullptr.
  const Entry* entryOf(size_t request) const;
  bool empty() const { return entries_.empty(); }
  void clear() { entries_.clear(); }

  // "send to rank 1, receive from rank 2": each ticket with a request in [first, last) for
  // which pending(i) holds, once, its peer named by t.peerRank.
  template <typename Pending>
  std::string pendingWork(const Transport& t, size_t first, size_t last, Pending&& pending) const {
    std::string work;
    for (const Entry& entry : entries_) {
      if (entry.last <= first || entry.first >= last) continue;
      bool open = false;
      for (size_t i = entry.first; i < entry.last; ++i) open |= pending(i);
      if (!open) continue;
      const std::string what = describe(t, entry);
      if (work.find(what) != std::string::npos) continue;  // a message in several parts
      work += (work.empty() ? "" : ", ") + what;
    }
    return work;
  }

 private:
  static std::string describe(const Transport& t, const Entry& entry);

  std::vector<Entry> entries_;
};

// After abandon() gave up on `left` requests that the engine did not confirm cancelled: says
// so (their memory stays zccl's), and what becomes of the failed call's buffers (`afterwards`),
// and returns whether none was left.
bool settleAbandoned(const Transport& t, const char* engine, size_t left, const char* afterwards);

// The wait every engine transport runs: `poll()` progresses the engine and returns kSuccess
// with *done once everything waited for has completed, or a failure; an abort request ends the
// wait (after `abandon()`), and so does the timeout (`timedOut()` then says what is pending).
template <typename Poll, typename Abandon, typename TimedOut>
Status pollUntilDone(const Transport& t, double timeoutSeconds, Poll&& poll, Abandon&& abandon,
                     TimedOut&& timedOut) {
  const auto start = std::chrono::steady_clock::now();
  for (unsigned spin = 0;; ++spin) {
    bool done = false;
    ZCCL_CHECK(poll(&done));
    if (done) return Status::kSuccess;
    if (t.abortRequested()) {
      abandon();
      return fail(Status::kRemoteError, "rank %d: the communicator was aborted while waiting",
                  t.rank());
    }
    pauseBetweenPolls(spin, &t);
    // Every 64 polls: a yield on a loaded machine can take a whole time slice, so the clock
    // is read often enough for the timeout to hold within a fraction of a second.
    if ((spin & 63u) != 0) continue;
    const Status rejected = t.checkPeerNotices();
    if (rejected != Status::kSuccess) {
      abandon();
      return rejected;
    }
    if (timeoutSeconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
            timeoutSeconds) {
      return timedOut();
    }
  }
}

}  // namespace zccl
