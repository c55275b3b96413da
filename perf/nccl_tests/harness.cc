// The common driver of the nccl-tests-style perf binaries (all_gather_perf, ...): nccl-tests'
// flags and output format, zccl's wire format and hierarchy flags, baselines timed side by
// side (-B: the backend's own collective; -U: zccl's algorithms over UCX), buffers in host or
// device memory (-M), result checks against exact values or the analytic error bound of
// quantized paths, and a JSON copy (-J).
#include "nccl_tests/harness.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/values.h"
#include "harness/world.h"
#include "nccl_tests/expected.h"
#include "nccl_tests/settings.h"

namespace zccl_perf {
namespace {

using zccl_harness::sizeOf;
using zccl_harness::World;

struct Job : Layout {
  Settings settings;
  const World* world = nullptr;
  zcclComm_t comm = nullptr;
  zcclComm_t native = nullptr;   // -B
  zcclComm_t overMpi = nullptr;  // -U
  std::unique_ptr<BufferMemory> memory;
};

// A column group timed beside zccl's out-of-place call on the same buffers.
struct Baseline {
  // The options it runs with: none (the communicator's own), the row's wire format and
  // hierarchy, or the row's hierarchy with the exact format or the allowed one forced.
  enum class Options { kNone, kRow, kExact, kAllowedForced };

