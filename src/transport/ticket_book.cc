// The tickets' bookkeeping (ticket_book.h).
#include "transport/ticket_book.h"

namespace zccl {

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
    case Kind::kReceive:
      break;
  }
  return "receive from rank " + std::to_string(t.peerRank(entry.peer));
}

}  // namespace zccl
