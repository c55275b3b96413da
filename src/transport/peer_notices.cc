// A communicator's notices of rejected collectives (peer_notices.h).
#include "transport/peer_notices.h"

#include <algorithm>
#include <cstring>

#include "transport/transport.h"

namespace zccl {

void PeerNotices::enter(uint64_t call) {
  std::lock_guard<std::mutex> guard(mutex_);
  current_ = call;
  entered_ = true;
  later_.erase(std::remove_if(later_.begin(), later_.end(),
                              [call](const CallNotice& n) { return n.call < call; }),
               later_.end());
}

void PeerNotices::leave() {
  std::lock_guard<std::mutex> guard(mutex_);
  entered_ = false;
}

Status PeerNotices::check() {
  std::unique_lock<std::mutex> guard(mutex_, std::try_to_lock);
  if (!guard.owns_lock() || !entered_) return Status::kSuccess;
  CallNotice notice;
  while (source_.takeNotice(&notice)) {
    if (notice.call >= current_) later_.push_back(notice);
  }
  for (const CallNotice& n : later_) {
    if (n.call != current_) continue;
    return fail(Status::kInvalidUsage, "rank %d rejected its own arguments to this call: %.*s",
                source_.peerRank(n.rank), static_cast<int>(sizeof(n.reason)), n.reason);
  }
  return Status::kSuccess;
}

void PeerNotices::tellPeers(uint64_t call, const std::string& reason) {
  CallNotice notice;
  notice.call = call;
  notice.rank = source_.rank();
  std::strncpy(notice.reason, reason.c_str(), sizeof(notice.reason) - 1);
  std::lock_guard<std::mutex> guard(mutex_);
  source_.sendNotice(notice);
}

}  // namespace zccl
