// A communicator's own thread and the jobs it runs: calls that return before their work ends
// (device calls, as NCCL's calls return once their work is queued on the stream; host calls
// with a request, or on a non-blocking communicator) hand it their jobs and return. Jobs run
// one at a time in submission order (the order every rank calls in), so the communicator's
// transports belong to this thread while any job is pending; calls that use them on the
// caller's thread drain the queue first. The thread polls the transports while the caller
// computes, so a queued transfer advances without the caller's help.
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

// How a job ended: its own result, or, for a job that did not run (the queue had failed or
// was stopped), why not.
struct JobOutcome {
  Status status = Status::kSuccess;
  std::string error;  // the message, when status is a failure
};

class WorkQueue {
 public:
  struct Job {
    std::function<Status()> run;
    // Runs after `run`, or instead of it when the queue failed or stopped before it: completes
    // what the job's callers wait on (a gate, a request).
    std::function<void(const JobOutcome&)> settle;
  };

  WorkQueue() = default;
  ~WorkQueue();  // stop()
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `job` after the ones before it. Once a job has failed, the queue takes no more:
  // the job is settled at once and its failure returned.
  Status submit(Job job);
  // Runs `job` on the calling thread once the jobs before it have finished (for transports
  // that may not be used from another thread), settles it, and returns its result.
  Status runHere(Job job);
  // Waits until every job submitted has finished; the first failure, else kSuccess.
  Status drain();
  // The first failure (kSuccess while none), without waiting.
  Status failure() const;
  // Whether every job submitted has finished.
  bool idle() const;
  // Ends the queue: the running job finishes (its waits end when the communicator's
  // transports are asked to abort), the others are settled without running.
  void stop();

 private:
  void serve();
  // The failure as the calling thread's error.
  Status reportFailure() const;
  // Why a job is not run: the queue's failure, or its stop.
  JobOutcome refusal() const;

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
