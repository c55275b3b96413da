// A communicator's notices of rejected collectives (peer_notices.h).
#include "transport/peer_notices.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "transport/transport.h"

namespace zccl {
namespace {

constexpr std::chrono::milliseconds kExplainGrace{200};

}  // namespace

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

Status PeerNotices::explain(Status failure) {
  if (failure != Status::kRemoteError) return failure;
  const auto start = std::chrono::steady_clock::now();
  do {
    source_.progress();
    const Status rejected = check();
    if (rejected != Status::kSuccess) return rejected;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  } while (std::chrono::steady_clock::now() - start < kExplainGrace);
  return failure;
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
