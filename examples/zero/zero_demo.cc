// Trains the demo models with the ZeRO optimizer and reports, per configuration, the traffic
// per step measured by zccl's counters, the peak model-state bytes measured from the
// allocations, and the time per step; by default ZeRO-3 against ZeRO++, "ZeRO++ 4-bit"
// (INT4 weight differences, hpZ, INT4 gradients with error feedback) and "ZeRO++ INT2-diff"
// (the same with INT2 weight differences) on both models:
//   ZCCL_RANKS_PER_NODE=2 mpiexec -n 4 zero_demo
//   zcclrun -n 4 --ranks-per-node 2 zero_demo --model mlp --stage 2 --qgz --steps 300
// --log FILE writes every step's loss and wall-clock time as CSV, for plots. --device cuda
// keeps the optimizer's state in GPU memory (each rank on the GPU of its index on its node):
// the collectives take zccl's device path; the models still compute on the CPU. The default,
// auto, does so where a GPU is visible.
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "harness/command_line.h"
#include "harness/world.h"
#include "zccl/zccl_introspect.h"
#include "zero/modules.h"

namespace {

using zccl::zero::Batch;
using zccl::zero::FeedbackPrecision;
using zccl::zero::Model;
using zccl::zero::Precision;
using zccl::zero::StateMemory;
using zccl::zero::StepStats;
using zccl::zero::ZeroOptimizer;
using zccl::zero::ZeroOptions;
using zccl_harness::World;

struct Settings {
  std::vector<std::string> models{"mlp", "transformer"};
  int stage = -1;  // -1: ZeRO-3 against ZeRO++
  bool qwz = false, hpz = false, qgz = false;
  bool differences = false, feedback = false, smoothing = false, smoothDifferences = false;
  bool hpzGather = false;  // hpZ's backward gathers the node's copies instead of sharing them
  int resyncEvery = 0;
  int differenceBits = ZeroOptions{}.weightDifferenceBits;
  int steps = 400;
  int batch = 64;  // global, per step
  int hidden = 256;
  int layers = 2;
  int modulus = 23;
  float lr = 0;  // 0: the model's default
  uint64_t seed = 1;
  int printEvery = 50;
  float labelNoise = 0.2f;
  std::string precision = "bf16";
  std::string feedbackPrecision = "fp32";  // of error feedback's residuals: fp32, bf16 or int8
  std::string log;                         // CSV of every step, written by rank 0
  std::string device = "auto";             // where the optimizer's state lives: host, cuda, or auto
  int prefetch = ZeroOptions{}.prefetchDepth;
};

struct Configuration {
  std::string name;
  std::string label;  // in the summary lines
  ZeroOptions options;
};

struct Result {
  std::string model, configuration, label;
  double firstLoss = 0, finalLoss = 0;
  double interBytes = 0, intraBytes = 0;  // per step, all ranks together
  double peakBytes = 0;                   // the largest rank's
  double compressionBytes = 0;            // of it, references and residuals
  double seconds = 0;                     // per step, the slowest rank's mean
  double computeSeconds = 0;              // of it, outside waits for collectives
  double communicationSeconds = 0;        // the step's collectives alone
  size_t params = 0;

