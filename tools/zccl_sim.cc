// zccl-sim: zccl's own algorithms and planner on a simulated cluster, in virtual time.
//   zccl-sim --ranks N --collective all_gather|reduce_scatter|all_reduce --bytes SIZE
//            [-e MAX -f FACTOR] [--topology FILE] [--gpus-per-node G] [--node-gbps B]
//            [--machine SPEC]
//            [--wire none|int8|int4] [--algo auto|ring|direct] [--dtype float32|bfloat16]
//            [--json FILE]
//   zccl-sim --ranks N --zero 3|++|both --params P --layers L [--tokens T] [--tflops F]
//            [--compute-ms C] [--recompute] [--prefetch D] [--node-copy gather|shared]
//            [--scale K] [machine options] [--json FILE]
// Every rank is a thread of this process running the unchanged library over the simulated
// transport (src/transport/sim); each message takes the modelled link's latency and
// bandwidth, and each kernel the bytes it touches over the machine's kernel rate.
// Prints an nccl-tests-style table: the simulated time (slowest rank), algorithm and bus
// bandwidth, the cost model's estimate of the same plan beside it, and the bytes each rank
// sends across and within nodes, from zccl's own counters. With --zero, one training step
// of a model of P parameters in L equal layers (bfloat16), layer by layer as ZeRO-3 runs it
// (forward all-gather, forward compute, backward all-gather, backward compute, gradient
// reduce-scatter; no overlap) or as ZeRO++ does (INT8 weights, the backward's all-gather
// inside the node from the secondary copy, INT4 gradients over the 2-hop path; with
// --node-copy shared, as the ZeRO layer runs it in host memory, the backward reads the node's
// copy in place after one node barrier and gathers nothing); compute is
// 2 x params x tokens FLOPs forward and twice that backward at F TFLOP/s, or (--compute-ms) a
// step's compute as measured, a third forward and two thirds backward; with activation
// checkpointing (--recompute) the backward recomputes its module's forward first, so it takes
// three forwards' time (a quarter and three quarters of --compute-ms); and the model state a
// rank holds at its peak (shards, hpZ's copy, the layers in flight). A model too large
// to hold in this machine's memory is simulated with its bytes and every bandwidth divided
// by K (--scale, chosen when absent), kernel rates included, which leaves the bandwidth terms
// as they are; the latencies are not scaled.
#include <getopt.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/sim_comms.h"
#include "harness/command_line.h"
#include "topology/topology.h"
#include "transport/sim/sim_fabric.h"
#include "zccl/zccl.h"
#include "zccl/zccl_introspect.h"

