// A communicator's own thread and the jobs it runs: calls that do not wait for their work
// (device calls, as NCCL's calls return once their work is queued on the stream) hand it their
// jobs and return. Jobs run one at a time in submission order (the order every rank calls in),
// so the communicator's transports belong to this thread while any job is pending; calls that
// use them on the caller's thread drain the queue first.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace zccl {

class WorkQueue {
 public:
  struct Job {
    std::function<Status()> run;
    // Runs after `run`, or instead of it when the queue failed or stopped before it: opens
    // what the job's callers wait on (its gate).
    std::function<void()> settle;
  };

  WorkQueue() = default;
  ~WorkQueue();  // stop()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `job` after the ones before it. Once a job has failed, the queue takes no more:
  // the job is settled at once and its failure returned.
  Status submit(Job job);
  // Waits until every job submitted has finished; the first failure, else kSuccess.
  Status drain();
  // The first failure (kSuccess while none), without waiting.
  Status failure() const;
  // Ends the queue: the running job finishes (its waits end when the communicator's
  // transports are asked to abort), the others are settled without running.
  void stop();

 private:
  void serve();
  // The failure as the calling thread's error.
  Status reportFailure() const;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  bool running_ = false;  // a job is out of jobs_ and running
  bool stopping_ = false;
  Status failed_ = Status::kSuccess;
  std::string failure_;
  std::thread thread_;  // started by the first submit
};

}  // namespace zccl
