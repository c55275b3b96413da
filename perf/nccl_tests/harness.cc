#include "nccl_tests/harness.h"

#include <getopt.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "testsupport/values.h"
#include "zccl/zccl_mpi.h"

namespace zccl_perf {
namespace {

using zccl_test::foldReference;
using zccl_test::isFloat;
using zccl_test::load;
using zccl_test::sizeOf;
using zccl_test::store;

struct Settings {
  size_t minBytes = 32 << 20;  // nccl-tests' defaults
  size_t maxBytes = 32 << 20;
  double stepFactor = 1;
  size_t stepBytes = 0;  // additive step, when -i is given
  int iters = 20;
  int warmup = 5;
  int check = 1;
  int average = 3;  // time across ranks: 0 rank 0, 1 mean, 2 min, 3 max
  int root = 0;
  double timeout = 0;  // seconds, 0: the library's default
  std::vector<zcclDataType_t> types{zcclFloat32};
  std::vector<zcclRedOp_t> ops{zcclSum};
  std::string json;
  zcclWireFormat_t wire = zcclWireNone;
  zcclHierarchy_t hierarchy = zcclHierarchyAuto;
  bool native = false;
};

const char* const kTypeNames[] = {"int8",   "uint8", "int32",    "uint32", "int64",
                                  "uint64", "half",  "bfloat16", "float",  "double"};
const char* const kOpNames[] = {"sum", "prod", "max", "min", "avg"};
const char* const kWireNames[] = {"none", "int8", "int4"};
const char* const kHierarchyNames[] = {"auto", "flat", "hier"};

struct Job {
  Collective collective;
  int rank = 0;
  int ranks = 1;
  int nodeSize = 1;  // ranks per node, from zcclCommSplitNode
  int nodes = 1;
  Settings settings;
  zcclComm_t comm = nullptr;
  zcclComm_t native = nullptr;
};

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllGather:
      return "all_gather";
    case Collective::kReduceScatter:
      return "reduce_scatter";
    case Collective::kAllReduce:
      return "all_reduce";
    case Collective::kAllToAll:
      return "alltoall";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kSendRecv:
      return "sendrecv";
  }
  return "?";
}

bool hasOp(Collective c) { return c == Collective::kReduceScatter || c == Collective::kAllReduce; }
bool quantizable(Collective c) { return hasOp(c) || c == Collective::kAllGather; }
bool hasInPlace(Collective c) { return c != Collective::kSendRecv; }

// nccl-tests' bus bandwidth factors.
double busFactor(Collective c, int n) {
  switch (c) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return static_cast<double>(n - 1) / n;
    default:
      return 1.0;
  }
}

// Elements per rank of the send and receive buffers and the count argument, for `count`
// elements in all (the size column, as nccl-tests counts it).
struct Shape {
  size_t count;  // the row's count: elements of the whole operation
  size_t sendElements;
  size_t recvElements;
  size_t argument;  // the count passed to the call
};

Shape shapeOf(Collective c, size_t bytes, size_t elementSize, int n) {
  size_t count = bytes / elementSize;
  const bool divided =
      c == Collective::kAllGather || c == Collective::kReduceScatter || c == Collective::kAllToAll;
  if (divided) count = count / n * n;
  const size_t share = count / n;
  switch (c) {
    case Collective::kAllGather:
      return Shape{count, share, count, share};
    case Collective::kReduceScatter:
      return Shape{count, count, share, share};
    case Collective::kAllToAll:
      return Shape{count, count, count, share};
    default:
      return Shape{count, count, count, count};
  }
}

// ---- values and checks ----

// Rank r's input element i: small values whose sums over up to 8 ranks are exact even in
// bfloat16; prod uses 1 and 2, with at most one 2 per element, so products stay exact.
double inputValue(zcclDataType_t type, zcclRedOp_t op, int r, size_t i, int n) {
  if (op == zcclProd) return (static_cast<size_t>(r) + i) % static_cast<size_t>(n) == 0 ? 2 : 1;
  const long v = static_cast<long>((static_cast<size_t>(r) * 31 + i * 7) % 33);
  if (type == zcclUint8 || type == zcclUint32 || type == zcclUint64) return static_cast<double>(v);
  return isFloat(type) ? (v - 16) / 8.0 : static_cast<double>(v - 16);
}