  // The step against the longer of its compute and its communication: 1 when one hides the
  // other entirely, 2 when they follow each other.
  double overlapEfficiency() const {
    return seconds / std::max(computeSeconds, communicationSeconds);
  }
};

int rank = 0, ranks = 1;
const World* world = nullptr;

[[noreturn]] void die(const char* what, zcclComm_t comm) {
  std::fprintf(stderr, "rank %d: %s: %s\n", rank, what, zcclGetLastError(comm));
  std::exit(1);
}

double sum(double value) { return world->combine(value, World::Combine::kSum); }
double maximum(double value) { return world->combine(value, World::Combine::kMax); }
double minimum(double value) { return world->combine(value, World::Combine::kMin); }

std::unique_ptr<Model> makeModel(const Settings& s, const std::string& name) {
  if (name == "mlp") return zccl::zero::makeMlp(s.modulus, s.hidden, s.layers);
  return zccl::zero::makeTransformer(s.modulus, s.hidden / 4, 4, s.hidden / 2, s.layers);
}

// The step's collectives alone: the median of five timings, the slowest rank's.
double communicationAlone(zcclComm_t comm, ZeroOptimizer* zero) {
  std::vector<double> times;
  for (int i = 0; i < 5; ++i) {
    world->barrier();
    double seconds = 0;
    if (zero->timeCommunication(&seconds) != zcclSuccess) die("timing the collectives", comm);
    times.push_back(maximum(seconds));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

Result train(zcclComm_t comm, const Settings& s, const std::string& modelName,
             const Configuration& c, FILE* log) {
  auto model = makeModel(s, modelName);
  std::unique_ptr<ZeroOptimizer> zero;
  if (ZeroOptimizer::create(comm, model.get(), c.options, &zero) != zcclSuccess) {
    die("creating the optimizer", comm);
  }
  world->barrier();
  const auto start = std::chrono::steady_clock::now();
  const bool sequence = modelName == "transformer";
  const int local = s.batch / ranks;
  Result r{modelName, c.name, c.label};
  r.params = zero->numParams();
  double window = 0;
  int windowSteps = 0;
  for (int step = 0; step < s.steps; ++step) {
    const Batch batch = zccl::zero::modularAdditionBatch(s.modulus, sequence, s.seed, step,
                                                         rank * local, local, s.labelNoise);
    StepStats stats;
    if (zero->step(batch, &stats) != zcclSuccess) die("a training step", comm);
    const double values[3] = {sum(stats.loss / ranks),
                              sum(static_cast<double>(stats.interNodeBytes)),
                              sum(static_cast<double>(stats.intraNodeBytes))};
    const double seconds = maximum(stats.seconds);
    const double compute = maximum(stats.computeSeconds);
    if (log != nullptr) {
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(log, "%s,%s,%d,%.6f,%.6f,%.0f\n", modelName.c_str(), c.name.c_str(), step + 1,
                   wall, values[0], values[1]);
    }
    if (step == 0) r.firstLoss = values[0];
    r.interBytes = values[1];
    r.intraBytes = values[2];
    r.seconds += seconds / s.steps;
    r.computeSeconds += compute / s.steps;
    window += values[0];
    ++windowSteps;
    if ((step + 1) % s.printEvery == 0 || step + 1 == s.steps) {
      if (rank == 0) {
        std::printf("  %-11s %-22s step %4d  loss %.4f\n", modelName.c_str(), c.name.c_str(),
                    step + 1, window / windowSteps);
      }
      r.finalLoss = window / windowSteps;
      window = 0;
      windowSteps = 0;
    }
  }
  r.peakBytes = maximum(static_cast<double>(zero->peakModelStateBytes()));
  r.compressionBytes = maximum(static_cast<double>(zero->compressionStateBytes()));
  r.communicationSeconds = communicationAlone(comm, zero.get());
  return r;
}

Precision parsePrecision(const std::string& text) {
  if (text == "fp32") return Precision::kFloat32;
  if (text == "fp16") return Precision::kFloat16;
  return Precision::kBfloat16;
}

std::vector<Configuration> configurations(const Settings& s, StateMemory* memory) {
  ZeroOptions base;
  base.memory = memory;
  base.prefetchDepth = s.prefetch;
  base.precision = parsePrecision(s.precision);
  base.seed = s.seed;
  base.sharedNodeCopy = !s.hpzGather;
  base.feedbackPrecision = s.feedbackPrecision == "fp32"   ? FeedbackPrecision::kFloat32
                           : s.feedbackPrecision == "bf16" ? FeedbackPrecision::kBfloat16
                                                           : FeedbackPrecision::kInt8;
  // Error feedback, as the configurations' names say it.
  const std::string feedback = s.feedbackPrecision == "fp32" ? "EF" : "EF/" + s.feedbackPrecision;
  if (s.stage >= 0) {
    base.stage = s.stage;
    base.quantizedWeights = s.qwz;
    base.hierarchicalPartition = s.hpz;
    base.quantizedGradients = s.qgz;
    base.weightDifferences = s.differences;
    base.errorFeedback = s.feedback;
    base.smoothing = s.smoothing;
    base.smoothWeightDifferences = s.smoothDifferences;
    base.resyncEvery = s.resyncEvery;
    base.weightDifferenceBits = s.differenceBits;
    std::string name = "ZeRO-" + std::to_string(s.stage);
    if (s.qwz) name += " +qwZ";
    if (s.differences) name += " +qwZ-diff" + std::to_string(s.differenceBits);
    if (s.hpz) name += s.hpzGather ? " +hpZ(gather)" : " +hpZ";
    if (s.qgz) name += s.feedback ? " +qgZ-" + feedback : " +qgZ";
    if (s.smoothing) name += " +smooth";
    if (s.smoothDifferences && !s.smoothing) name += " +smooth-diff";
    return {{name, name, base}};
  }
  ZeroOptions plus = base;
  plus.quantizedWeights = plus.hierarchicalPartition = plus.quantizedGradients = true;
  ZeroOptions fourBit = plus;
  fourBit.weightDifferences = fourBit.errorFeedback = true;
  fourBit.smoothing = s.smoothing;
  fourBit.resyncEvery = s.resyncEvery;
  ZeroOptions twoBit = fourBit;
  twoBit.weightDifferenceBits = 2;
  twoBit.smoothWeightDifferences = true;  // two bits need outliers spread (beyond-zeropp.md)
  return {{"ZeRO-3", "ZeRO-3", base},
          {"ZeRO++ (qwZ+hpZ+qgZ)", "ZeRO++", plus},
          {"ZeRO++ 4-bit (diff+" + feedback + ")", "ZeRO++ 4-bit", fourBit},
          {"ZeRO++ INT2-diff (+" + feedback + ")", "ZeRO++ INT2-diff", twoBit}};
}

void printTable(const std::vector<Result>& results) {
  if (rank != 0) return;
  std::printf("\n%-11s %-22s %9s %10s %10s %14s %14s %12s %10s\n", "model", "configuration",
              "params", "first loss", "final loss", "inter-node B", "intra-node B", "peak state B",
              "ms/step");
  std::printf("%-11s %-22s %9s %10s %10s %14s %14s %12s %10s\n", "", "", "", "", "", "per step",
              "per step", "per rank", "");
  for (const Result& r : results) {
    std::printf("%-11s %-22s %9zu %10.4f %10.4f %14.0f %14.0f %12.0f %10.2f\n", r.model.c_str(),
                r.configuration.c_str(), r.params, r.firstLoss, r.finalLoss, r.interBytes,
                r.intraBytes, r.peakBytes, r.seconds * 1e3);
  }
  for (const Result& r : results) {
    if (r.compressionBytes == 0) continue;
    std::printf(
        "%s: %s peak state per rank %.0f B, of which %.0f B references of weight "
        "differences and error-feedback residuals\n",
        r.model.c_str(), r.configuration.c_str(), r.peakBytes, r.compressionBytes);
  }
  std::printf("\n%-11s %-22s %12s %14s %10s %10s\n", "model", "configuration", "compute ms",
              "collectives ms", "step ms", "overlap");
  std::printf("%-11s %-22s %12s %14s %10s %10s\n", "", "", "(no waits)", "alone", "", "step/max");
  for (const Result& r : results) {
    std::printf("%-11s %-22s %12.2f %14.2f %10.2f %10.2f\n", r.model.c_str(),
                r.configuration.c_str(), r.computeSeconds * 1e3, r.communicationSeconds * 1e3,
                r.seconds * 1e3, r.overlapEfficiency());
  }
  std::printf("\n");
  for (const Result& r : results) {
    std::printf(
        "%s: %s overlap efficiency %.2f (step %.2f ms, compute %.2f ms, collectives "
        "alone %.2f ms)\n",
        r.model.c_str(), r.configuration.c_str(), r.overlapEfficiency(), r.seconds * 1e3,
        r.computeSeconds * 1e3, r.communicationSeconds * 1e3);
  }
}

// Each configuration against the model's first (ZeRO-3).
void printSummary(const std::vector<Result>& results) {
  const Result* base = nullptr;
  for (const Result& r : results) {
    if (base == nullptr || base->model != r.model) {
      base = &r;
      continue;
    }
    std::printf("%s: cross-node bytes per step, %s / %s = %.2f; final loss %+.2f%%\n",
                r.model.c_str(), base->label.c_str(), r.label.c_str(),
                base->interBytes / r.interBytes, 100 * (r.finalLoss / base->finalLoss - 1));
    std::printf("%s: step time, %s / %s = %.2f\n", r.model.c_str(), base->label.c_str(),
                r.label.c_str(), base->seconds / r.seconds);
  }
}

void printUsage() {
  std::fprintf(stderr,
               "usage: mpiexec -n N (or zcclrun -n N) zero_demo [--model mlp|transformer|both]\n"
               "       [--stage 0..3]\n"
               "       [--qwz] [--hpz] [--qgz] [--steps N] [--batch GLOBAL] [--hidden H]\n"
               "       [--layers L] [--modulus P] [--lr RATE] [--seed S] [--precision "
               "bf16|fp16|fp32]\n"
               "       [--label-noise FRACTION] [--print-every N] [--log FILE.csv]\n"
               "       [--device auto|host|cuda]   (auto: cuda where a GPU is visible)\n"
               "       [--prefetch DEPTH]   (modules gathered ahead and gradients reduced behind;\n"
               "                             0: no overlap)\n"
               "       [--qwz-diff] [--diff-bits 8|4|2] [--qgz-ef] [--smoothing] [--smooth-diff]\n"
               "       [--resync STEPS] [--ef-precision fp32|bf16|int8]   (beyond ZeRO++: weight\n"
               "        differences, INT4 by default; error feedback, its residuals in float32,\n"
               "        bfloat16 or int8; Hadamard smoothing of gradients and differences, or of\n"
               "        the differences alone)\n"
               "       [--hpz-gather]   (hpZ's backward all-gathers the node's copies of the\n"
               "        weights, as on a GPU, instead of reading them where the node's ranks\n"
               "        share them)\n"
               "Without --stage: ZeRO-3, ZeRO++ (qwZ + hpZ + qgZ), ZeRO++ 4-bit (INT4 weight\n"
               "differences + hpZ + INT4 gradients with error feedback) and ZeRO++ INT2-diff (the\n"
               "same with INT2 weight differences) side by side.\n");
}

// Says what zero_demo refused, on rank 0 alone.
bool refuse(const std::string& flag, const char* text, const std::string& expected) {
  if (rank == 0) zccl_harness::refuseArgument("zero_demo", flag, text, expected);
  return false;
}

bool parseChoice(const std::string& flag, const char* text,
                 std::initializer_list<const char*> names, std::string* value) {
  std::string listed;
  for (const char* name : names) {
    if (std::strcmp(text, name) == 0) {
      *value = text;
      return true;
    }
    listed += listed.empty() ? name : std::string(", ") + name;
  }
  return refuse(flag, text, "one of " + listed);
}

bool parseWhole(const std::string& flag, const char* text, int least, int most, int* value) {
  return zccl_harness::parseInteger(text, least, most, value) ||
         refuse(flag, text, zccl_harness::wholeNumberFrom(least, most));
}

bool parseNumber(const std::string& flag, const char* text, double least, double most,
                 float* value) {
  double number = 0;
  if (!zccl_harness::parseReal(text, least, most, &number)) {
    return refuse(flag, text, zccl_harness::numberFrom(least, most));
  }
  *value = static_cast<float>(number);
  return true;
}

// The settings' relations to one another and to the job.
bool checkSettings(const Settings& s) {
  const std::string batch = std::to_string(s.batch);
  if (s.batch % ranks != 0) {
    return refuse(
        "--batch", batch.c_str(),
        "not a multiple of the " + std::to_string(ranks) + " ranks (each takes an equal share)");
  }
  const bool transformer =
      std::find(s.models.begin(), s.models.end(), "transformer") != s.models.end();
  if (transformer && s.hidden % 16 != 0) {
    return refuse("--hidden", std::to_string(s.hidden).c_str(),
                  "the transformer needs a multiple of 16 (4 heads of width hidden / 4)");
  }
  return true;
}

bool parse(int argc, char** argv, Settings* s) {
  static const option options[] = {{"model", required_argument, nullptr, 'm'},
                                   {"stage", required_argument, nullptr, 's'},
                                   {"qwz", no_argument, nullptr, 'w'},
                                   {"hpz", no_argument, nullptr, 'p'},
                                   {"qgz", no_argument, nullptr, 'g'},
                                   {"steps", required_argument, nullptr, 'n'},
                                   {"batch", required_argument, nullptr, 'b'},
                                   {"hidden", required_argument, nullptr, 'h'},
                                   {"layers", required_argument, nullptr, 'l'},
                                   {"modulus", required_argument, nullptr, 'M'},
                                   {"lr", required_argument, nullptr, 'r'},
                                   {"seed", required_argument, nullptr, 'S'},
                                   {"precision", required_argument, nullptr, 'P'},
                                   {"print-every", required_argument, nullptr, 'e'},
                                   {"label-noise", required_argument, nullptr, 'N'},
                                   {"log", required_argument, nullptr, 'L'},
                                   {"device", required_argument, nullptr, 'D'},
                                   {"prefetch", required_argument, nullptr, 'F'},
                                   {"qwz-diff", no_argument, nullptr, 'd'},
                                   {"diff-bits", required_argument, nullptr, 'B'},
                                   {"qgz-ef", no_argument, nullptr, 'E'},
                                   {"smoothing", no_argument, nullptr, 'H'},
                                   {"smooth-diff", no_argument, nullptr, 'V'},
                                   {"hpz-gather", no_argument, nullptr, 'G'},
                                   {"resync", required_argument, nullptr, 'R'},
                                   {"ef-precision", required_argument, nullptr, 'C'},
                                   {nullptr, 0, nullptr, 0}};
  opterr = rank == 0 ? 1 : 0;  // getopt's own complaints, once
  constexpr int kMost = std::numeric_limits<int>::max();
  constexpr uint64_t kMostSeed = std::numeric_limits<uint64_t>::max();
  std::string model;
  int c = 0;
  while ((c = getopt_long(argc, argv, "", options, nullptr)) != -1) {
    const std::string flag = zccl_harness::optionName(options, c);
    bool ok = true;
    switch (c) {
      case 'm':
        ok = parseChoice(flag, optarg, {"mlp", "transformer", "both"}, &model);
        if (ok) {
          s->models = model == "both" ? std::vector<std::string>{"mlp", "transformer"}
                                      : std::vector<std::string>{model};
        }
        break;
      case 's':
        ok = parseWhole(flag, optarg, 0, 3, &s->stage);
        break;
      case 'w':
        s->qwz = true;
        break;
      case 'p':
        s->hpz = true;
        break;
      case 'g':
        s->qgz = true;
        break;
      case 'n':
        ok = parseWhole(flag, optarg, 1, kMost, &s->steps);
        break;
      case 'b':
        ok = parseWhole(flag, optarg, ranks, kMost, &s->batch);
        break;
      case 'h':
        ok = parseWhole(flag, optarg, 16, kMost, &s->hidden);
        break;
      case 'l':
        ok = parseWhole(flag, optarg, 1, kMost, &s->layers);
        break;
      case 'M':
        ok = parseWhole(flag, optarg, 2, kMost, &s->modulus);
        break;
      case 'r':
        ok = parseNumber(flag, optarg, 0, 1e3, &s->lr);
        break;
      case 'S':
        ok = zccl_harness::parseInteger(optarg, uint64_t{0}, kMostSeed, &s->seed) ||
             refuse(flag, optarg, zccl_harness::wholeNumberFrom(uint64_t{0}));
        break;
      case 'P':
        ok = parseChoice(flag, optarg, {"bf16", "fp16", "fp32"}, &s->precision);
        break;
      case 'e':
        ok = parseWhole(flag, optarg, 1, kMost, &s->printEvery);
        break;
      case 'N':
        ok = parseNumber(flag, optarg, 0, 1, &s->labelNoise);
        break;
      case 'L':
        s->log = optarg;
        break;
      case 'd':
        s->differences = true;
        break;
      case 'B':
        ok = zccl_harness::parseInteger(optarg, 2, 8, &s->differenceBits) &&
             (s->differenceBits == 8 || s->differenceBits == 4 || s->differenceBits == 2);
        if (!ok) refuse(flag, optarg, "8, 4 or 2");
        break;
      case 'E':
        s->feedback = s->qgz = true;
        break;
      case 'H':
        s->smoothing = true;
        break;
      case 'V':
        s->smoothDifferences = true;
        break;
      case 'G':
        s->hpzGather = true;
        break;
      case 'C':
        ok = parseChoice(flag, optarg, {"fp32", "bf16", "int8"}, &s->feedbackPrecision);
        break;
      case 'R':
        ok = parseWhole(flag, optarg, 0, kMost, &s->resyncEvery);
        break;
      case 'F':
        ok = parseWhole(flag, optarg, 0, kMost, &s->prefetch);
        break;
      case 'D':
        ok = parseChoice(flag, optarg, {"auto", "host", "cuda"}, &s->device);
        break;
      default:
        return false;
    }
    if (!ok) return false;
  }
  if (optind < argc) return refuse("argument", argv[optind], "zero_demo takes options only");
  return checkSettings(*s);
}

}  // namespace

int main(int argc, char** argv) {
  World& job = zccl_harness::world();
  if (!job.start(&argc, &argv)) return 1;
  world = &job;
  rank = job.rank();
  ranks = job.ranks();
  Settings s;
  if (!parse(argc, argv, &s)) {
    if (rank == 0) printUsage();
    job.finish();
    return 2;
  }
  zcclComm_t comm = nullptr;
  const zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  if (job.makeComm(&config, World::Engine::kDefault, &comm) != zcclSuccess) {
    die("creating the communicator", nullptr);
  }
  // The optimizer's state on this rank's GPU, the one of its index on its node; with auto,
  // where every rank sees one, else on the host.
  std::unique_ptr<StateMemory> device;
  if (s.device != "host") {
    zcclComm_t node = nullptr;
    int local = 0;
    if (zcclCommSplitNode(comm, &node) != zcclSuccess ||
        zcclCommUserRank(node, &local) != zcclSuccess) {
      die("finding this rank's index on its node", comm);
    }
    std::string error;
    device = zccl::zero::makeCudaStateMemory(local, &error);
    if (device == nullptr && s.device == "cuda") {
      std::fprintf(stderr, "rank %d: --device cuda: %s\n", rank, error.c_str());
      std::exit(1);
    }
    if (minimum(device != nullptr ? 1 : 0) == 0) device.reset();
  }
  const char* where = device != nullptr ? "GPU" : "host";
  FILE* log = nullptr;
  if (rank == 0 && !s.log.empty()) {
    log = std::fopen(s.log.c_str(), "w");
    if (log == nullptr) die(("--log " + s.log + ": cannot write it").c_str(), nullptr);
    std::fprintf(log, "model,configuration,step,seconds,loss,inter_node_bytes\n");
  }
  zcclTopologyInfo host{};
  if (zcclCommGetTopologyInfo(comm, &host) != zcclSuccess) die("reading the host", comm);
  if (rank == 0) {
    std::printf("# host: %s, quantization kernels %s\n", host.cpuModel, host.quantKernels);
    std::printf(
        "# zero_demo: %d ranks, modular addition mod %d (%.0f%% noisy labels), global batch %d, "
        "%d steps, %s, optimizer state in %s memory, prefetch depth %d, hpZ's node copy %s\n",
        ranks, s.modulus, 100 * s.labelNoise, s.batch, s.steps, s.precision.c_str(), where,
        s.prefetch, s.hpzGather || device != nullptr ? "gathered" : "read in place");
  }
  std::vector<Result> results;
  for (const std::string& model : s.models) {
    for (Configuration c : configurations(s, device.get())) {
      c.options.learningRate = s.lr > 0 ? s.lr : model == "mlp" ? 1e-3f : 2e-3f;
      results.push_back(train(comm, s, model, c, log));
    }
  }
  if (log != nullptr) std::fclose(log);
  printTable(results);
  if (rank == 0 && s.stage < 0) printSummary(results);
  zcclCommDestroy(comm);
  job.finish();
  return 0;
}