namespace {

struct Settings {
  int ranks = 0;
  std::string collective = "all_gather";
  size_t minBytes = 0, maxBytes = 0;
  double factor = 2;
  zccl::SimMachine machine;
  int wire = zcclWireNone;
  int algorithm = zcclAlgoAuto;
  zcclDataType_t type = zcclFloat32;
  std::string json;
  std::string zero;  // "", "3", "++" or "both"
  double params = 0;
  int layers = 0;
  double tokens = 2048;         // per rank per step
  double tflops = 100;          // per rank, sustained
  double computeSeconds = 0;    // per step, when given: instead of tokens and tflops
  bool recompute = false;       // activation checkpointing: the backward runs the forward again
  int prefetch = 0;             // modules gathered ahead (and gradients left behind): overlap
  bool sharedNodeCopy = false;  // hpZ's copy read in place (host memory) instead of gathered
  double scale = 0;             // 0: chosen
};

struct Row {
  size_t bytes;
  double seconds;    // the slowest rank's virtual time
  double estimated;  // the cost model's, for the plan it chose
  std::string plan;
  double interBytes, intraBytes;  // per rank
};

[[noreturn]] void usage(const char* why) {
  if (why != nullptr) std::fprintf(stderr, "zccl-sim: %s\n", why);
  std::fprintf(stderr,
               "usage: zccl-sim --ranks N --collective all_gather|reduce_scatter|all_reduce "
               "--bytes SIZE\n"
               "                [-e MAX_SIZE -f FACTOR] [--topology FILE] [--gpus-per-node G] "
               "[--node-gbps B]\n"
               "                [--machine gpus-per-node=8,intra-gbps=150,nics=8,nic-gbps=100,"
               "oversubscription=1,\n"
               "                 nodes-per-leaf=0,rail-optimized=0,spines=0,leaves-per-pod=0,"
               "pod-oversubscription=1,\n"
               "                 core-links=0,switch-latency-us=0,intra-latency-us=2,"
               "inter-latency-us=5,kernel-gbps=1000,\n"
               "                 copy-gbps=0,reduce-gbps=0,accumulate-gbps=0,quantize-gbps=0,"
               "dequantize-gbps=0,\n"
               "                 compute-scale=0,host-cores=0,host-ranks=0,stack-gbps=0,"
               "shm-gbps=0,rendezvous-bytes=0]\n"
               "                [--wire none|int8|int4] [--algo auto|ring|direct] "
               "[--dtype float32|bfloat16] [--json FILE]\n"
               "       zccl-sim --ranks N --zero 3|++|both --params P --layers L [--tokens T] "
               "[--tflops F]\n"
               "                [--compute-ms C] [--recompute] [--prefetch D] "
               "[--node-copy gather|shared]\n"
               "                [--scale K] [machine options] [--json FILE]\n");
  std::exit(2);
}

// A node as an hwloc export describes it (topology/): its GPUs, the NVLink rate between them,
// its HCAs (else NICs) as the NICs, each at the inter-node rate discovery estimates.
bool machineFromTopology(const char* path, zccl::SimMachine* machine) {
  zccl::TopologyOptions options;
  options.xmlPath = path;
  zccl::NodeTopology node;
  if (zccl::discoverTopology(options, &node) != zccl::Status::kSuccess) {
    std::fprintf(stderr, "zccl-sim: %s\n", zccl::lastThreadError().c_str());
    return false;
  }
  if (!node.gpus.empty()) machine->gpusPerNode = static_cast<int>(node.gpus.size());
  machine->intraGBps = node.intraNodeGBps;
  const size_t ports = !node.hcas.empty() ? node.hcas.size() : node.nics.size();
  machine->nicsPerNode = static_cast<int>(std::max<size_t>(1, ports));
  machine->nicGbps = node.interNodeGBps * 8;
  return true;
}

// The numeric options: where each goes and its least value.
struct NumberOption {
  double* value;
  double least;
};

bool parseNumber(const char* text, const NumberOption& option) {
  return zccl_harness::parseReal(text, option.least, std::numeric_limits<double>::max(),
                                 option.value);
}

Settings parse(int argc, char** argv) {
  Settings s;
  const option longOptions[] = {{"ranks", required_argument, nullptr, 'n'},
                                {"collective", required_argument, nullptr, 'c'},
                                {"bytes", required_argument, nullptr, 'b'},
                                {"gpus-per-node", required_argument, nullptr, 'g'},
                                {"node-gbps", required_argument, nullptr, 'B'},
                                {"topology", required_argument, nullptr, 't'},
                                {"machine", required_argument, nullptr, 'm'},
                                {"wire", required_argument, nullptr, 'q'},
                                {"algo", required_argument, nullptr, 'a'},
                                {"dtype", required_argument, nullptr, 'd'},
                                {"json", required_argument, nullptr, 'J'},
                                {"zero", required_argument, nullptr, 'z'},
                                {"params", required_argument, nullptr, 'P'},
                                {"layers", required_argument, nullptr, 'L'},
                                {"tokens", required_argument, nullptr, 'T'},
                                {"tflops", required_argument, nullptr, 'F'},
                                {"compute-ms", required_argument, nullptr, 'C'},
                                {"recompute", no_argument, nullptr, 'r'},
                                {"prefetch", required_argument, nullptr, 'p'},
                                {"scale", required_argument, nullptr, 'K'},
                                {"node-copy", required_argument, nullptr, 'N'},
                                {"help", no_argument, nullptr, 'h'},
                                {nullptr, 0, nullptr, 0}};
  double ranks = 0, layers = 0, gpus = s.machine.gpusPerNode, nodeGbps = 0, computeMs = 0;
  double prefetch = 0;
  const std::map<int, NumberOption> numbers = {
      {'n', {&ranks, 2}},       {'f', {&s.factor, 1.0001}}, {'g', {&gpus, 1}},
      {'B', {&nodeGbps, 1e-9}}, {'P', {&s.params, 1}},      {'L', {&layers, 1}},
      {'T', {&s.tokens, 1}},    {'F', {&s.tflops, 1e-9}},   {'K', {&s.scale, 1}},
      {'C', {&computeMs, 0}},   {'p', {&prefetch, 0}}};
  int opt = 0;
  while ((opt = getopt_long(argc, argv, "n:c:b:e:f:g:B:t:m:q:a:d:J:z:P:L:T:F:C:rp:K:N:h",
                            longOptions, nullptr)) != -1) {
    bool ok = true;
    const auto number = numbers.find(opt);
    if (number != numbers.end()) {
      ok = parseNumber(optarg, number->second);
    } else if (opt == 'c') {
      s.collective = optarg;
      ok = s.collective == "all_gather" || s.collective == "reduce_scatter" ||
           s.collective == "all_reduce";
    } else if (opt == 'b' || opt == 'e') {
      ok = zccl_harness::parseSize(optarg, opt == 'b' ? &s.minBytes : &s.maxBytes);
    } else if (opt == 't') {
      ok = machineFromTopology(optarg, &s.machine);
      gpus = s.machine.gpusPerNode;
    } else if (opt == 'm') {
      // What the text does not name stays as given before it (--gpus-per-node included).
      s.machine.gpusPerNode = static_cast<int>(gpus);
      ok = zccl::parseSimMachine(optarg, &s.machine) == zccl::Status::kSuccess;
      gpus = s.machine.gpusPerNode;
    } else if (opt == 'q') {
      ok = zcclWireFormatFromName(optarg, reinterpret_cast<zcclWireFormat_t*>(&s.wire)) ==
           zcclSuccess;
    } else if (opt == 'a') {
      const std::string name = optarg;
      s.algorithm = name == "ring"     ? zcclAlgoRing
                    : name == "direct" ? zcclAlgoDirect
                                       : zcclAlgoAuto;
      ok = s.algorithm != zcclAlgoAuto || name == "auto";
    } else if (opt == 'd') {
      const std::string name = optarg;
      s.type = name == "bfloat16" ? zcclBfloat16 : zcclFloat32;
      ok = name == "bfloat16" || name == "float32";
    } else if (opt == 'J') {
      s.json = optarg;
    } else if (opt == 'r') {
      s.recompute = true;
    } else if (opt == 'N') {
      const std::string copy = optarg;
      s.sharedNodeCopy = copy == "shared";
      ok = s.sharedNodeCopy || copy == "gather";
    } else if (opt == 'z') {
      s.zero = optarg;
      ok = s.zero == "3" || s.zero == "++" || s.zero == "both";
    } else {
      usage(nullptr);
    }
    if (!ok) {
      const std::string why = std::string("bad value '") + optarg + "' for " +
                              zccl_harness::optionName(longOptions, opt);
      usage(why.c_str());
    }
  }
  s.ranks = static_cast<int>(ranks);
  s.layers = static_cast<int>(layers);
  s.computeSeconds = computeMs * 1e-3;
  s.prefetch = static_cast<int>(prefetch);
  s.machine.gpusPerNode = static_cast<int>(gpus);
  if (s.ranks < 2) usage("--ranks is required (at least 2)");
  if (!s.zero.empty() && (s.params <= 0 || s.layers <= 0)) {
    usage("--zero needs --params and --layers");
  }
  if (s.zero.empty() && s.minBytes == 0) usage("--bytes is required");
  if (s.maxBytes < s.minBytes) s.maxBytes = s.minBytes;
  if (s.machine.nicsPerNode > s.machine.gpusPerNode) s.machine.nicsPerNode = s.machine.gpusPerNode;
  if (nodeGbps > 0) s.machine.nicGbps = nodeGbps / s.machine.nicsPerNode;
  return s;
}

// A simulation that failed ends the program, naming why.
void exitUnless(zccl::Status status) {
  if (status == zccl::Status::kSuccess) return;
  std::fprintf(stderr, "zccl-sim: %s\n", zccl::lastThreadError().c_str());
  std::exit(1);
}

size_t typeBytes(zcclDataType_t type) { return type == zcclBfloat16 ? 2 : 4; }

zcclCollective_t collectiveOf(const std::string& name) {
  return name == "all_gather"       ? zcclCollAllGather
         : name == "reduce_scatter" ? zcclCollReduceScatter
                                    : zcclCollAllReduce;
}

// nccl-tests' bus bandwidth factor.
double busFactor(const std::string& name, int n) {
  return name == "all_reduce" ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
}

zcclResult_t runCall(const Settings& s, size_t bytes, zcclComm_t comm, std::vector<char>* send,
                     std::vector<char>* recv) {
  const size_t elements = bytes / typeBytes(s.type);
  const size_t block = elements / static_cast<size_t>(s.ranks);
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.wireFormat = s.wire;
  if (s.collective == "all_gather") {
    return zcclAllGatherEx(send->data(), recv->data(), block, s.type, comm, nullptr, &options);
  }
  if (s.collective == "reduce_scatter") {
    return zcclReduceScatterEx(send->data(), recv->data(), block, s.type, zcclSum, comm, nullptr,
                               &options);
  }
  return zcclAllReduceEx(send->data(), recv->data(), elements, s.type, zcclSum, comm, nullptr,
                         &options);
}

Row simulate(const Settings& s, size_t bytes) {
  auto fabric = std::make_shared<zccl::SimFabric>(s.ranks, s.machine, 600);
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = s.algorithm;
  std::mutex mutex;
  Row row{bytes, 0, -1, "", 0, 0};
  std::atomic<uint64_t> inter{0}, intra{0};
  const zccl::Status status = zccl::runSimulated(fabric, &config, [&](int rank, zcclComm_t comm) {
    const size_t perRank = bytes / static_cast<size_t>(s.ranks);
    std::vector<char> send(s.collective == "all_gather" ? perRank : bytes, 1);
    std::vector<char> recv(s.collective == "reduce_scatter" ? perRank : bytes);
    // Half-precision and float patterns alike: small values, no overflow.
    for (size_t i = 0; i + 1 < send.size(); i += 2) send[i] = 0;
    // One call first, as benchmarks warm up: the timed one finds its buffers and scratch in
    // place. The counters then count the timed call alone.
    zcclResult_t result = runCall(s, bytes, comm, &send, &recv);
    if (result == zcclSuccess) result = zcclCommResetStats(comm);
    const double start = zccl::simulatedSeconds(comm);
    if (result == zcclSuccess) result = runCall(s, bytes, comm, &send, &recv);
    if (result != zcclSuccess) return result;
    const double took = zccl::simulatedSeconds(comm) - start;
    zcclStats stats;
    zcclCommGetStats(comm, &stats);
    inter += stats.bytesSent[zcclLinkInterNode];
    intra += stats.bytesSent[zcclLinkIntraNode];
    std::lock_guard<std::mutex> lock(mutex);
    row.seconds = std::max(row.seconds, took);
    if (rank == 0) {
      zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
      options.wireFormat = s.wire;
      zcclPlanQuery query = ZCCL_PLAN_QUERY_INITIALIZER;
      query.collective = collectiveOf(s.collective);
      query.bytes = bytes;
      query.datatype = s.type;
      query.options = &options;
      zcclPlanInfo plan;
      if (zcclCommGetPlan(comm, &query, &plan) == zcclSuccess) {
        row.plan = std::string(plan.algorithm) + "/" + plan.wire;
        row.estimated = plan.estimatedSeconds;
      }
    }
    return zcclSuccess;
  });
  exitUnless(status);
  row.interBytes = static_cast<double>(inter.load()) / s.ranks;
  row.intraBytes = static_cast<double>(intra.load()) / s.ranks;
  return row;
}

void writeJson(const Settings& s, const std::vector<Row>& rows) {
  FILE* out = std::fopen(s.json.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "zccl-sim: cannot write %s\n", s.json.c_str());
    std::exit(1);
  }
  std::fprintf(out, "{\"ranks\": %d, \"collective\": \"%s\", \"machine\": \"%s\", \"rows\": [",
               s.ranks, s.collective.c_str(), zccl::describeSimMachine(s.machine).c_str());
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(out,
                 "%s\n  {\"bytes\": %zu, \"seconds\": %.9g, \"estimated_seconds\": %.9g, "
                 "\"plan\": \"%s\", \"algbw_GBps\": %.6g, \"busbw_GBps\": %.6g, "
                 "\"inter_node_bytes_per_rank\": %.0f, \"intra_node_bytes_per_rank\": %.0f}",
                 i == 0 ? "" : ",", r.bytes, r.seconds, r.estimated, r.plan.c_str(),
                 r.bytes / r.seconds / 1e9,
                 r.bytes / r.seconds / 1e9 * busFactor(s.collective, s.ranks), r.interBytes,
                 r.intraBytes);
  }
  std::fprintf(out, "\n]}\n");
  std::fclose(out);
}

