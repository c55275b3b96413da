// A queued call's completion (zcclRequest_t): settled once, by the communicator's thread when
// the call's work ends (or by the queue when it refuses the work), and waited for or tested by
// the caller, who then frees it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "common/work_queue.h"

struct zcclRequest {
  // Its call's record in ZCCL_TRACE (0: none), for the slice of waiting on it.
  uint64_t tracedCall = 0;
  const char* collective = "";

  void complete(const zccl::JobOutcome& outcome) {
    std::lock_guard<std::mutex> lock(mutex_);
    outcome_ = outcome;
    done_ = true;
    changed_.notify_all();
  }
  bool done() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  zccl::JobOutcome wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return done_; });
    return outcome_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  zccl::JobOutcome outcome_;
};
