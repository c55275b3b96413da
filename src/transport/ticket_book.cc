// The tickets' bookkeeping (ticket_book.h).
#include "transport/ticket_book.h"

#include "common/log.h"

namespace zccl {

Status TicketBook::open(const Transport& t, int peer, Kind kind, size_t requests, Ticket* ticket) {
  *ticket = entries_.size();
  ZCCL_CHECK(t.checkUsable());
  const bool anyMember = kind == Kind::kCollective || kind == Kind::kReceiveFromAny;
  if (peer < (anyMember ? -1 : 0) || peer >= t.size()) {
    return fail(Status::kInternalError, "peer=%d outside [0, %d)", peer, t.size());
  }
  entries_.push_back({requests, requests, peer, kind});
  return Status::kSuccess;
}

Status TicketBook::range(Ticket ticket, size_t* first, size_t* last) const {
  if (ticket >= entries_.size()) {
    return fail(Status::kInternalError, "wait on unknown ticket %zu", ticket);
  }
  *first = entries_[ticket].first;
  *last = entries_[ticket].last;
  return Status::kSuccess;
}

const TicketBook::Entry* TicketBook::entryOf(size_t request) const {
  for (const Entry& entry : entries_) {
    if (request >= entry.first && request < entry.last) return &entry;
  }
  return nullptr;
}

std::string TicketBook::describe(const Transport& t, const Entry& entry) {
  switch (entry.kind) {
    case Kind::kCollective:
      return "all (native collective)";
    case Kind::kSend:
      return "send to rank " + std::to_string(t.peerRank(entry.peer));
    case Kind::kReceiveFromAny:
      return "receive from any rank";
    case Kind::kReceive:
      break;
  }
  return "receive from rank " + std::to_string(t.peerRank(entry.peer));
}

bool settleAbandoned(const Transport& t, const char* engine, size_t left, const char* afterwards) {
  if (left == 0) return true;
  ZCCL_LOG(kWarn,
           "rank %d: %zu pending %s operations could not be cancelled; zccl keeps their "
           "memory, and %s",
           t.rank(), left, engine, afterwards);
  return false;
}

}  // namespace zccl