// One ZeRO step as simulated: each phase's virtual time on the slowest rank of that phase.
struct Step {
  double phases[5] = {0, 0, 0, 0, 0};
  double seconds = 0;            // the slowest rank's whole step
  double crossBytesPerRank = 0;  // scaled back to the model's size
  double peakStateBytes = 0;     // per rank (peakStateBytes)
  int layersInFlight = 0;        // at that peak
};
const char* const kPhases[5] = {"forward all-gather", "forward compute", "backward all-gather",
                                "backward compute", "gradient reduce-scatter"};
enum Phase {
  kForwardGather,
  kForwardCompute,
  kBackwardGather,
  kBackwardCompute,
  kGradientReduceScatter
};

// One rank's step on two streams, as the ZeRO layer runs it: its collectives in the order it
// issues them on the communicator (the rank's clock: each starts once the compute stream has
// reached the point that issues it), its compute on a stream of its own that waits only for
// what it uses. With depth 0 the two take turns: nothing overlaps.
class RankStep {
 public:
  RankStep(zcclComm_t comm, int depth, double (*phases)[5])
      : comm_(comm),
        depth_(static_cast<size_t>(depth)),
        phases_(*phases),
        computed_(zccl::simulatedSeconds(comm)) {}

  size_t depth() const { return depth_; }
  bool ok() const { return result_ == zcclSuccess; }
  zcclResult_t result() const { return result_; }