double reduced(const Job& job, zcclDataType_t type, zcclRedOp_t op, size_t i) {
  double result = inputValue(type, op, 0, i, job.ranks);
  for (int r = 1; r < job.ranks; ++r)
    result = foldReference(op, result, inputValue(type, op, r, i, job.ranks));
  if (op != zcclAvg) return result;
  return isFloat(type) ? result / job.ranks : std::trunc(result / job.ranks);
}

// The exact value of element i of this rank's result.
double expectedValue(const Job& job, const Shape& shape, zcclDataType_t type, zcclRedOp_t op,
                     size_t i) {
  const size_t share = shape.argument;
  switch (job.collective) {
    case Collective::kAllGather:
      return inputValue(type, op, static_cast<int>(i / share), i % share, job.ranks);
    case Collective::kReduceScatter:
      return reduced(job, type, op, job.rank * share + i);
    case Collective::kAllReduce:
      return reduced(job, type, op, i);
    case Collective::kAllToAll:
      return inputValue(type, op, static_cast<int>(i / share), job.rank * share + i % share,
                        job.ranks);
    case Collective::kBroadcast:
      return inputValue(type, op, job.settings.root, i, job.ranks);
    case Collective::kSendRecv:
      return inputValue(type, op, (job.rank + job.ranks - 1) % job.ranks, i, job.ranks);
  }
  return 0;
}

// The quantizer's per-element bound for a group whose values lie within +-a
// (src/quant/quantize.h): half a step of the scale plus float32 terms.
double quantStep(const Settings& s, double a) {
  const double levels = s.wire == zcclWireInt8 ? 127 : 7;  // symmetric
  return a / levels / 2 * (1 + 0x1p-22) + 0x1p-21 * a + 0x1p-140;
}

// The analytic error bound of a quantized path for inputs within +-2: per contribution one
// quantization per hop, the second hop's scale grown by the first hop's partial sums and
// errors, float32 accumulation; the worse of the flat and two-level forms unless forced.
double quantizedBound(const Job& job, zcclRedOp_t op) {
  const Settings& s = job.settings;
  const double a = 2;
  const int n = job.ranks, perNode = job.nodeSize, nodes = job.nodes;
  if (job.collective == Collective::kAllGather) return quantStep(s, a);
  const double oneHop = (n - 1) * quantStep(s, a);
  const double hop1 = (perNode - 1) * quantStep(s, a);
  const double twoHop = nodes * hop1 + (nodes - 1) * quantStep(s, perNode * a + hop1);
  double bound = s.hierarchy == zcclHierarchyFlat       ? oneHop
                 : s.hierarchy == zcclHierarchyTwoLevel ? twoHop
                                                        : std::max(oneHop, twoHop);
  bound += 2 * n * 0x1p-24 * (n * a + bound);  // float32 sums
  if (job.collective == Collective::kAllReduce) bound += quantStep(s, n * a + bound);
  return op == zcclAvg ? bound / n : bound;
}

// Elements of this rank's result outside what the path guarantees: exact for lossless
// paths (one final rounding for a float average), the analytic bound for quantized ones.
size_t countWrong(const Job& job, const Shape& shape, zcclDataType_t type, zcclRedOp_t op,
                  const void* result, bool quantized) {
  const size_t elements = shape.recvElements;
  const double bound = quantized ? quantizedBound(job, op) : 0;
  size_t wrong = 0;
  for (size_t i = 0; i < elements; ++i) {
    const double want = expectedValue(job, shape, type, op, i);
    double allowed = bound;
    if (isFloat(type) && (quantized || op == zcclAvg)) {
      allowed += zccl_test::ulp(type, std::fabs(want) + bound) * (quantized ? 2 : 1);
    }
    if (!(std::fabs(load(type, result, i) - want) <= allowed)) ++wrong;
  }
  return wrong;
}

void fillInput(const Job& job, const Shape& shape, zcclDataType_t type, zcclRedOp_t op,
               void* send) {
  for (size_t i = 0; i < shape.sendElements; ++i)
    store(type, send, i, inputValue(type, op, job.rank, i, job.ranks));
}

// ---- running ----

struct Buffers {
  std::vector<char> send, recv;
};

// Where the call reads and writes: separate buffers, or NCCL's in-place layouts in recv.
struct Placement {
  void* send;
  void* recv;
  void* input;  // where this rank's input must be written before the call
  void* output;
};

