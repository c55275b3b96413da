// zccl-topo: what zccl sees of the machine and what it would do with it.
//   zccl-topo [--topo-file machine.xml] [--nodes N] [--ranks-per-node L] [--allow-lossy]
//             [--dtype bfloat16|float16|float32] [--json]
//   zcclrun -n 4 zccl-topo            (adds the job's rank -> node map; plans for the job)
// Prints the node's devices, the link matrix between GPUs and NICs (in the spirit of
// `nvidia-smi topo -m`: NV<GB/s> for NVLink, else the PCI relation), the link classes with
// their bandwidth estimates, and the plan table: per collective and size, the path the
// planner chooses, its estimated time and bus bandwidth.
#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "harness/command_line.h"
#include "zccl/zccl.h"
#include "zccl/zccl_introspect.h"

namespace {

constexpr int kMostCount = 1 << 20;

struct Settings {
  std::string topoFile;
  int nodes = 2;
  int ranksPerNode = 0;  // 0: one per GPU, or 2 without GPUs
  bool allowLossy = false;
  bool json = false;
  zcclDataType_t type = zcclBfloat16;
  std::string typeName = "bfloat16";
};

struct PlanRow {
  zcclCollective_t collective;
  size_t bytes;
  zcclPlanInfo plan;
  double busbw;
};

const char* collectiveName(zcclCollective_t c) {
  switch (c) {
    case zcclCollAllGather:
      return "all-gather";
    case zcclCollReduceScatter:
      return "reduce-scatter";
    case zcclCollAllReduce:
      return "all-reduce";
    default:
      return "?";
  }
}

// The planner's choice per collective and size, for the job's own shape or (whatIf) for
// nodes x ranksPerNode on the same links.
bool planTable(zcclComm_t comm, const Settings& s, bool whatIf, int nodes, int ranksPerNode,
               std::vector<PlanRow>* rows) {
  const int n = nodes * ranksPerNode;
  for (zcclCollective_t c : {zcclCollAllGather, zcclCollReduceScatter, zcclCollAllReduce}) {
    zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
    if (s.allowLossy) {
      options.wireFormat = c == zcclCollAllGather ? zcclWireAllowInt8 : zcclWireAllowInt4;
    }
    for (size_t bytes = size_t{4} << 10; bytes <= size_t{1} << 30; bytes *= 8) {
      zcclPlanQuery query = ZCCL_PLAN_QUERY_INITIALIZER;
      query.collective = c;
      query.bytes = bytes;
      query.datatype = s.type;
      query.options = &options;
      query.nodes = whatIf ? nodes : 0;
      query.ranksPerNode = whatIf ? ranksPerNode : 0;
      PlanRow row{c, bytes, {}, 0};
      if (zcclCommGetPlan(comm, &query, &row.plan) != zcclSuccess) return false;
      const double factor = c == zcclCollAllReduce ? 2.0 * (n - 1) / n : (n - 1.0) / n;
      row.busbw = bytes / row.plan.estimatedSeconds / 1e9 * factor;
      rows->push_back(row);
    }
  }
  return true;
}

std::string sizeName(size_t bytes) {
  if (bytes >= (size_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (size_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

std::string pathName(const zcclPlanInfo& p) {
  std::string name = p.algorithm;
  if (std::string(p.wire) != "none") name += std::string(" + ") + p.wire;
  return name;
}

void printPlan(const zcclTopologyInfo& info, int nodes, int ranksPerNode,
               const std::vector<PlanRow>& rows, const Settings& s) {
  std::printf(
      "\nPlan for %d nodes x %d ranks, %s in host memory, %s (intra %s, inter %s; CPU "
      "quantize %.1f GB/s, dequantize %.1f GB/s, reduce %.1f GB/s of float32)\n",
      nodes, ranksPerNode, s.typeName.c_str(),
      s.allowLossy ? "INT8 all-gather / INT4 reductions allowed" : "lossless", info.intraNodeLink,
      info.interNodeLink, info.quantizeGBps, info.dequantizeGBps, info.reduceGBps);
  if (info.deviceQuantizeGBps > 0) {
    std::printf(
        "  (device memory plans with the GPU's rates: quantize %.1f GB/s, dequantize %.1f "
        "GB/s, reduce %.1f GB/s of float32)\n",
        info.deviceQuantizeGBps, info.deviceDequantizeGBps, info.deviceReduceGBps);
  }
  std::printf("  %-15s %8s  %-20s %12s %12s\n", "collective", "size", "path", "est. time",
              "est. busbw");
  for (const PlanRow& r : rows) {
    std::printf("  %-15s %8s  %-20s %10.1f us %7.2f GB/s\n", collectiveName(r.collective),
                sizeName(r.bytes).c_str(), pathName(r.plan).c_str(), r.plan.estimatedSeconds * 1e6,
                r.busbw);
  }
}

void printJson(const std::string& topology, int nodes, int ranksPerNode, const std::string& type,
               const std::vector<PlanRow>& rows, const std::vector<int>& nodeOfRank) {
  std::printf("{\n  \"topology\": %s,\n  \"rank_to_node\": [", topology.c_str());
  for (size_t r = 0; r < nodeOfRank.size(); ++r) std::printf("%s%d", r ? ", " : "", nodeOfRank[r]);
  std::printf(
      "],\n  \"plan\": {\"nodes\": %d, \"ranks_per_node\": %d, \"datatype\": \"%s\", "
      "\"rows\": [\n",
      nodes, ranksPerNode, type.c_str());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf(
        "    {\"collective\": \"%s\", \"bytes\": %zu, \"path\": \"%s\", \"seconds\": %.9f, "
        "\"busbw_gbps\": %.4f}%s\n",
        collectiveName(rows[i].collective), rows[i].bytes, pathName(rows[i].plan).c_str(),
        rows[i].plan.estimatedSeconds, rows[i].busbw, i + 1 < rows.size() ? "," : "");
  }
  std::printf("  ]}\n}\n");
}

std::string describeTopology(zcclComm_t comm, int json) {
  size_t bytes = 0;
  if (zcclCommDescribeTopology(comm, json, nullptr, &bytes) != zcclSuccess) return "";
  std::string text(bytes, '\0');
  if (zcclCommDescribeTopology(comm, json, text.data(), &bytes) != zcclSuccess) return "";
  text.resize(bytes - 1);
  return text;
}

// Prints what rank 0 knows; false when the library refused.
bool report(zcclComm_t comm, const Settings& s, int ranks) {
  zcclTopologyInfo info;
  if (zcclCommGetTopologyInfo(comm, &info) != zcclSuccess) return false;
  std::vector<int> nodeOfRank;
  int nodes = s.nodes;
  int ranksPerNode = s.ranksPerNode > 0 ? s.ranksPerNode : std::max(2, info.gpusOnThisNode);
  if (ranks > 1) {  // under mpiexec: the job's own map and plan
    nodeOfRank.resize(static_cast<size_t>(ranks));
    if (zcclCommGetNodeMap(comm, nodeOfRank.data()) != zcclSuccess) return false;
    nodes = info.nodes;
    ranksPerNode = std::max(1, ranks / info.nodes);
  }
  std::vector<PlanRow> rows;
  if (!planTable(comm, s, ranks == 1, nodes, ranksPerNode, &rows)) return false;
  if (s.json) {
    printJson(describeTopology(comm, 1), nodes, ranksPerNode, s.typeName, rows, nodeOfRank);
    return true;
  }
  std::printf("%s", describeTopology(comm, 0).c_str());
  if (!nodeOfRank.empty()) {
    std::printf("\nJob: %d ranks on %d nodes; rank -> node:", ranks, nodes);
    for (int r = 0; r < ranks; ++r) std::printf(" %d:%d", r, nodeOfRank[r]);
    std::printf("\n");
  }
  printPlan(info, nodes, ranksPerNode, rows, s);
  return true;
}

// The type of the plan table: half precision's plans keep their roundings few, float32's need not.
bool parseType(const std::string& name, Settings* s) {
  static const std::pair<const char*, zcclDataType_t> kTypes[] = {
      {"bfloat16", zcclBfloat16}, {"float16", zcclFloat16}, {"float32", zcclFloat32}};
  for (const auto& [typeName, type] : kTypes) {
    if (name == typeName) {
      s->type = type;
      s->typeName = typeName;
      return true;
    }
  }
  std::fprintf(stderr, "zccl-topo: --dtype %s: not bfloat16, float16 or float32\n", name.c_str());
  return false;
}

bool parse(int argc, char** argv, Settings* s) {
  static const option options[] = {{"topo-file", required_argument, nullptr, 't'},
                                   {"nodes", required_argument, nullptr, 'n'},
                                   {"ranks-per-node", required_argument, nullptr, 'r'},
                                   {"allow-lossy", no_argument, nullptr, 'l'},
                                   {"json", no_argument, nullptr, 'j'},
                                   {"dtype", required_argument, nullptr, 'd'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
  int c = 0;
  while ((c = getopt_long(argc, argv, "", options, nullptr)) != -1) {
    switch (c) {
      case 't':
        s->topoFile = optarg;
        break;
      case 'n':
        if (!zccl_harness::integerArgument("zccl-topo", "--nodes", optarg, 1, kMostCount,
                                           &s->nodes)) {
          return false;
        }
        break;
      case 'r':
        if (!zccl_harness::parseInteger(optarg, 0, kMostCount, &s->ranksPerNode)) {
          return zccl_harness::refuseArgument(
              "zccl-topo", "--ranks-per-node", optarg,
              zccl_harness::wholeNumberFrom(0, kMostCount) + " (0: one per GPU, or 2)");
        }
        break;
      case 'l':
        s->allowLossy = true;
        break;
      case 'j':
        s->json = true;
        break;
      case 'd':
        if (!parseType(optarg, s)) return false;
        break;
      default:
        return false;
    }
  }
  if (optind < argc) {
    return zccl_harness::refuseArgument("zccl-topo", "argument", argv[optind],
                                        "zccl-topo takes options only");
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  if (!parse(argc, argv, &s)) {
    std::fprintf(stderr,
                 "usage: [zcclrun -n N] zccl-topo [--topo-file FILE] [--nodes N] "
                 "[--ranks-per-node L] [--allow-lossy] [--dtype bfloat16|float16|float32] "
                 "[--json]\n");
    return 2;
  }
  // The communicator discovers its node from the file as it would from ZCCL_TOPO_FILE.
  if (!s.topoFile.empty()) setenv("ZCCL_TOPO_FILE", s.topoFile.c_str(), 1);
  // Under a launcher (zcclrun, torchrun): the job's own communicator; alone: one of one rank.
  const bool launched = std::getenv("ZCCL_RANK") != nullptr || std::getenv("RANK") != nullptr;
  zcclComm_t comm = nullptr;
  const zcclResult_t created =
      launched ? zcclCommInitFromEnv(&comm, nullptr) : zcclCommInitAll(&comm, 1, nullptr);
  if (created != zcclSuccess) {
    std::fprintf(stderr, "zccl-topo: %s\n", zcclGetLastError(nullptr));
    return 1;
  }
  int rank = 0, ranks = 1;
  zcclCommUserRank(comm, &rank);
  zcclCommCount(comm, &ranks);
  int status = 0;
  if (rank == 0 && !report(comm, s, ranks)) {
    std::fprintf(stderr, "zccl-topo: %s\n", zcclGetLastError(comm));
    status = 1;
  }
  zcclCommDestroy(comm);
  return status;
}