  // Runs a collective issued where the compute stream is now; returns when it completed.
  template <typename Run>
  double collective(Phase phase, Run&& run) {
    if (!ok()) return 0;
    waitClockFor(computed_);
    const double issued = zccl::simulatedSeconds(comm_);
    result_ = run();
    const double done = zccl::simulatedSeconds(comm_);
    phases_[phase] += done - issued;
    return done;
  }
  // Compute that needs what completed at `ready` (a CPU rank's shares its CPU with the
  // collectives: stretched by their kernels and messages).
  void compute(Phase phase, double ready, double seconds) {
    const double start = std::max(computed_, ready);
    computed_ = zccl::simulateComputeBeside(comm_, start, seconds);
    phases_[phase] += computed_ - start;
  }
  // The compute stream waits for a collective that completed at `done`.
  void waitFor(double done) { computed_ = std::max(computed_, done); }
  // The step ends when both streams have.
  void finish() { waitClockFor(computed_); }

 private:
  void waitClockFor(double time) {
    const double now = zccl::simulatedSeconds(comm_);
    if (time > now) zccl::simulateCompute(comm_, time - now);
  }

  zcclComm_t comm_;
  const size_t depth_;
  double (&phases_)[5];
  double computed_;  // when the compute stream is free
  zcclResult_t result_ = zcclSuccess;
};

