// What each collective did, for the person asking where a step's time went: ZCCL_DEBUG=TRACE
// logs a line per call when it ends (its path, time queued and running, bytes sent by link
// class); ZCCL_TRACE=PREFIX writes PREFIX.<host>.<pid>.json in Chrome's
// trace event format (Perfetto, chrome://tracing): a slice per collective on the thread that
// ran it, slices for handing work to the communicator's thread and for waiting on it on the
// caller's thread, and an arrow from each handover to its run. scripts/trace-merge.py joins
// the ranks' files into one timeline.
#pragma once

#include <cstdint>
#include <string>

#include "collectives/paths.h"
#include "common/status.h"

struct zcclComm;

namespace zccl {

// Whether ZCCL_DEBUG=TRACE or ZCCL_TRACE asks for the records (ZCCL_TRACE read once).
bool tracingCalls();

// Microseconds of the clock the records use (the system's, which hosts keep in step).
double traceClockMicros();

// One collective's record, made on the caller's thread when the call passed its checks.
class CallTrace {
 public:
  CallTrace(const zcclComm& comm, const char* collective, std::string call, bool onDevice);

  // The call has handed its work to the communicator's thread.
  void handedOver();
  // On the thread that runs the work, just before it and just after it; `plan` is the path it
  // took (its row null where it took none).
  void started(const zcclComm& comm);
  void ended(const zcclComm& comm, Status status, const Plan& plan);

  // What a request keeps for the trace of waiting on it (0: a record nobody writes).
  uint64_t id() const { return id_; }
  const char* collective() const { return collective_; }

 private:
  const char* collective_;
  std::string call_;
  uint64_t id_;
  std::string communicator_;  // "rank 1 of 4"
  const char* memory_;        // "host" or "device"
  long callerThread_;
  double calledAt_ = 0, startedAt_ = 0;
  uint64_t number_ = 0;  // the communicator's collective number
  uint64_t interBefore_ = 0, intraBefore_ = 0;
};

// A wait on the caller's thread, from `beganMicros` to now, for the call whose record is `id`
// (a traced one).
void traceWait(uint64_t id, const char* collective, double beganMicros);

}  // namespace zccl
