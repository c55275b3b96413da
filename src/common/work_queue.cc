// The communicator's own thread (work_queue.h).
#include "common/work_queue.h"

namespace zccl {

WorkQueue::~WorkQueue() { stop(); }

// The caller holds mutex_.
JobOutcome WorkQueue::refusal() const {
  if (failed_ != Status::kSuccess) return {failed_, failure_};
  return {Status::kRemoteError, "the communicator was aborted before this call's work ran"};
}

Status WorkQueue::submit(Job job) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_ != Status::kSuccess || stopping_) {
    const JobOutcome refused = refusal();
    lock.unlock();
    job.settle(refused);
    restoreThreadError(refused.error);
    return refused.status;
  }
  jobs_.push_back(std::move(job));
  if (!thread_.joinable()) thread_ = std::thread([this] { serve(); });
  changed_.notify_all();
  return Status::kSuccess;
}

Status WorkQueue::runHere(Job job) {
  const Status before = drain();
  const JobOutcome outcome =
      before != Status::kSuccess ? JobOutcome{before, lastThreadError()} : [&] {
        const Status status = job.run();
        return JobOutcome{status, status == Status::kSuccess ? "" : lastThreadError()};
      }();
  if (outcome.status != Status::kSuccess) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_ == Status::kSuccess) {
      failed_ = outcome.status;
      failure_ = outcome.error;
    }
  }
  job.settle(outcome);
  restoreThreadError(outcome.error);
  return outcome.status;
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

bool WorkQueue::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.empty() && !running_;
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
    JobOutcome outcome = skip ? refusal() : JobOutcome{};
    running_ = true;
    lock.unlock();
    if (!skip) {
      outcome.status = job.run();
      if (outcome.status != Status::kSuccess) outcome.error = lastThreadError();
    }
    lock.lock();
    // Before the job settles: what waits for it sees the failure.
    if (!skip && outcome.status != Status::kSuccess && failed_ == Status::kSuccess) {
      failed_ = outcome.status;
      failure_ = outcome.error;
    }
    lock.unlock();
    job.settle(outcome);
    lock.lock();
    running_ = false;
    changed_.notify_all();
  }
}

}  // namespace zccl