// The memory this host has free (MemAvailable), bytes; 0 where it cannot tell.
double availableMemory() {
  FILE* meminfo = std::fopen("/proc/meminfo", "r");
  if (meminfo == nullptr) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, meminfo) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
  }
  std::fclose(meminfo);
  return kib * 1024;
}

// A run whose buffers (every rank's are real) would need more than this host has available is
// refused before it starts, naming what it needs, rather than ending in the kernel's
// out-of-memory kill part way.
void refuseWhatCannotFit(double needed, const std::string& run, const char* remedy) {
  const double available = availableMemory();
  if (available <= 0 || needed <= 0.9 * available) return;
  std::fprintf(stderr,
               "zccl-sim: %s needs about %.1f GiB (every rank's buffers are real), and this host "
               "has %.1f GiB available: %s\n",
               run.c_str(), needed / (1 << 30), available / (1 << 30), remedy);
  std::exit(1);
}

// The largest call needs about ranks x bytes times what its collective holds per byte
// (measured at 256 ranks x 16 MiB, float32: an all-gather's output 1.0x, a reduce-scatter's
// input and scratch 2.1x, an all-reduce's input, output and scratch 3.1x; quantized wires
// less).
void refuseCollectiveThatCannotFit(const Settings& s) {
  const double perByte = s.collective == "all_gather"       ? 1.0
                         : s.collective == "reduce_scatter" ? 2.1
                                                            : 3.1;
  char run[160];
  std::snprintf(run, sizeof run, "--ranks %d with %s of %zu bytes", s.ranks, s.collective.c_str(),
                s.maxBytes);
  refuseWhatCannotFit(perByte * s.ranks * static_cast<double>(s.maxBytes), run,
                      "give fewer ranks or fewer bytes");
}

// A ZeRO step holds about 4.7 of its (scaled) layers' bfloat16 bytes a rank: the gathered
// weights, the full gradients, hpZ's copy and the collectives' scratch (measured: 15.2 GB at
// 384 ranks with 8.4 MB layers, prefetch 1).
void refuseZeroStepThatCannotFit(const Settings& s, double scale) {
  char run[160];
  std::snprintf(run, sizeof run,
                "--ranks %d with a ZeRO step of %.3g parameters in %d layers "
                "(bytes / %.0f)",
                s.ranks, s.params, s.layers, scale);
  refuseWhatCannotFit(4.7 * s.ranks * 2 * s.params / s.layers / scale, run,
                      "give a larger --scale or fewer ranks");
}

