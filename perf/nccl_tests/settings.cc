// Parsing a perf binary's flags into its settings (settings.h).
#include "nccl_tests/settings.h"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "harness/command_line.h"

namespace zccl_perf {

const char* const kTypeNames[zcclNumTypes] = {"int8",   "uint8", "int32",    "uint32", "int64",
                                              "uint64", "half",  "bfloat16", "float",  "double"};
const char* const kOpNames[zcclNumOps] = {"sum", "prod", "max", "min", "avg"};
const char* const kHierarchyNames[3] = {"auto", "flat", "hier"};
const char* const kMemoryNames[3] = {"auto", "host", "device"};

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
    case Collective::kReduce:
      return "reduce";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
  }
  return "?";
}

bool hasOp(Collective c) {
  return c == Collective::kReduceScatter || c == Collective::kAllReduce || c == Collective::kReduce;
}
bool hasRoot(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kGather ||
         c == Collective::kScatter;
}
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
    case Collective::kGather:
    case Collective::kScatter:
      return static_cast<double>(n - 1) / n;
    default:
      return 1.0;
  }
}

namespace {

using zccl_harness::parseInteger;
using zccl_harness::parseReal;
using zccl_harness::parseSize;

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

}  // namespace

void printUsage(const char* program) {
  std::fprintf(
      stderr,
      "usage: mpiexec -n N %s [options]   (or zcclrun -n N, without MPI)\n"
      "  -b, --minbytes SIZE      smallest size (default 32M; K, M, G suffixes)\n"
      "  -e, --maxbytes SIZE      largest size (default 32M)\n"
      "  -f, --stepfactor F       multiply the size by F (default 1)\n"
      "  -i, --stepbytes SIZE     or add SIZE instead\n"
      "  -n, --iters N            timed iterations (default 20)\n"
      "  -w, --warmup_iters N     untimed iterations first (default 5)\n"
      "  -R, --rounds N           time the calls and the baselines by turns, in N rounds of\n"
      "                           the iterations (default 1: each one's in one block)\n"
      "  -c, --check 0|1          check results (default 1)\n"
      "  -d, --datatype T         int8 uint8 int32 uint32 int64 uint64 half bfloat16 float\n"
      "                           double, or all (default float)\n"
      "  -o, --op OP              sum prod max min avg, or all (default sum)\n"
      "  -r, --root R             root of broadcast, reduce, gather, scatter (default 0)\n"
      "  -a, --average 0|1|2|3    time across ranks: rank 0, mean, min, max (default 3)\n"
      "  -T, --timeout S          give up on a silent peer after S seconds\n"
      "  -J, --output_file FILE   also write the results as JSON\n"
      "  -q, --quant none|int8|int4|allow-int8|allow-int4|int2   zccl wire format: forced, or\n"
      "                           allowed where the planner finds it faster (default none)\n"
      "  -H, --hierarchy flat|hier|auto   zccl hierarchy (default auto)\n"
      "  -M, --memory host|device|auto   where the buffers live: device memory on the GPU of\n"
      "                           the rank's index on its node, with a CUDA stream (auto: device\n"
      "                           where a GPU is visible, as nccl-tests; default auto)\n"
      "  -B, --native             also time the backend's own collective on the same buffers\n"
      "                           (MPI's on host memory, NCCL's on device memory; mpiexec)\n"
      "  -U, --mpi-transport      also time zccl's algorithms over MPI's point-to-point instead\n"
      "                           of UCX (mpiexec)\n"
      "  -P, --paths              with -q allow-int8|allow-int4: also time the paths the planner\n"
      "                           chooses among, the exact format and the allowed one forced, in\n"
      "                           the same run and on the same buffers\n",
      program);
}

bool parseArguments(int argc, char** argv, Settings* s) {
  static const option longOptions[] = {{"minbytes", required_argument, nullptr, 'b'},
                                       {"maxbytes", required_argument, nullptr, 'e'},
                                       {"stepfactor", required_argument, nullptr, 'f'},
                                       {"stepbytes", required_argument, nullptr, 'i'},
                                       {"iters", required_argument, nullptr, 'n'},
                                       {"warmup_iters", required_argument, nullptr, 'w'},
                                       {"rounds", required_argument, nullptr, 'R'},
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
                                       {"mpi-transport", no_argument, nullptr, 'U'},
                                       {"memory", required_argument, nullptr, 'M'},
                                       {"paths", no_argument, nullptr, 'P'},
                                       {"help", no_argument, nullptr, 'h'},
                                       {nullptr, 0, nullptr, 0}};
  constexpr int kMost = std::numeric_limits<int>::max();
  int c = 0;
  int index = 0;
  while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:R:c:d:o:r:a:T:J:q:H:M:BUPh", longOptions,
                          nullptr)) != -1) {
    bool ok = true;
    switch (c) {
      case 'b':
        ok = parseSize(optarg, &s->minBytes);
        break;
      case 'e':
        ok = parseSize(optarg, &s->maxBytes);
        break;
      case 'f':
        ok = parseReal(optarg, 1, kMost, &s->stepFactor);
        break;
      case 'i':
        ok = parseSize(optarg, &s->stepBytes);
        break;
      case 'n':
        ok = parseInteger(optarg, 1, kMost, &s->iters);
        break;
      case 'w':
        ok = parseInteger(optarg, 0, kMost, &s->warmup);
        break;
      case 'R':
        ok = parseInteger(optarg, 1, kMost, &s->rounds);
        break;
      case 'c':
        ok = parseInteger(optarg, 0, 1, &s->check);
        break;
      case 'd':
        ok = parseType(optarg, &s->types);
        break;
      case 'o':
        ok = parseOp(optarg, &s->ops);
        break;
      case 'r':
        ok = parseInteger(optarg, 0, kMost, &s->root);
        break;
      case 'a':
        ok = parseInteger(optarg, 0, 3, &s->average);
        break;
      case 'T':
        ok = parseReal(optarg, 0, kMost, &s->timeout);
        break;
      case 'J':
        s->json = optarg;
        break;
      case 'q':
        ok = zcclWireFormatFromName(optarg, &s->wire) == zcclSuccess;
        break;
      case 'H':
        ok = parseName(optarg, kHierarchyNames, &index);
        s->hierarchy = zcclHierarchy_t(index);
        break;
      case 'M':
        ok = parseName(optarg, kMemoryNames, &index);
        s->memory = MemoryChoice(index);
        break;
      case 'B':
        s->native = true;
        break;
      case 'U':
        s->mpiTransport = true;
        break;
      case 'P':
        s->paths = true;
        break;
      default:
        return false;
    }
    if (!ok) {
      std::fprintf(stderr, "-%c %s: invalid value\n", c, optarg != nullptr ? optarg : "");
      return false;
    }
  }
  if (s->paths && s->wire != zcclWireAllowInt8 && s->wire != zcclWireAllowInt4) {
    std::fprintf(stderr, "-P compares the planner's choice: it needs -q allow-int8|allow-int4\n");
    return false;
  }
  if (s->rounds > s->iters) {
    std::fprintf(stderr, "-R %d: more rounds than the %d timed iterations (-n)\n", s->rounds,
                 s->iters);
    return false;
  }
  if (s->minBytes > s->maxBytes) {
    std::fprintf(stderr, "-b %zu is larger than -e %zu\n", s->minBytes, s->maxBytes);
    return false;
  }
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

}  // namespace zccl_perf
