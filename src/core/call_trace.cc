// Records of collectives (call_trace.h).
#include "core/call_trace.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <mutex>
#include <set>

#include "common/env.h"
#include "common/log.h"
#include "core/comm.h"

namespace zccl {
namespace {

long threadId() { return static_cast<long>(syscall(SYS_gettid)); }

std::string jsonString(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

// The process's ZCCL_TRACE file: a JSON array of events, each written whole and flushed as it
// comes (a process that dies leaves every event before it; the viewers read an array that
// lacks its closing bracket), closed at exit. Never destroyed: threads may still write while
// the process exits, and find it closed.
class TraceFile {
 public:
  // nullptr when ZCCL_TRACE is unset or its file cannot be opened (said once).
  static TraceFile* get() {
    static TraceFile* const file = open();
    return file;
  }

  void write(const std::string& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (out_ == nullptr) return;
    std::fprintf(out_, "%s%s", first_ ? "[\n" : ",\n", event.c_str());
    std::fflush(out_);
    first_ = false;
  }

  // The process's and the thread's names, the first time each is seen.
  void nameProcess(const std::string& communicator, int rank) {
    std::call_once(processNamed_, [&] {
      write(
          metadata("process_name", 0, "name", jsonString(communicator + " (" + hostName() + ")")));
      write(metadata("process_sort_index", 0, "sort_index", std::to_string(rank)));
    });
  }
  void nameThread(long thread, const std::string& name) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!namedThreads_.insert(thread).second) return;
    }
    write(metadata("thread_name", thread, "name", jsonString(name)));
  }

 private:
  explicit TraceFile(FILE* out) : out_(out) {}

  static TraceFile* open() {
    const std::optional<std::string> prefix = envString("ZCCL_TRACE");
    if (!prefix) return nullptr;
    const std::string path = *prefix + "." + hostName() + "." + std::to_string(getpid()) + ".json";
    FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
      ZCCL_LOG(kWarn, "ZCCL_TRACE=%s: cannot write %s; no trace", prefix->c_str(), path.c_str());
      return nullptr;
    }
    auto* file = new TraceFile(out);
    std::atexit([] { get()->close(); });
    return file;
  }

  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(out_, "%s]\n", first_ ? "[" : "\n");
    std::fclose(out_);
    out_ = nullptr;
  }

  static std::string metadata(const char* what, long thread, const char* key,
                              const std::string& value) {
    return "{\"name\":\"" + std::string(what) +
           "\",\"ph\":\"M\",\"pid\":" + std::to_string(getpid()) +
           ",\"tid\":" + std::to_string(thread) + ",\"args\":{\"" + key + "\":" + value + "}}";
  }

  std::mutex mutex_;
  FILE* out_;
  bool first_ = true;
  std::once_flag processNamed_;
  std::set<long> namedThreads_;
};

// The head of an event: everything but its arguments and closing brace.
std::string event(const char* phase, const std::string& name, const char* category, double at,
                  long thread) {
  char head[160];
  std::snprintf(head, sizeof(head),
                "\"cat\":\"%s\",\"ph\":\"%s\",\"ts\":%.3f,\"pid\":%d,\"tid\":%ld", category, phase,
                at, static_cast<int>(getpid()), thread);
  return "{\"name\":" + jsonString(name) + "," + head;
}

std::string slice(const std::string& name, const char* category, double from, double to,
                  long thread, const std::string& args) {
  char duration[48];
  std::snprintf(duration, sizeof(duration), ",\"dur\":%.3f", to - from);
  return event("X", name, category, from, thread) + duration + ",\"args\":{" + args + "}}";
}

// The arrow from a call's handover to its run: its start ("s") and its end ("f"), bound to
// the slice that begins at its time.
std::string flow(const char* phase, uint64_t id, double at, long thread) {
  return event(phase, "queued call", "call", at, thread) + ",\"id\":" + std::to_string(id) +
         (phase[0] == 'f' ? ",\"bp\":\"e\"" : "") + "}";
}

std::atomic<uint64_t> nextId{1};

}  // namespace