// The scale that keeps a layer's gathered weights near 8 MiB per rank.
double chosenScale(const Settings& s) {
  if (s.scale >= 1) return s.scale;
  const double layerBytes = 2 * s.params / s.layers;
  return std::max(1.0, std::floor(layerBytes / (8.0 * 1024 * 1024)));
}

// Layers whose gathered weights or full gradients (bfloat16) the ZeRO layer holds at once at
// its peak, prefetching `depth` of `layers` equal modules ahead: in the forward, a module's
// weights and the `depth` gathered after it; in the backward, the full gradients its module
// writes and those of the (up to depth + 1, none without overlap) modules whose reduce-scatters
// still run behind it, and unless it reads hpZ's copy in place, the gathered weights of the
// module and the `depth` before it. As ZeroOptimizer::peakModelStateBytes counts them
// (zero_demo --stage 3 --layers 6, its equal inner modules): 2, 5 and 7 at depth 0, 1 and 2
// gathering; 1, 3 and 4 reading the node's copy in place.
int layersInFlight(int layers, int depth, bool backwardGathers) {
  int most = 0;
  for (int i = 0; i < layers; ++i) {
    const int forward = std::min(depth + 1, layers - i);
    const int weights = backwardGathers ? std::min(depth + 1, i + 1) : 0;
    const int behind = depth == 0 ? 0 : std::min(depth + 1, layers - 1 - i);
    most = std::max({most, forward, weights + 1 + behind});
  }
  return most;
}

bool backwardGathers(const Settings& s, bool plus) { return !plus || !s.sharedNodeCopy; }

// A rank's model state at the step's peak, bytes, as the ZeRO layer counts it (mixed precision
// with Adam: float32 master weights and two moments, bfloat16 weights and gradients, each a
// 1/ranks shard: 16P / ranks), with hpZ's secondary copy of a node's shard (2P / ranks per
// node) for ZeRO++, and the layers in flight. Activations are the model's, not counted.
double peakStateBytes(const Settings& s, int inFlight, bool plus) {
  const double shards = 16 * s.params / s.ranks;
  const double secondary = plus ? 2 * s.params / s.machine.gpusPerNode : 0;
  return shards + secondary + inFlight * 2 * s.params / s.layers;
}