Placement place(const Job& job, const Shape& shape, zcclDataType_t type, Buffers& b, bool inPlace) {
  char* send = b.send.data();
  char* recv = b.recv.data();
  if (!inPlace) return Placement{send, recv, send, recv};
  const size_t es = sizeOf(type);
  switch (job.collective) {
    case Collective::kAllGather: {
      char* mine = recv + job.rank * shape.argument * es;
      return Placement{mine, recv, mine, recv};
    }
    case Collective::kReduceScatter: {
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
  switch (job.collective) {
    case Collective::kAllGather:
      return zcclAllGatherEx(p.send, p.recv, count, type, comm, nullptr, options);
    case Collective::kReduceScatter:
      return zcclReduceScatterEx(p.send, p.recv, count, type, op, comm, nullptr, options);
    case Collective::kAllReduce:
      return zcclAllReduceEx(p.send, p.recv, count, type, op, comm, nullptr, options);
    case Collective::kAllToAll:
      return zcclAllToAll(p.send, p.recv, count, type, comm, nullptr);
    case Collective::kBroadcast:
      return zcclBroadcast(p.send, p.recv, count, type, job.settings.root, comm, nullptr);
    case Collective::kSendRecv: {
      zcclGroupStart();
      const zcclResult_t sent =
          zcclSend(p.send, count, type, (job.rank + 1) % job.ranks, comm, nullptr);
      const zcclResult_t received =
          zcclRecv(p.recv, count, type, (job.rank + job.ranks - 1) % job.ranks, comm, nullptr);
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

// Seconds per call after warm-up, the mean of `iters` calls, combined across ranks by -a.
double timeCalls(const Job& job, zcclComm_t comm, const zcclCollOptions* options,
                 const Shape& shape, zcclDataType_t type, zcclRedOp_t op, const Placement& p,
                 bool* ok) {
  for (int i = 0; i < job.settings.warmup && *ok; ++i)
    *ok = succeeded(runOnce(job, comm, options, shape, type, op, p), comm);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < job.settings.iters && *ok; ++i)
    *ok = succeeded(runOnce(job, comm, options, shape, type, op, p), comm);
  double seconds = (MPI_Wtime() - start) / std::max(job.settings.iters, 1);
  const int mode = job.settings.average;
  if (mode == 0) {
    MPI_Bcast(&seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  } else {
    const MPI_Op reduction = mode == 2 ? MPI_MIN : mode == 3 ? MPI_MAX : MPI_SUM;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, reduction, MPI_COMM_WORLD);
    if (mode == 1) seconds /= job.ranks;
  }
  return seconds;
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
  Measurement outOfPlace, inPlace, native;
  double interBytes = 0, intraBytes = 0;  // per rank per call, mean over ranks
};

// One placement: check (when -c), then time; `traffic` gets the stats of the checked call.
Measurement measure(const Job& job, zcclComm_t comm, const zcclCollOptions* options,
                    const Shape& shape, size_t bytes, zcclDataType_t type, zcclRedOp_t op,
                    Buffers& b, bool inPlace, Row* traffic, bool* ok) {
  const Placement p = place(job, shape, type, b, inPlace);
  Measurement m;
  fillInput(job, shape, type, op, p.input);
  if (traffic != nullptr) zcclCommResetStats(comm);
  *ok = succeeded(runOnce(job, comm, options, shape, type, op, p), comm) && *ok;
  if (traffic != nullptr) {
    zcclStats stats;
    zcclCommGetStats(comm, &stats);
    double sent[2] = {static_cast<double>(stats.bytesSent[zcclLinkInterNode]),
                      static_cast<double>(stats.bytesSent[zcclLinkIntraNode])};
    MPI_Allreduce(MPI_IN_PLACE, sent, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    traffic->interBytes = sent[0] / job.ranks;
    traffic->intraBytes = sent[1] / job.ranks;
  }
  if (job.settings.check) {
    const bool quantized = options != nullptr && options->wireFormat != zcclWireNone;
    long wrong = static_cast<long>(countWrong(job, shape, type, op, p.output, quantized));
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    m.wrong = wrong;
  }
  m.seconds = timeCalls(job, comm, options, shape, type, op, p, ok);
  m.algbw = static_cast<double>(bytes) / 1e9 / m.seconds;
  m.busbw = m.algbw * busFactor(job.collective, job.ranks);
  return m;
}

// ---- output ----

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

void printPreamble(const Job& job) {
  const Settings& s = job.settings;
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  std::vector<char> hosts(64 * static_cast<size_t>(job.ranks));
  std::vector<int> pids(static_cast<size_t>(job.ranks));
  const int pid = static_cast<int>(getpid());
  MPI_Gather(host, 64, MPI_CHAR, hosts.data(), 64, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Gather(&pid, 1, MPI_INT, pids.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (job.rank != 0) return;
  std::printf(
      "# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d iters: %d "
      "agg iters: 1 validation: %d graph: 0\n",
      s.minBytes, s.maxBytes, s.stepBytes ? static_cast<double>(s.stepBytes) : s.stepFactor,
      s.stepBytes ? "bytes" : "factor", s.warmup, s.iters, s.check);
  std::printf("# zccl %s: wire %s, hierarchy %s, native baseline %s, %d nodes of %d ranks\n",
              collectiveName(job.collective), kWireNames[s.wire], kHierarchyNames[s.hierarchy],
              s.native ? "MPI (-B)" : "off", job.nodes, job.nodeSize);
  std::printf("#\n# Using devices\n");
  for (int r = 0; r < job.ranks; ++r) {
    std::printf("#  Rank %2d Group  0 Pid %6d on %10s host memory\n", r, pids[r],
                &hosts[64 * static_cast<size_t>(r)]);
  }
  std::printf("#\n");
  const char* nativeTitle = s.native ? "     native (MPI)      " : "";
  const char* nativeHead = s.native ? "   busbw  zccl/native" : "";
  const char* nativeUnits = s.native ? "  (GB/s)             " : "";
  std::printf(
      "#                                                              out-of-place                "
      "       in-place          %s   bytes sent per rank per call\n",
      nativeTitle);
  std::printf(
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong%s   inter-node   intra-node\n",
      nativeHead);
  std::printf(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "
      "(us)  (GB/s)  (GB/s)       %s          (B)          (B)\n",
      nativeUnits);
}

void printRow(const Job& job, const Row& row) {
  if (job.rank != 0) return;
  const bool op = hasOp(job.collective);
  const int root = job.collective == Collective::kBroadcast ? job.settings.root : -1;
  std::string inPlace = hasInPlace(job.collective) ? formatMeasurement(row.inPlace)
                                                   : "      N/A     N/A     N/A    N/A";
  std::string native;
  if (job.settings.native) {
    char text[48];
    std::snprintf(text, sizeof(text), " %7.2f %12.3f", row.native.busbw,
                  row.outOfPlace.busbw / row.native.busbw);
    native = text;
  }
  std::printf("%12zu  %12zu  %8s  %6s  %6d%s%s%s %12.0f %12.0f\n", row.bytes, row.shape.count,
              kTypeNames[row.type], op ? kOpNames[row.op] : "none", root,
              formatMeasurement(row.outOfPlace).c_str(), inPlace.c_str(), native.c_str(),
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
                "%d,\n  \"wire\": \"%s\", \"hierarchy\": \"%s\", \"native\": %s, \"iters\": %d, "
                "\"warmup\": %d, \"check\": %d,\n  \"bus_factor\": %.17g,\n  \"results\": [\n",
                collectiveName(job.collective), job.ranks, job.nodes, job.nodeSize,
                kWireNames[s.wire], kHierarchyNames[s.hierarchy], s.native ? "true" : "false",
                s.iters, s.warmup, s.check, busFactor(job.collective, job.ranks));
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
    if (s.native) {
      json += ", ";
      appendMeasurement(&json, "native", row.native);
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

// ---- arguments ----

bool parseSize(const char* text, size_t* value) {
  char* end = nullptr;
  const double number = std::strtod(text, &end);
  if (end == text || number < 0) return false;
  double scale = 1;
  switch (*end) {
    case 'K':
    case 'k':
      scale = 1024;
      ++end;
      break;
    case 'M':
    case 'm':
      scale = 1024.0 * 1024;
      ++end;
      break;
    case 'G':
    case 'g':
      scale = 1024.0 * 1024 * 1024;
      ++end;
      break;
    default:
      break;
  }
  if (*end != '\0') return false;
  *value = static_cast<size_t>(number * scale);
  return true;
}

template <size_t N>
bool parseName(const char* text, const char* const (&names)[N], int* index) {
  for (size_t i = 0; i < N; ++i) {
    if (std::strcmp(text, names[i]) == 0) {
      *index = static_cast<int>(i);
      return true;
    }
  }
  return false;
}

bool parseType(const char* text, std::vector<zcclDataType_t>* types) {
  if (std::strcmp(text, "all") == 0) {
    types->clear();
    for (int t = 0; t < zcclNumTypes; ++t) types->push_back(static_cast<zcclDataType_t>(t));
    return true;
  }
  static const struct {
    const char* alias;
    zcclDataType_t type;
  } aliases[] = {{"float16", zcclFloat16}, {"float32", zcclFloat32}, {"float64", zcclFloat64},
                 {"bf16", zcclBfloat16},   {"fp16", zcclFloat16},    {"fp32", zcclFloat32}};
  int index = 0;
  if (parseName(text, kTypeNames, &index)) {
    *types = {static_cast<zcclDataType_t>(index)};
    return true;
  }
  for (const auto& a : aliases) {
    if (std::strcmp(text, a.alias) == 0) {
      *types = {a.type};
      return true;
    }
  }
  return false;
}

bool parseOp(const char* text, std::vector<zcclRedOp_t>* ops) {
  int index = 0;
  if (std::strcmp(text, "all") == 0) {
    ops->clear();
    for (int o = 0; o < zcclNumOps; ++o) ops->push_back(static_cast<zcclRedOp_t>(o));
    return true;
  }
  if (!parseName(text, kOpNames, &index)) return false;
  *ops = {static_cast<zcclRedOp_t>(index)};
  return true;
}

void printUsage(const char* program) {
  std::fprintf(
      stderr,
      "usage: mpiexec -n N %s [options]\n"
      "  -b, --minbytes SIZE      smallest size (default 32M; K, M, G suffixes)\n"
      "  -e, --maxbytes SIZE      largest size (default 32M)\n"
      "  -f, --stepfactor F       multiply the size by F (default 1)\n"
      "  -i, --stepbytes SIZE     or add SIZE instead\n"
      "  -n, --iters N            timed iterations (default 20)\n"
      "  -w, --warmup_iters N     untimed iterations first (default 5)\n"
      "  -c, --check 0|1          check results (default 1)\n"
      "  -d, --datatype T         int8 uint8 int32 uint32 int64 uint64 half bfloat16 float\n"
      "                           double, or all (default float)\n"
      "  -o, --op OP              sum prod max min avg, or all (default sum)\n"
      "  -r, --root R             broadcast root (default 0)\n"
      "  -a, --average 0|1|2|3    time across ranks: rank 0, mean, min, max (default 3)\n"
      "  -T, --timeout S          give up on a silent peer after S seconds\n"
      "  -J, --output_file FILE   also write the results as JSON\n"
      "  -q, --quant none|int8|int4   zccl wire format (default none)\n"
      "  -H, --hierarchy flat|hier|auto   zccl hierarchy (default auto)\n"
      "  -B, --native             also time MPI's own collective on the same buffers\n",
      program);
}

bool parseArguments(int argc, char** argv, Settings* s) {
  static const option longOptions[] = {{"minbytes", required_argument, nullptr, 'b'},
                                       {"maxbytes", required_argument, nullptr, 'e'},
                                       {"stepfactor", required_argument, nullptr, 'f'},
                                       {"stepbytes", required_argument, nullptr, 'i'},
                                       {"iters", required_argument, nullptr, 'n'},
                                       {"warmup_iters", required_argument, nullptr, 'w'},
                                       {"check", required_argument, nullptr, 'c'},
                                       {"datatype", required_argument, nullptr, 'd'},
                                       {"op", required_argument, nullptr, 'o'},
                                       {"root", required_argument, nullptr, 'r'},
                                       {"average", required_argument, nullptr, 'a'},
                                       {"timeout", required_argument, nullptr, 'T'},
                                       {"output_file", required_argument, nullptr, 'J'},
                                       {"quant", required_argument, nullptr, 'q'},
                                       {"hierarchy", required_argument, nullptr, 'H'},
                                       {"native", no_argument, nullptr, 'B'},
                                       {"help", no_argument, nullptr, 'h'},
                                       {nullptr, 0, nullptr, 0}};
  int c = 0;
  int index = 0;
  while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:c:d:o:r:a:T:J:q:H:Bh", longOptions, nullptr)) !=
         -1) {
    bool ok = true;
    switch (c) {
      case 'b':
        ok = parseSize(optarg, &s->minBytes);
        break;
      case 'e':
        ok = parseSize(optarg, &s->maxBytes);
        break;
      case 'f':
        s->stepFactor = std::atof(optarg);
        ok = s->stepFactor >= 1;
        break;
      case 'i':
        ok = parseSize(optarg, &s->stepBytes);
        break;
      case 'n':
        s->iters = std::atoi(optarg);
        ok = s->iters >= 1;
        break;
      case 'w':
        s->warmup = std::atoi(optarg);
        ok = s->warmup >= 0;
        break;
      case 'c':
        s->check = std::atoi(optarg);
        ok = s->check == 0 || s->check == 1;
        break;
      case 'd':
        ok = parseType(optarg, &s->types);
        break;
      case 'o':
        ok = parseOp(optarg, &s->ops);
        break;
      case 'r':
        s->root = std::atoi(optarg);
        ok = s->root >= 0;
        break;
      case 'a':
        s->average = std::atoi(optarg);
        ok = s->average >= 0 && s->average <= 3;
        break;
      case 'T':
        s->timeout = std::atof(optarg);
        ok = s->timeout >= 0;
        break;
      case 'J':
        s->json = optarg;
        break;
      case 'q':
        ok = parseName(optarg, kWireNames, &index);
        s->wire = zcclWireFormat_t(index);
        break;
      case 'H':
        ok = parseName(optarg, kHierarchyNames, &index);
        s->hierarchy = zcclHierarchy_t(index);
        break;
      case 'B':
        s->native = true;
        break;
      default:
        return false;
    }
    if (!ok) {
      std::fprintf(stderr, "-%c %s: invalid value\n", c, optarg != nullptr ? optarg : "");
      return false;
    }
  }
  if (s->minBytes > s->maxBytes) {
    std::fprintf(stderr, "-b %zu is larger than -e %zu\n", s->minBytes, s->maxBytes);
    return false;
  }
  return true;
}

// ---- the run ----

bool setUp(Job* job) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  if (job->settings.timeout > 0) config.timeoutSeconds = job->settings.timeout;
  if (!succeeded(zcclCommInitMPI(MPI_COMM_WORLD, &config, &job->comm), nullptr)) return false;
  config.algorithm = zcclAlgoNative;
  if (job->settings.native &&
      !succeeded(zcclCommInitMPI(MPI_COMM_WORLD, &config, &job->native), nullptr)) {
    return false;
  }
  zcclComm_t node = nullptr, cross = nullptr;
  if (!succeeded(zcclCommSplitNode(job->comm, &node), job->comm) ||
      !succeeded(zcclCommSplitCrossNode(job->comm, &cross), job->comm)) {
    return false;
  }
  zcclCommCount(node, &job->nodeSize);
  zcclCommCount(cross, &job->nodes);
  return true;
}

std::vector<size_t> sizes(const Settings& s) {
  std::vector<size_t> result;
  for (size_t bytes = s.minBytes; bytes <= s.maxBytes;) {
    result.push_back(bytes);
    const size_t next = s.stepBytes > 0
                            ? bytes + s.stepBytes
                            : static_cast<size_t>(static_cast<double>(bytes) * s.stepFactor);
    if (next <= bytes) break;
    bytes = next;
  }
  return result;
}

int run(Job& job) {
  const Settings& s = job.settings;
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.hierarchy = s.hierarchy;
  if (quantizable(job.collective)) options.wireFormat = s.wire;
  printPreamble(job);
  Buffers b;
  b.send.resize(s.maxBytes + 64);
  b.recv.resize(s.maxBytes + 64);
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
        row.outOfPlace =
            measure(job, job.comm, &callOptions, shape, row.bytes, type, op, b, false, &row, &ok);
        if (hasInPlace(job.collective)) {
          row.inPlace = measure(job, job.comm, &callOptions, shape, row.bytes, type, op, b, true,
                                nullptr, &ok);
        }
        if (s.native) {
          row.native =
              measure(job, job.native, nullptr, shape, row.bytes, type, op, b, false, nullptr, &ok);
        }
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
  MPI_Init(&argc, &argv);
  Job job;
  job.collective = collective;
  MPI_Comm_rank(MPI_COMM_WORLD, &job.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &job.ranks);
  int status = 2;
  if (!parseArguments(argc, argv, &job.settings)) {
    if (job.rank == 0) printUsage(argv[0]);
  } else if (job.settings.root >= job.ranks) {
    if (job.rank == 0) std::fprintf(stderr, "-r %d: only %d ranks\n", job.settings.root, job.ranks);
  } else if (setUp(&job)) {
    status = run(job);
  }
  if (job.native != nullptr) zcclCommDestroy(job.native);
  if (job.comm != nullptr) zcclCommDestroy(job.comm);
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}

}  // namespace zccl_perf