  const char* key;  // in the JSON
  const char* hostTitle;
  const char* deviceTitle;  // over the columns, by the buffers' memory
  zcclComm_t Job::*comm;
  bool Settings::*wanted;
  Options options;
};

constexpr Baseline kBaselines[] = {
    {"native", "native (MPI)", "native (NCCL)", &Job::native, &Settings::native,
     Baseline::Options::kNone},
    {"mpi_transport", "zccl over MPI", "zccl over MPI", &Job::overMpi, &Settings::mpiTransport,
     Baseline::Options::kRow},
    {"forced_exact", "exact, forced", "exact, forced", &Job::comm, &Settings::paths,
     Baseline::Options::kExact},
    {"forced_format", "allowed format, forced", "allowed format, forced", &Job::comm,
     &Settings::paths, Baseline::Options::kAllowedForced},
};

// The options of `base` in a row whose own are `row`.
zcclCollOptions baselineOptions(const Baseline& base, const zcclCollOptions& row) {
  zcclCollOptions options = row;
  if (base.options == Baseline::Options::kExact) options.wireFormat = zcclWireNone;
  if (base.options == Baseline::Options::kAllowedForced) {
    options.wireFormat = row.wireFormat == zcclWireAllowInt8   ? zcclWireInt8
                         : row.wireFormat == zcclWireAllowInt4 ? zcclWireInt4
                                                               : row.wireFormat;
  }
  return options;
}
constexpr size_t kNumBaselines = sizeof(kBaselines) / sizeof(kBaselines[0]);

const char* titleOf(const Baseline& b, const Job& job) {
  return job.memory->device() ? b.deviceTitle : b.hostTitle;
}

// The buffers the calls see (in job.memory) and their host mirrors, of the same layout.
class Buffers {
 public:
  Buffers(BufferMemory& memory, size_t bytes)
      : memory_(memory), mirrorSend_(bytes), mirrorRecv_(bytes) {
    if (memory.device()) {
      send_ = static_cast<char*>(memory.allocate(bytes));
      recv_ = send_ != nullptr ? static_cast<char*>(memory.allocate(bytes)) : nullptr;
    } else {
      send_ = mirrorSend_.data();
      recv_ = mirrorRecv_.data();
    }
  }
  ~Buffers() {
    if (!memory_.device()) return;
    memory_.release(send_);
    memory_.release(recv_);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  bool allocated() const { return send_ != nullptr && recv_ != nullptr; }
  char* send() { return send_; }
  char* recv() { return recv_; }
  char* mirrorSend() { return mirrorSend_.data(); }
  char* mirrorRecv() { return mirrorRecv_.data(); }

 private:
  BufferMemory& memory_;
  std::vector<char> mirrorSend_, mirrorRecv_;
  char* send_ = nullptr;
  char* recv_ = nullptr;
};

// Where the call reads and writes: separate buffers, or NCCL's in-place layouts in recv.
struct Placement {
  void* send;
  void* recv;
  void* input;  // where this rank's input must be written before the call
  void* output;
};

Placement place(const Job& job, const Shape& shape, zcclDataType_t type, char* send, char* recv,
                bool inPlace) {
  if (!inPlace) return Placement{send, recv, send, recv};
  const size_t es = sizeOf(type);
  switch (job.collective) {
    case Collective::kAllGather:
    case Collective::kGather: {
      char* mine = recv + job.rank * shape.argument * es;
      return Placement{mine, recv, mine, recv};
    }
    case Collective::kReduceScatter:
    case Collective::kScatter: {
      char* mine = send + job.rank * shape.argument * es;
      return Placement{send, mine, send, mine};
    }
    default:
      return Placement{recv, recv, recv, recv};
  }
}

zcclResult_t runOnce(const Job& job, zcclComm_t comm, const zcclCollOptions* options,
                     const Shape& shape, zcclDataType_t type, zcclRedOp_t op, const Placement& p) {
  const size_t count = shape.argument;
  zcclStream_t stream = job.memory->stream();
  switch (job.collective) {
    case Collective::kAllGather:
      return zcclAllGatherEx(p.send, p.recv, count, type, comm, stream, options);
    case Collective::kReduceScatter:
      return zcclReduceScatterEx(p.send, p.recv, count, type, op, comm, stream, options);
    case Collective::kAllReduce:
      return zcclAllReduceEx(p.send, p.recv, count, type, op, comm, stream, options);
    case Collective::kAllToAll:
      return zcclAllToAll(p.send, p.recv, count, type, comm, stream);
    case Collective::kBroadcast:
      return zcclBroadcast(p.send, p.recv, count, type, job.settings.root, comm, stream);
    case Collective::kReduce:
      return zcclReduceEx(p.send, p.recv, count, type, op, job.settings.root, comm, stream,
                          options);
    case Collective::kGather:
      return zcclGather(p.send, p.recv, count, type, job.settings.root, comm, stream);
    case Collective::kScatter:
      return zcclScatter(p.send, p.recv, count, type, job.settings.root, comm, stream);
    case Collective::kSendRecv: {
      zcclGroupStart();
      const zcclResult_t sent =
          zcclSend(p.send, count, type, (job.rank + 1) % job.ranks, comm, stream);
      const zcclResult_t received =
          zcclRecv(p.recv, count, type, (job.rank + job.ranks - 1) % job.ranks, comm, stream);
      const zcclResult_t ended = zcclGroupEnd();
      return sent != zcclSuccess ? sent : received != zcclSuccess ? received : ended;
    }
  }
  return zcclInternalError;
}

bool succeeded(zcclResult_t result, zcclComm_t comm) {
  if (result == zcclSuccess) return true;
  std::fprintf(stderr, "zccl error %s: %s\n", zcclGetErrorString(result), zcclGetLastError(comm));
  return false;
}

// Waits for the calls queued on the stream (none on host memory) and takes their failure.
bool finished(const Job& job, zcclComm_t comm) {
  if (!job.memory->synchronize()) {
    std::fprintf(stderr, "%s\n", job.memory->error().c_str());
    return false;
  }
  zcclResult_t queued = zcclSuccess;
  const zcclResult_t asked = zcclCommGetAsyncError(comm, &queued);
  return succeeded(asked != zcclSuccess ? asked : queued, comm);
}

struct Measurement {
  double seconds = 0;
  double algbw = 0;  // GB/s of the logical (unquantized) bytes
  double busbw = 0;
  long wrong = -1;  // -1: not checked
};

struct Row {
  size_t bytes;
  Shape shape;
  zcclDataType_t type;
  zcclRedOp_t op;
  Measurement outOfPlace, inPlace;
  Measurement baselines[kNumBaselines];
  double interBytes = 0, intraBytes = 0;  // per rank per call, mean over ranks
};

// A column group of a row: a call in one placement on the row's buffers, zccl's or a
// baseline's.
struct Contender {
  zcclComm_t comm;
  std::optional<zcclCollOptions> options;  // none: the communicator's own
  bool inPlace;
  Measurement* result;
  bool countsTraffic;                   // the row's bytes per call come from its timed calls
  double seconds = 0;                   // this rank's timed calls, summed over the rounds
  double interSent = 0, intraSent = 0;  // this rank's bytes in them, when countsTraffic