Step simulateStep(const Settings& s, bool plus, double scale) {
  const zccl::SimMachine machine = s.machine.slowedBy(scale);
  const size_t perRank = std::max<size_t>(
      1, static_cast<size_t>(s.params / s.layers / scale) / static_cast<size_t>(s.ranks));
  const size_t layer = perRank * static_cast<size_t>(s.ranks);
  // A backward is two forwards' work, three with the forward recomputed.
  const double backwardForwards = s.recompute ? 3 : 2;
  const double forwardSeconds = s.computeSeconds > 0
                                    ? s.computeSeconds / (1 + backwardForwards) / s.layers
                                    : 2 * s.params / s.layers * s.tokens / (s.tflops * 1e12);
  auto fabric = std::make_shared<zccl::SimFabric>(s.ranks, machine, 600);
  std::mutex mutex;
  Step step;
  std::atomic<uint64_t> cross{0};
  const zccl::Status status = zccl::runSimulated(fabric, nullptr, [&](int, zcclComm_t comm) {
    zcclComm_t node = nullptr;
    int local = 1;
    if (plus) {
      if (zcclCommSplitNode(comm, &node) != zcclSuccess) return zcclInvalidUsage;
      zcclCommCount(node, &local);
    }
    const uint16_t one = 0x3f80;  // bfloat16 1.0
    std::vector<uint16_t> shard(perRank, one), full(layer, one), grads(layer, one);
    std::vector<uint16_t> gradShard(perRank), secondary(layer / static_cast<size_t>(local), one);
    zcclCollOptions weights = ZCCL_COLL_OPTIONS_INITIALIZER;
    zcclCollOptions gradients = ZCCL_COLL_OPTIONS_INITIALIZER;
    weights.wireFormat = plus ? zcclWireInt8 : zcclWireNone;
    gradients.wireFormat = plus ? zcclWireInt4 : zcclWireNone;
    const double start = zccl::simulatedSeconds(comm);
    double mine[5] = {0, 0, 0, 0, 0};
    RankStep rank(comm, s.prefetch, &mine);
    const size_t n = static_cast<size_t>(s.layers);
    // Forward: module i's weights gathered `prefetch` modules ahead of its compute.
    std::vector<double> gathered(n);
    for (size_t i = 0, issued = 0; i < n; ++i) {
      for (; issued < n && issued <= i + rank.depth(); ++issued) {
        gathered[issued] = rank.collective(kForwardGather, [&] {
          return zcclAllGatherEx(shard.data(), full.data(), perRank, zcclBfloat16, comm, nullptr,
                                 &weights);
        });
      }
      rank.compute(kForwardCompute, gathered[i], forwardSeconds);
    }
    // Backward, from the last module: gathers as ahead, each module's gradient reduce-scatter
    // behind its compute, at most `prefetch` of them outstanding. hpZ's copy read in place:
    // one node barrier first (every rank's part stored), the weights then ready.
    std::vector<double> reduced(n);
    const bool gathers = backwardGathers(s, plus);
    if (!gathers) {
      int32_t token = 0;
      const double stored = rank.collective(kBackwardGather, [&] {
        return zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, node, nullptr);
      });
      rank.waitFor(stored);
      std::fill(gathered.begin(), gathered.end(), stored);
    }
    for (size_t i = n, next = gathers ? n : 0; i-- > 0;) {
      for (; next > 0 && next - 1 + rank.depth() >= i; --next) {
        gathered[next - 1] = rank.collective(kBackwardGather, [&] {
          return plus ? zcclAllGather(secondary.data(), full.data(), secondary.size(), zcclBfloat16,
                                      node, nullptr)
                      : zcclAllGather(shard.data(), full.data(), perRank, zcclBfloat16, comm,
                                      nullptr);
        });
      }
      rank.compute(kBackwardCompute, gathered[i], backwardForwards * forwardSeconds);
      if (i + rank.depth() + 1 < n) rank.waitFor(reduced[i + rank.depth() + 1]);
      reduced[i] = rank.collective(kGradientReduceScatter, [&] {
        return zcclReduceScatterEx(grads.data(), gradShard.data(), perRank, zcclBfloat16, zcclAvg,
                                   comm, nullptr, &gradients);
      });
      if (rank.depth() == 0) rank.waitFor(reduced[i]);
    }
    if (!rank.ok()) return rank.result();
    rank.finish();
    const double took = zccl::simulatedSeconds(comm) - start;
    zcclStats stats;
    zcclCommGetStats(comm, &stats);
    cross += stats.bytesSent[zcclLinkInterNode];
    std::lock_guard<std::mutex> lock(mutex);
    step.seconds = std::max(step.seconds, took);
    for (int p = 0; p < 5; ++p) step.phases[p] = std::max(step.phases[p], mine[p]);
    return zcclSuccess;
  });
  exitUnless(status);
  step.crossBytesPerRank = static_cast<double>(cross.load()) / s.ranks * scale;
  step.layersInFlight = layersInFlight(s.layers, s.prefetch, backwardGathers(s, plus));
  step.peakStateBytes = peakStateBytes(s, step.layersInFlight, plus);
  return step;
}

void printStep(const Settings& s, const char* name, const Step& step) {
  const double tokensPerSecond = s.tokens * s.ranks / step.seconds;
  std::printf("%s\n", name);
  for (int p = 0; p < 5; ++p) {
    std::printf("  %-26s %12.3f ms (slowest rank)\n", kPhases[p], step.phases[p] * 1e3);
  }
  std::printf("  %-26s %12.3f ms\n", "step", step.seconds * 1e3);
  std::printf("  %-26s %12.0f tokens/s, %.1f TFLOP/s per rank\n", "throughput", tokensPerSecond,
              6 * s.params * s.tokens / step.seconds / 1e12);
  std::printf("  %-26s %12.4g GB per rank per step\n", "cross-node bytes",
              step.crossBytesPerRank / 1e9);
  std::printf(
      "  %-26s %12.4g GB per rank at its peak (layers in flight: %d; activations not counted)\n",
      "model state", step.peakStateBytes / 1e9, step.layersInFlight);
}

