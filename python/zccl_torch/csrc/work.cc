// Works over zccl's queued calls, and the thread that completes them (work.h).
#include "work.h"

#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace zccl_torch {

zcclCollOptions Launched::queued() {
  requests.push_back(nullptr);
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.request = &requests.back();
  return options;
}

// On CUDA tensors the future is the device's, as NCCL's: its callbacks and waiters are ordered
// after the operation on its stream (complete() marks it with that stream current). Made here,
// since a coalescing block's works are handed out before their calls start.
ZcclWork::ZcclWork(c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(-1, type), outputs_(std::move(outputs)) {
  std::vector<c10::Device> devices;
  if (!outputs_.empty() && outputs_.front().is_cuda()) devices.push_back(outputs_.front().device());
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                     std::move(devices));
}

void ZcclWork::recordEnd(const c10::Stream& stream) {
  stream_ = stream;
  end_.emplace(stream.device_type());
  end_->record(stream);
}

bool ZcclWork::wait(std::chrono::milliseconds timeout) {
  const bool done = c10d::Work::wait(timeout);
  if (done) synchronize();
  return done;
}

void ZcclWork::synchronize() {
  if (!end_) return;
  end_->block(c10::impl::getDeviceGuardImpl(end_->device_type())->getStream(end_->device()));
}

int ZcclWork::sourceRank() const {
  if (source_ == nullptr || *source_ < 0) return c10d::Work::sourceRank();  // raises
  return *source_;
}

void ZcclWork::complete(std::exception_ptr error) {
  if (error) {
    future_->setError(error);
  } else if (stream_) {
    // A device future marks where the current stream stands: the operation's.
    const c10::StreamGuard onOperationsStream(*stream_);
    future_->markCompleted(c10::IValue(outputs_));
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
  finish(error);
}

Completer::Completer() : thread_([this] { serve(); }) {}

Completer::~Completer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  thread_.join();
}

void Completer::add(c10::intrusive_ptr<ZcclWork> work, Launched launched, std::string operation,
                    std::vector<c10::intrusive_ptr<ZcclWork>> after) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(
      {std::move(work), std::move(launched), std::move(operation), std::move(after)});
  changed_.notify_all();
}

void Completer::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return entries_.empty() && !busy_; });
}

std::string failureMessage(zcclResult_t result, const std::string& operation,
                           const char* zcclMessage) {
  if (result == zcclTimeout) {
    return "Timed out: zccl backend: " + operation +
           " failed: Timed out waiting for its peers: " + zcclMessage;
  }
  return "zccl backend: " + operation + " failed (" + zcclGetErrorString(result) +
         "): " + zcclMessage;
}

namespace {

// A failed call's error.
std::exception_ptr failureOf(const std::string& operation, zcclResult_t result) {
  return std::make_exception_ptr(
      std::runtime_error(failureMessage(result, operation, zcclGetLastError(nullptr))));
}

}  // namespace

// Waits for every request (each must be completed, failed or not, to be freed), then runs the
// finish where all succeeded.
std::exception_ptr Completer::settle(Entry& entry) {
  std::exception_ptr error;
  for (zcclRequest_t request : entry.launched.requests) {
    const zcclResult_t result = zcclWait(request);
    if (result != zcclSuccess && !error) error = failureOf(entry.operation, result);
  }
  for (const auto& part : entry.after) {
    if (!error && part->exception()) error = part->exception();
  }
  if (!error && entry.launched.finish) {
    try {
      entry.launched.finish();
    } catch (...) {
      error = std::current_exception();
    }
  }
  return error;
}

void Completer::serve() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !entries_.empty(); });
    if (entries_.empty()) return;
    Entry entry = std::move(entries_.front());
    entries_.pop_front();
    busy_ = true;
    lock.unlock();
    const std::exception_ptr error = settle(entry);
    entry.work->complete(error);
    entry = Entry{};  // the kept tensors go before the work counts as complete
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

}  // namespace zccl_torch