  const zcclCollOptions* callOptions() const { return options ? &*options : nullptr; }
};

// Checks its result once (when -c), then runs the warm-up.
void prepare(const Job& job, Row& row, Buffers& b, const Contender& c, bool* ok) {
  const Shape& shape = row.shape;
  const Placement p = place(job, shape, row.type, b.send(), b.recv(), c.inPlace);
  const Placement mirror = place(job, shape, row.type, b.mirrorSend(), b.mirrorRecv(), c.inPlace);
  const size_t es = sizeOf(row.type);
  BufferMemory& memory = *job.memory;
  fillInput(job, shape, row.type, row.op, mirror.input);
  if (!memory.upload(p.input, mirror.input, shape.sendElements * es)) {
    std::fprintf(stderr, "%s\n", memory.error().c_str());
    *ok = false;
    return;
  }
  *ok = succeeded(runOnce(job, c.comm, c.callOptions(), shape, row.type, row.op, p), c.comm) &&
        finished(job, c.comm) && *ok;
  if (job.settings.check) {
    const bool quantized = c.options && c.options->wireFormat != zcclWireNone;
    if (!memory.download(mirror.output, p.output, shape.recvElements * es)) {
      std::fprintf(stderr, "%s\n", memory.error().c_str());
      *ok = false;
    }
    const size_t wrong =
        countWrong(job, job.settings, shape, row.type, row.op, mirror.output, quantized);
    c.result->wrong =
        static_cast<long>(job.world->combine(static_cast<double>(wrong), World::Combine::kSum));
  }
  for (int i = 0; i < job.settings.warmup && *ok; ++i)
    *ok = succeeded(runOnce(job, c.comm, c.callOptions(), shape, row.type, row.op, p), c.comm);
  *ok = *ok && finished(job, c.comm);
}

// Adds the time of `calls` calls, from a barrier until the last one has finished, and, where
// the contender counts the row's traffic, their bytes.
void timeCalls(const Job& job, const Row& row, Buffers& b, int calls, Contender& c, bool* ok) {
  const Placement p = place(job, row.shape, row.type, b.send(), b.recv(), c.inPlace);
  if (c.countsTraffic) zcclCommResetStats(c.comm);
  job.world->barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls && *ok; ++i)
    *ok = succeeded(runOnce(job, c.comm, c.callOptions(), row.shape, row.type, row.op, p), c.comm);
  *ok = *ok && finished(job, c.comm);
  c.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (c.countsTraffic) {
    zcclStats stats;
    zcclCommGetStats(c.comm, &stats);
    c.interSent += static_cast<double>(stats.bytesSent[zcclLinkInterNode]);
    c.intraSent += static_cast<double>(stats.bytesSent[zcclLinkIntraNode]);
  }
}

// This rank's seconds per call, combined across ranks by -a.
double acrossRanks(const Job& job, double seconds) {
  const int mode = job.settings.average;
  if (mode == 0) {
    job.world->broadcastBytes(&seconds, sizeof(seconds), 0);
    return seconds;
  }
  const World::Combine how = mode == 2   ? World::Combine::kMin
                             : mode == 3 ? World::Combine::kMax
                                         : World::Combine::kSum;
  seconds = job.world->combine(seconds, how);
  return mode == 1 ? seconds / job.ranks : seconds;
}

// Every contender's timed calls by turns, in -R rounds (each one's calls in one block with
// the default, one round), then its mean per call, and the row's bytes per call from zccl's
// out-of-place calls (the path they ran: with ZCCL_QUANT=allow-*, the checked call may be the
// tuner's first trial). Each round starts one contender later, so
// that none always follows the same one (a rate limiter's credit, caches, a core's clock).
void timeByTurns(const Job& job, Row& row, Buffers& b, std::vector<Contender>& contenders,
                 bool* ok) {
  const int rounds = job.settings.rounds;
  const int iters = job.settings.iters;
  const size_t n = contenders.size();
  for (int r = 0; r < rounds; ++r) {
    const int calls = iters / rounds + (r < iters % rounds);
    for (size_t k = 0; k < n; ++k)
      timeCalls(job, row, b, calls, contenders[(static_cast<size_t>(r) + k) % n], ok);
  }
  for (Contender& c : contenders) {
    Measurement& m = *c.result;
    m.seconds = acrossRanks(job, c.seconds / iters);
    m.algbw = static_cast<double>(row.bytes) / 1e9 / m.seconds;
    m.busbw = m.algbw * busFactor(job.collective, job.ranks);
    if (!c.countsTraffic) continue;
    const auto perRankPerCall = [&](double sent) {
      return job.world->combine(sent, World::Combine::kSum) / job.ranks / iters;
    };
    row.interBytes = perRankPerCall(c.interSent);
    row.intraBytes = perRankPerCall(c.intraSent);
  }
}

// zccl's call out of place and in place, then the baselines asked for.
std::vector<Contender> contendersOf(const Job& job, const zcclCollOptions& callOptions, Row& row) {
  std::vector<Contender> contenders{{job.comm, callOptions, false, &row.outOfPlace, true, 0}};
  if (hasInPlace(job.collective))
    contenders.push_back({job.comm, callOptions, true, &row.inPlace, false, 0});
  for (size_t i = 0; i < kNumBaselines; ++i) {
    const Baseline& base = kBaselines[i];
    if (!(job.settings.*base.wanted)) continue;
    std::optional<zcclCollOptions> options;
    if (base.options != Baseline::Options::kNone) options = baselineOptions(base, callOptions);
    contenders.push_back({job.*base.comm, options, false, &row.baselines[i], false, 0});
  }
  return contenders;
}

std::string formatTime(double microseconds) {
  char text[32];
  const char* format = microseconds < 100 ? "%7.2f" : microseconds < 10000 ? "%7.1f" : "%7.0f";
  std::snprintf(text, sizeof(text), format, microseconds);
  return text;
}

std::string formatMeasurement(const Measurement& m) {
  char text[96];
  char wrong[24];
  if (m.wrong < 0) {
    std::snprintf(wrong, sizeof(wrong), "%6s", "N/A");
  } else {
    std::snprintf(wrong, sizeof(wrong), "%6ld", m.wrong);
  }
  std::snprintf(text, sizeof(text), "  %s %7.2f %7.2f %s", formatTime(m.seconds * 1e6).c_str(),
                m.algbw, m.busbw, wrong);
  return text;
}

std::string baselineNames(const Job& job) {
  std::string names;
  for (const Baseline& b : kBaselines) {
    if (!(job.settings.*b.wanted)) continue;
    names += (names.empty() ? "" : ", ") + std::string(titleOf(b, job));
  }
  return names.empty() ? "off" : names;
}

void printPreamble(const Job& job) {
  const Settings& s = job.settings;
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  const auto hosts = job.world->gatherNames(host);
  const auto pids = job.world->gatherNames(std::to_string(getpid()));
  const auto memories = job.world->gatherNames(job.memory->describe());
  if (job.rank != 0) return;
  std::printf(
      "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d iters: %d "
      "agg iters: 1 validation: %d graph: 0\n",
      s.minBytes, s.maxBytes, s.stepBytes ? static_cast<double>(s.stepBytes) : s.stepFactor,
      s.stepBytes ? "bytes" : "factor", s.warmup, s.iters, s.check);
  std::printf(
      "# zccl %s: wire %s, hierarchy %s, baselines %s, timed in %d round%s, %d nodes of %d "
      "ranks, %s\n",
      collectiveName(job.collective), zcclWireFormatName(s.wire), kHierarchyNames[s.hierarchy],
      baselineNames(job).c_str(), s.rounds, s.rounds > 1 ? "s by turns" : "", job.nodes,
      job.nodeSize,
      job.world->underMpi() ? "launched by mpiexec (MPI)" : "launched by zcclrun (UCX)");
  std::printf("#\n# Using devices\n");
  for (int r = 0; r < job.ranks; ++r) {
    std::printf("#  Rank %2d Group  0 Pid %6s on %10s %s\n", r, pids[r].c_str(), hosts[r].c_str(),
                memories[r].c_str());
  }
  std::printf("#\n");
  std::string titles, heads, units;
  for (const Baseline& b : kBaselines) {
    if (!(s.*b.wanted)) continue;
    char title[32];
    std::snprintf(title, sizeof(title), "  %19s", titleOf(b, job));
    titles += title;
    heads += "   busbw  zccl/base";
    units += "  (GB/s)           ";
  }
  std::printf(
      "#                                                              out-of-place                "
      "       in-place         %s   bytes sent per rank per call\n",
      titles.c_str());
  std::printf(
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong%s   inter-node   intra-node\n",
      heads.c_str());
  std::printf(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)       %s          (B)          (B)\n",
      units.c_str());
}

void printRow(const Job& job, const Row& row) {
  if (job.rank != 0) return;
  const bool op = hasOp(job.collective);
  const int root = hasRoot(job.collective) ? job.settings.root : -1;
  std::string inPlace = hasInPlace(job.collective) ? formatMeasurement(row.inPlace)
                                                   : "      N/A     N/A     N/A    N/A";
  std::string baselines;
  for (size_t i = 0; i < kNumBaselines; ++i) {
    if (!(job.settings.*kBaselines[i].wanted)) continue;
    char text[48];
    std::snprintf(text, sizeof(text), " %7.2f %10.3f", row.baselines[i].busbw,
                  row.outOfPlace.busbw / row.baselines[i].busbw);
    baselines += text;
  }
  std::printf("%12zu  %12zu  %8s  %6s  %6d%s%s%s %12.0f %12.0f\n", row.bytes, row.shape.count,
              kTypeNames[row.type], op ? kOpNames[row.op] : "none", root,
              formatMeasurement(row.outOfPlace).c_str(), inPlace.c_str(), baselines.c_str(),
              row.interBytes, row.intraBytes);
  std::fflush(stdout);
}

void appendMeasurement(std::string* json, const char* name, const Measurement& m) {
  char text[200];
  std::snprintf(text, sizeof(text),
                "\"%s\": {\"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, \"wrong\": %ld}",
                name, m.seconds * 1e6, m.algbw, m.busbw, m.wrong);
  *json += text;
}

void writeJson(const Job& job, const std::vector<Row>& rows, long wrong, double avgBusbw) {
  if (job.rank != 0 || job.settings.json.empty()) return;
  const Settings& s = job.settings;
  char text[512];
  std::snprintf(text, sizeof(text),
                "{\n  \"collective\": \"%s\", \"ranks\": %d, \"nodes\": %d, \"ranks_per_node\": "
                "%d,\n  \"wire\": \"%s\", \"hierarchy\": \"%s\", \"memory\": \"%s\", "
                "\"native\": %s, \"mpi_transport\": %s, \"iters\": %d, "
                "\"warmup\": %d, \"rounds\": %d, \"check\": %d,\n  \"bus_factor\": %.17g,\n  "
                "\"results\": [\n",
                collectiveName(job.collective), job.ranks, job.nodes, job.nodeSize,
                zcclWireFormatName(s.wire), kHierarchyNames[s.hierarchy],
                job.memory->device() ? "device" : "host", s.native ? "true" : "false",
                s.mpiTransport ? "true" : "false", s.iters, s.warmup, s.rounds, s.check,
                busFactor(job.collective, job.ranks));
  std::string json = text;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& row = rows[i];
    std::snprintf(text, sizeof(text),
                  "    {\"size\": %zu, \"count\": %zu, \"type\": \"%s\", \"redop\": \"%s\", "
                  "\"inter_node_bytes\": %.0f, \"intra_node_bytes\": %.0f, ",
                  row.bytes, row.shape.count, kTypeNames[row.type],
                  hasOp(job.collective) ? kOpNames[row.op] : "none", row.interBytes,
                  row.intraBytes);
    json += text;
    appendMeasurement(&json, "out_of_place", row.outOfPlace);
    if (hasInPlace(job.collective)) {
      json += ", ";
      appendMeasurement(&json, "in_place", row.inPlace);
    }
    for (size_t b = 0; b < kNumBaselines; ++b) {
      if (!(s.*kBaselines[b].wanted)) continue;
      json += ", ";
      appendMeasurement(&json, kBaselines[b].key, row.baselines[b]);
    }
    json += i + 1 < rows.size() ? "},\n" : "}\n";
  }
  std::snprintf(text, sizeof(text),
                "  ],\n  \"out_of_bounds\": %ld, \"ok\": %s, \"avg_busbw\": %.6f\n}\n", wrong,
                wrong == 0 ? "true" : "false", avgBusbw);
  json += text;
  FILE* file = std::fopen(s.json.c_str(), "w");
  if (file == nullptr) {
    std::fprintf(stderr, "-J %s: cannot write the file\n", s.json.c_str());
    return;
  }
  std::fputs(json.c_str(), file);
  std::fclose(file);
}