int simulateZero(const Settings& s) {
  const bool plusOk = s.ranks % s.machine.gpusPerNode == 0;
  if (s.zero != "3" && !plusOk) {
    std::fprintf(stderr,
                 "zccl-sim: ZeRO++'s hpZ needs full nodes: --ranks %d is not a multiple "
                 "of %d GPUs per node\n",
                 s.ranks, s.machine.gpusPerNode);
    return 2;
  }
  const double scale = chosenScale(s);
  refuseZeroStepThatCannotFit(s, scale);
  char compute[96];
  if (s.computeSeconds > 0) {
    std::snprintf(compute, sizeof(compute), "compute %.2f ms a step", s.computeSeconds * 1e3);
  } else {
    std::snprintf(compute, sizeof(compute), "%.0f tokens per rank, %.0f TFLOP/s per rank", s.tokens,
                  s.tflops);
  }
  const std::string backward = s.recompute ? ", forward recomputed in the backward" : "";
  const std::string overlap =
      s.prefetch > 0 ? "prefetch " + std::to_string(s.prefetch) : std::string("no overlap");
  const char* nodeCopy = s.sharedNodeCopy ? "read in place" : "gathered";
  std::printf(
      "# zccl-sim: ZeRO step of %.3g parameters in %d layers, %s%s, %s, hpZ's node copy %s; "
      "%d ranks (%d nodes), %s; bytes and bandwidths / %.0f\n",
      s.params, s.layers, compute, backward.c_str(), overlap.c_str(), nodeCopy, s.ranks,
      (s.ranks + s.machine.gpusPerNode - 1) / s.machine.gpusPerNode,
      zccl::describeSimMachine(s.machine).c_str(), scale);
  std::vector<std::pair<std::string, Step>> steps;
  if (s.zero != "++") steps.emplace_back("ZeRO-3", simulateStep(s, false, scale));
  if (s.zero != "3") steps.emplace_back("ZeRO++", simulateStep(s, true, scale));
  for (const auto& [name, step] : steps) printStep(s, name.c_str(), step);
  if (steps.size() == 2) {
    std::printf("ZeRO++ / ZeRO-3 throughput: %.2f; cross-node bytes ZeRO-3 / ZeRO++: %.2f\n",
                steps[0].second.seconds / steps[1].second.seconds,
                steps[0].second.crossBytesPerRank / steps[1].second.crossBytesPerRank);
  }
  if (!s.json.empty()) {
    FILE* out = std::fopen(s.json.c_str(), "w");
    if (out == nullptr) return 1;
    std::fprintf(out,
                 "{\"ranks\": %d, \"params\": %.6g, \"layers\": %d, \"scale\": %.6g, "
                 "\"prefetch\": %d, \"recompute\": %s, \"node_copy\": \"%s\", \"machine\": \"%s\", "
                 "\"steps\": {",
                 s.ranks, s.params, s.layers, scale, s.prefetch, s.recompute ? "true" : "false",
                 s.sharedNodeCopy ? "shared" : "gather",
                 zccl::describeSimMachine(s.machine).c_str());
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& st = steps[i].second;
      std::fprintf(out,
                   "%s\"%s\": {\"seconds\": %.9g, \"cross_node_bytes_per_rank\": %.6g, "
                   "\"tokens_per_second\": %.6g, \"peak_state_bytes_per_rank\": %.9g, "
                   "\"layers_in_flight\": %d",
                   i == 0 ? "" : ", ", steps[i].first.c_str(), st.seconds, st.crossBytesPerRank,
                   s.tokens * s.ranks / st.seconds, st.peakStateBytes, st.layersInFlight);
      for (int p = 0; p < 5; ++p) std::fprintf(out, ", \"%s\": %.9g", kPhases[p], st.phases[p]);
      std::fprintf(out, "}");
    }
    std::fprintf(out, "}}\n");
    std::fclose(out);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Settings s = parse(argc, argv);
  if (!s.zero.empty()) return simulateZero(s);
  refuseCollectiveThatCannotFit(s);
  std::printf("# zccl-sim: %d ranks (%d nodes), %s, %s\n", s.ranks,
              (s.ranks + s.machine.gpusPerNode - 1) / s.machine.gpusPerNode, s.collective.c_str(),
              zccl::describeSimMachine(s.machine).c_str());
  std::printf("# %12s %12s %8s %14s %10s %10s %14s %14s %14s  %s\n", "size", "count", "type",
              "time(us)", "algbw", "busbw", "model(us)", "inter B/rank", "intra B/rank", "plan");
  std::vector<Row> rows;
  for (size_t bytes = s.minBytes; bytes <= s.maxBytes;
       bytes = std::max(bytes + 1, static_cast<size_t>(bytes * s.factor))) {
    const Row r = simulate(s, bytes);
    rows.push_back(r);
    const double algbw = r.bytes / r.seconds / 1e9;
    std::printf("  %12zu %12zu %8s %14.2f %10.2f %10.2f %14.2f %14.0f %14.0f  %s\n", r.bytes,
                r.bytes / typeBytes(s.type), s.type == zcclBfloat16 ? "bfloat16" : "float",
                r.seconds * 1e6, algbw, algbw * busFactor(s.collective, s.ranks), r.estimated * 1e6,
                r.interBytes, r.intraBytes, r.plan.c_str());
  }
  if (!s.json.empty()) writeJson(s, rows);
  return 0;
}