bool tracingCalls() { return logEnabled(LogLevel::kTrace) || TraceFile::get() != nullptr; }

double traceClockMicros() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

CallTrace::CallTrace(const zcclComm& comm, const char* collective, std::string call, bool onDevice)
    : collective_(collective),
      call_(std::move(call)),
      id_(nextId++),
      communicator_("rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.size())),
      memory_(onDevice ? "device" : "host"),
      callerThread_(threadId()),
      calledAt_(traceClockMicros()) {}

void CallTrace::handedOver() {
  TraceFile* file = TraceFile::get();
  if (file == nullptr) return;
  file->nameThread(callerThread_, "caller");
  file->write(slice(std::string("queue ") + collective_, "call", calledAt_, traceClockMicros(),
                    callerThread_, "\"call\":" + jsonString(call_)));
}

void CallTrace::started(const zcclComm& comm) {
  number_ = comm.collectiveSequence;
  const zcclStats before = comm.statsNow();
  interBefore_ = before.bytesSent[zcclLinkInterNode];
  intraBefore_ = before.bytesSent[zcclLinkIntraNode];
  startedAt_ = traceClockMicros();
}

void CallTrace::ended(const zcclComm& comm, Status status, const Plan& plan) {
  const double endedAt = traceClockMicros();
  const zcclStats after = comm.statsNow();
  const uint64_t inter = after.bytesSent[zcclLinkInterNode] - interBefore_;
  const uint64_t intra = after.bytesSent[zcclLinkIntraNode] - intraBefore_;
  const long thread = threadId();
  const bool queued = thread != callerThread_;
  const char* path = plan.row != nullptr ? algorithmName(plan.algorithm) : "none";
  const char* wire = wireFormatName(plan.wire);
  const double queuedMicros = queued ? startedAt_ - calledAt_ : 0;
  const bool failed = status != Status::kSuccess;
  const std::string outcome = failed ? lastThreadError() : "success";
  char waited[96] = "";
  if (queued) {
    std::snprintf(waited, sizeof(waited), " on the communicator's thread, %.3f ms after the call",
                  queuedMicros / 1000);
  }
  ZCCL_LOG(kTrace,
           "%s on %s memory, call %" PRIu64 " of %s: %s path, wire %s, %.3f ms%s, sent %" PRIu64
           " B inter-node, %" PRIu64 " B intra-node%s%s",
           call_.c_str(), memory_, number_, communicator_.c_str(), path, wire,
           (endedAt - startedAt_) / 1000, waited, inter, intra, failed ? "; failed: " : "",
           failed ? outcome.c_str() : "");
  TraceFile* file = TraceFile::get();
  if (file == nullptr) return;
  file->nameProcess(communicator_, comm.rank());
  file->nameThread(thread, queued ? "communicator's thread" : "caller");
  if (queued) {
    file->write(flow("s", id_, calledAt_, callerThread_));
    file->write(flow("f", id_, startedAt_, thread));
  }
  char numbers[256];
  std::snprintf(numbers, sizeof(numbers),
                "\"number\":%" PRIu64
                ",\"path\":\"%s\",\"wire\":\"%s\",\"queued_us\":%.3f,"
                "\"inter_node_bytes\":%" PRIu64 ",\"intra_node_bytes\":%" PRIu64,
                number_, path, wire, queuedMicros, inter, intra);
  file->write(slice(collective_, "collective", startedAt_, endedAt, thread,
                    "\"call\":" + jsonString(call_) + ",\"memory\":\"" + memory_ +
                        "\",\"communicator\":" + jsonString(communicator_) +
                        ",\"id\":" + std::to_string(id_) + "," + numbers +
                        ",\"status\":" + jsonString(outcome)));
}

void traceWait(uint64_t id, const char* collective, double beganMicros) {
  TraceFile* file = TraceFile::get();
  if (file == nullptr) return;
  const long thread = threadId();
  file->nameThread(thread, "caller");
  file->write(slice(std::string("wait ") + collective, "call", beganMicros, traceClockMicros(),
                    thread, "\"id\":" + std::to_string(id)));
}

}  // namespace zccl