bool setUp(Job* job) {
  const World& world = *job->world;
  if (!world.underMpi() && (job->settings.native || job->settings.mpiTransport)) {
    if (job->rank == 0) {
      std::fprintf(stderr, "-B and -U compare with MPI: launch with mpiexec, not zcclrun\n");
    }
    return false;
  }
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  if (job->settings.timeout > 0) config.timeoutSeconds = job->settings.timeout;
  if (!succeeded(world.makeComm(&config, World::Engine::kDefault, &job->comm), nullptr)) {
    return false;
  }
  if (job->settings.mpiTransport &&
      !succeeded(world.makeComm(&config, World::Engine::kMpi, &job->overMpi), nullptr)) {
    return false;
  }
  config.algorithm = zcclAlgoNative;
  if (job->settings.native &&
      !succeeded(world.makeComm(&config, World::Engine::kMpi, &job->native), nullptr)) {
    return false;
  }
  zcclComm_t node = nullptr, cross = nullptr;
  if (!succeeded(zcclCommSplitNode(job->comm, &node), job->comm) ||
      !succeeded(zcclCommSplitCrossNode(job->comm, &cross), job->comm)) {
    return false;
  }
  zcclCommCount(node, &job->nodeSize);
  zcclCommCount(cross, &job->nodes);
  int localRank = 0;
  zcclCommUserRank(node, &localRank);
  std::string error;
  job->memory = openMemory(job->settings.memory, localRank, &error);
  if (job->memory == nullptr) {
    std::fprintf(stderr, "rank %d: %s\n", job->rank, error.c_str());
    return false;
  }
  return true;
}

