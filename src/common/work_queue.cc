// The communicator's own thread (work_queue.h).
#include "common/work_queue.h"

namespace zccl {

WorkQueue::~WorkQueue() { stop(); }

Status WorkQueue::submit(Job job) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_ != Status::kSuccess || stopping_) {
    const Status failed = failed_;
    const std::string failure = failure_;
    lock.unlock();
    job.settle();
    if (failed == Status::kSuccess) {
      return fail(Status::kInvalidUsage, "the communicator's queued work was stopped (abort)");
    }
    restoreThreadError(failure);
    return failed;
  }
  jobs_.push_back(std::move(job));
  if (!thread_.joinable()) thread_ = std::thread([this] { serve(); });
  changed_.notify_all();
  return Status::kSuccess;
}

Status WorkQueue::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return jobs_.empty() && !running_; });
  return reportFailure();
}

Status WorkQueue::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reportFailure();
}

void WorkQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

// The caller holds mutex_.
Status WorkQueue::reportFailure() const {
  if (failed_ != Status::kSuccess) restoreThreadError(failure_);
  return failed_;
}

void WorkQueue::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, nothing left
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    const bool skip = stopping_ || failed_ != Status::kSuccess;
    running_ = true;
    lock.unlock();
    const Status status = skip ? Status::kSuccess : job.run();
    lock.lock();
    // Before the job's gate opens: what waits for the gate sees the failure.
    if (status != Status::kSuccess && failed_ == Status::kSuccess) {
      failed_ = status;
      failure_ = lastThreadError();
    }
    lock.unlock();
    job.settle();
    lock.lock();
    running_ = false;
    changed_.notify_all();
  }
}

}  // namespace zccl
