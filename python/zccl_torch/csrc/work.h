// torch's Work objects over zccl's queued calls: an operation starts its zccl calls with
// requests and returns a work at once; a thread of the backend's own completes the works in
// the order they started (waiting for their requests, copying results out), marking each
// done and setting its future. wait() blocks until then and raises the operation's error.
#pragma once

#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "zccl/zccl.h"

namespace zccl_torch {

// A failed zccl call's message: "zccl backend: OPERATION failed (RESULT): zccl's message". A
// timeout's starts "Timed out: " and says " Timed out " again, so that it reads as torch's own
// backends' do and what recognises theirs (torch's tests match " (Timed out|closed|timeout) ")
// recognises zccl's.
std::string failureMessage(zcclResult_t result, const std::string& operation,
                           const char* zcclMessage);

// What an operation started: the requests of its queued calls (a call without one had
// finished when it returned), and what runs once they all completed (copying results out;
// may be empty). `keep` holds the tensors the calls read or write until then.
struct Launched {
  std::vector<zcclRequest_t> requests;
  std::function<void()> finish;
  std::vector<at::Tensor> keep;

  // The options of one more queued call: its request goes into `requests`.
  zcclCollOptions queued();
};

class ZcclWork : public c10d::Work {
 public:
  ZcclWork(c10d::OpType type, std::vector<at::Tensor> outputs);
  // Marks the work done, its future set (or failed).
  void complete(std::exception_ptr error);
  // CUDA tensors: where `stream` stands once the operation's work was queued on it.
  void recordEnd(const c10::Stream& stream);
  // As torch's NCCL backend: returns once the work is done, the current stream ordered after
  // the operation's stream (its copies out included).
  bool wait(std::chrono::milliseconds timeout) override;
  // The current stream waits for the operation's stream (nothing for CPU tensors).
  void synchronize() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  // A receive from any source: its sender, once the receive has written it there.
  void reportSourceFrom(std::shared_ptr<const int> source) { source_ = std::move(source); }
  int sourceRank() const override;

 private:
  std::vector<at::Tensor> outputs_;
  std::shared_ptr<const int> source_;
  std::optional<c10::Stream> stream_;
  std::optional<c10::Event> end_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// The backend's thread that completes its works in the order they started.
class Completer {
 public:
  Completer();
  ~Completer();  // completes what is left, then ends
  Completer(const Completer&) = delete;
  Completer& operator=(const Completer&) = delete;

  // `work` completes once `launched`'s requests did; `operation` names it in errors. `after`
  // (may be empty) are works it stands for as well (a coalesced block's): it fails where one
  // of them failed.
  void add(c10::intrusive_ptr<ZcclWork> work, Launched launched, std::string operation,
           std::vector<c10::intrusive_ptr<ZcclWork>> after = {});
  // Returns once every work added so far is complete.
  void drain();

 private:
  struct Entry {
    c10::intrusive_ptr<ZcclWork> work;
    Launched launched;
    std::string operation;
    std::vector<c10::intrusive_ptr<ZcclWork>> after;
  };
  void serve();
  static std::exception_ptr settle(Entry& entry);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Entry> entries_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace zccl_torch