int run(Job& job) {
  const Settings& s = job.settings;
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.hierarchy = s.hierarchy;
  if (quantizable(job.collective)) options.wireFormat = s.wire;
  printPreamble(job);
  Buffers b(*job.memory, s.maxBytes + 64);
  if (!b.allocated()) {
    std::fprintf(stderr, "rank %d: %s\n", job.rank, job.memory->error().c_str());
    return 1;
  }
  std::vector<Row> rows;
  bool ok = true;
  for (zcclDataType_t type : s.types) {
    for (zcclRedOp_t op : hasOp(job.collective) ? s.ops : std::vector<zcclRedOp_t>{zcclSum}) {
      // A lossy wire format carries float types, and reductions only for sum and avg.
      const bool lossy = options.wireFormat != zcclWireNone &&
                         (type == zcclFloat32 || type == zcclFloat16 || type == zcclBfloat16) &&
                         (!hasOp(job.collective) || op == zcclSum || op == zcclAvg);
      zcclCollOptions callOptions = options;
      if (!lossy) callOptions.wireFormat = zcclWireNone;
      for (size_t bytes : sizes(s)) {
        const Shape shape = shapeOf(job.collective, bytes, sizeOf(type), job.ranks);
        if (shape.count == 0) continue;
        Row row{shape.count * sizeOf(type), shape, type, op, {}, {}, {}};
        std::vector<Contender> contenders = contendersOf(job, callOptions, row);
        for (const Contender& c : contenders) prepare(job, row, b, c, &ok);
        timeByTurns(job, row, b, contenders, &ok);
        printRow(job, row);
        rows.push_back(row);
        if (!ok) break;
      }
    }
  }
  long wrong = 0;
  double busbwSum = 0;
  int measured = 0;
  for (const Row& row : rows) {
    for (const Measurement* m : {&row.outOfPlace, &row.inPlace}) {
      if (m == &row.inPlace && !hasInPlace(job.collective)) continue;
      wrong += std::max(m->wrong, 0L);
      busbwSum += m->busbw;
      ++measured;
    }
  }
  const double avgBusbw = measured > 0 ? busbwSum / measured : 0;
  if (job.rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", wrong, wrong == 0 && ok ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %g \n", avgBusbw);
    std::printf("#\n");
  }
  writeJson(job, rows, wrong, avgBusbw);
  return wrong == 0 && ok ? 0 : 1;
}

}  // namespace

int runPerf(int argc, char** argv, Collective collective) {
  World& world = zccl_harness::world();
  if (!world.start(&argc, &argv)) return 2;
  Job job;
  job.collective = collective;
  job.world = &world;
  job.rank = world.rank();
  job.ranks = world.ranks();
  int status = 2;
  if (!parseArguments(argc, argv, &job.settings)) {
    if (job.rank == 0) printUsage(argv[0]);
  } else if (job.settings.root >= job.ranks) {
    if (job.rank == 0) std::fprintf(stderr, "-r %d: only %d ranks\n", job.settings.root, job.ranks);
  } else if (setUp(&job)) {
    status = run(job);
  }
  for (zcclComm_t comm : {job.native, job.overMpi, job.comm}) {
    if (comm != nullptr) zcclCommDestroy(comm);
  }
  const int worst = static_cast<int>(world.combine(status, World::Combine::kMax));
  world.finish();
  return worst;
}

}  // namespace zccl_perf
