// zccl-topo: what zccl sees of the machine and what it would do with it.
//   zccl-topo [--topo-file machine.xml] [--nodes N] [--ranks-per-node L] [--allow-lossy]
//             [--json]
//   mpiexec -n 4 zccl-topo            (adds the job's rank -> node map; plans for the job)
// Prints the node's devices, the link matrix between GPUs and NICs (in the spirit of
// `nvidia-smi topo -m`: NV<GB/s> for NVLink, else the PCI relation), the link classes with
// their bandwidth estimates, and the plan table: per collective and size, the path the
// planner chooses, its estimated time and bus bandwidth.
#include <getopt.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/cost_model.h"
#include "core/comm.h"
#include "topology/topology.h"

namespace {

using zccl::Algorithm;
using zccl::ClusterModel;
using zccl::Collective;
using zccl::NodeTopology;
using zccl::Plan;

struct Settings {
  std::string topoFile;
  int nodes = 2;
  int ranksPerNode = 0;  // 0: one per GPU, or 2 without GPUs
  bool allowLossy = false;
  bool json = false;
};

std::string linkCell(const NodeTopology& t, size_t a, size_t b) {
  if (a == b) return "X";
  if (!t.nvlinkGBps.empty() && t.nvlinkGBps[a][b] > 0) {
    return "NV" + std::to_string(static_cast<int>(t.nvlinkGBps[a][b]));
  }
  return zccl::pciRelation(t.gpus[a].location, t.gpus[b].location);
}

void printDevices(const NodeTopology& t) {
  std::printf("# zccl-topo: %s\n\nDevices\n", t.source.c_str());
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const auto& g = t.gpus[i];
    std::printf("  GPU%-3zu %-8s [10de:%04x] %s NUMA %d%s\n", i, g.name.c_str(), g.deviceId,
                g.location.busId.c_str(), g.location.numaNode,
                g.computeVisible ? "" : "  (no CUDA/NVML device)");
  }
  std::printf("  NVSwitches: %d\n", t.nvswitches);
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const auto& n = t.nics[i];
    std::printf("  NIC%-3zu %-8s %s %s NUMA %d %s\n", i, n.name.c_str(),
                n.infiniband ? "IB " : "ETH", n.location.busId.c_str(), n.location.numaNode,
                n.gbps > 0 ? (std::to_string(n.gbps * 8) + " Gb/s").c_str() : "speed unknown");
  }
  for (const auto& h : t.hcas) {
    std::printf("  HCA    %-8s %s NUMA %d\n", h.name.c_str(), h.location.busId.c_str(),
                h.location.numaNode);
  }
  std::printf("  NUMA nodes: %d\n", t.numaNodes);
}

void printMatrix(const NodeTopology& t) {
  if (t.gpus.empty() && t.nics.empty()) return;
  std::printf(
      "\nLink matrix (NV<n>: NVLink, n GB/s%s; else the PCI path: PIX one bridge, PXB "
      "several, PHB host bridge, NODE same NUMA node, SYS across NUMA nodes)\n       ",
      t.nvlinkSource.empty() ? "" : (", from " + t.nvlinkSource).c_str());
  const size_t g = t.gpus.size(), n = t.nics.size();
  for (size_t j = 0; j < g; ++j) std::printf(" %6s", ("GPU" + std::to_string(j)).c_str());
  for (size_t j = 0; j < n; ++j) std::printf(" %6s", ("NIC" + std::to_string(j)).c_str());
  std::printf("\n");
  const auto location = [&](size_t k) {
    return k < g ? t.gpus[k].location : t.nics[k - g].location;
  };
  for (size_t i = 0; i < g + n; ++i) {
    std::printf("%-7s",
                (i < g ? "GPU" + std::to_string(i) : "NIC" + std::to_string(i - g)).c_str());
    for (size_t j = 0; j < g + n; ++j) {
      const std::string cell = i < g && j < g ? linkCell(t, i, j)
                               : i == j       ? std::string("X")
                                              : zccl::pciRelation(location(i), location(j));
      std::printf(" %6s", cell.c_str());
    }
    std::printf("\n");
  }
}

void printLinks(const NodeTopology& t) {
  std::printf("\nLinks: intra-node %s %.1f GB/s, inter-node %s %.2f GB/s (%s); %s\n",
              zccl::linkClassName(t.intraNode), t.intraNodeGBps, zccl::linkClassName(t.interNode),
              t.interNodeGBps, t.interNodeNote.c_str(),
              t.lowBandwidth() ? "a low-bandwidth cluster (neither NVLink nor InfiniBand)"
                               : "not low-bandwidth");
}

struct PlanRow {
  Collective collective;
  size_t bytes;
  Plan plan;
  double seconds;
  double busbw;
};

std::vector<PlanRow> planTable(const ClusterModel& cluster, bool allowLossy) {
  std::vector<PlanRow> rows;
  const int n = cluster.ranks();
  for (Collective c :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce}) {
    for (size_t bytes = size_t{4} << 10; bytes <= size_t{1} << 30; bytes *= 8) {
      zccl::CollectiveOptions options;
      if (allowLossy) {
        options.wire =
            c == Collective::kAllGather ? zccl::WireFormat::kInt8 : zccl::WireFormat::kInt4;
        options.wireAllowedOnly = true;
      }
      const Plan plan = zccl::cheapestPlan(cluster, c, zccl::DataType::kBfloat16, zccl::RedOp::kSum,
                                           bytes, options);
      const double seconds =
          zccl::estimateSeconds(cluster, c, plan, bytes, zccl::DataType::kBfloat16);
      const double factor = c == Collective::kAllReduce ? 2.0 * (n - 1) / n : (n - 1.0) / n;
      rows.push_back(PlanRow{c, bytes, plan, seconds, bytes / seconds / 1e9 * factor});
    }
  }
  return rows;
}

std::string sizeName(size_t bytes) {
  if (bytes >= (size_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (size_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes >> 10) + " KiB";
}

std::string pathName(const Plan& p) {
  std::string name = zccl::algorithmName(p.algorithm);
  if (p.wire != zccl::WireFormat::kNone) name += std::string(" + ") + zccl::wireFormatName(p.wire);
  return name;
}

void printPlan(const ClusterModel& cluster, const std::vector<PlanRow>& rows, bool allowLossy) {
  std::printf(
      "\nPlan for %d nodes x %d ranks, bfloat16, %s (intra %s, inter %s; quantize %.1f "
      "GB/s, dequantize %.1f GB/s of float32)\n",
      cluster.nodes, cluster.ranksPerNode,
      allowLossy ? "INT8 all-gather / INT4 reductions allowed" : "lossless",
      zccl::linkClassName(cluster.intra.link), zccl::linkClassName(cluster.inter.link),
      cluster.quantizeBytesPerSecond / 1e9, cluster.dequantizeBytesPerSecond / 1e9);
  std::printf("  %-15s %8s  %-20s %12s %12s\n", "collective", "size", "path", "est. time",
              "est. busbw");
  for (const PlanRow& r : rows) {
    std::printf("  %-15s %8s  %-20s %10.1f us %7.2f GB/s\n", zccl::collectiveName(r.collective),
                sizeName(r.bytes).c_str(), pathName(r.plan).c_str(), r.seconds * 1e6, r.busbw);
  }
}

void printJson(const NodeTopology& t, const ClusterModel& cluster, const std::vector<PlanRow>& rows,
               const std::vector<int>& nodeOfRank) {
  std::printf("{\n  \"source\": \"%s\",\n  \"gpus\": [", t.source.c_str());
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    std::printf("%s{\"name\": \"%s\", \"bus_id\": \"%s\", \"numa\": %d}", i ? ", " : "",
                t.gpus[i].name.c_str(), t.gpus[i].location.busId.c_str(),
                t.gpus[i].location.numaNode);
  }
  std::printf("],\n  \"nvswitches\": %d,\n  \"nics\": [", t.nvswitches);
  for (size_t i = 0; i < t.nics.size(); ++i) {
    std::printf("%s{\"name\": \"%s\", \"infiniband\": %s, \"gbps\": %.3f}", i ? ", " : "",
                t.nics[i].name.c_str(), t.nics[i].infiniband ? "true" : "false", t.nics[i].gbps);
  }
  std::printf("],\n  \"hcas\": [");
  for (size_t i = 0; i < t.hcas.size(); ++i)
    std::printf("%s\"%s\"", i ? ", " : "", t.hcas[i].name.c_str());
  std::printf("],\n  \"numa_nodes\": %d,\n  \"nvlink_gbps\": [", t.numaNodes);
  for (size_t i = 0; i < t.nvlinkGBps.size(); ++i) {
    std::printf("%s[", i ? ", " : "");
    for (size_t j = 0; j < t.nvlinkGBps[i].size(); ++j)
      std::printf("%s%.1f", j ? ", " : "", t.nvlinkGBps[i][j]);
    std::printf("]");
  }
  std::printf("],\n  \"intra_node\": {\"class\": \"%s\", \"gbps\": %.3f},\n",
              zccl::linkClassName(t.intraNode), t.intraNodeGBps);
  std::printf("  \"inter_node\": {\"class\": \"%s\", \"gbps\": %.3f, \"note\": \"%s\"},\n",
              zccl::linkClassName(t.interNode), t.interNodeGBps, t.interNodeNote.c_str());
  std::printf("  \"low_bandwidth\": %s,\n  \"rank_to_node\": [",
              t.lowBandwidth() ? "true" : "false");
  for (size_t r = 0; r < nodeOfRank.size(); ++r) std::printf("%s%d", r ? ", " : "", nodeOfRank[r]);
  std::printf("],\n  \"plan\": {\"nodes\": %d, \"ranks_per_node\": %d, \"rows\": [\n",
              cluster.nodes, cluster.ranksPerNode);
  for (size_t i = 0; i < rows.size(); ++i) {
    std::printf(
        "    {\"collective\": \"%s\", \"bytes\": %zu, \"path\": \"%s\", \"seconds\": %.9f, "
        "\"busbw_gbps\": %.4f}%s\n",
        zccl::collectiveName(rows[i].collective), rows[i].bytes, pathName(rows[i].plan).c_str(),
        rows[i].seconds, rows[i].busbw, i + 1 < rows.size() ? "," : "");
  }
  std::printf("  ]}\n}\n");
}

bool parse(int argc, char** argv, Settings* s) {
  static const option options[] = {{"topo-file", required_argument, nullptr, 't'},
                                   {"nodes", required_argument, nullptr, 'n'},
                                   {"ranks-per-node", required_argument, nullptr, 'r'},
                                   {"allow-lossy", no_argument, nullptr, 'l'},
                                   {"json", no_argument, nullptr, 'j'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
  int c = 0;
  while ((c = getopt_long(argc, argv, "", options, nullptr)) != -1) {
    switch (c) {
      case 't':
        s->topoFile = optarg;
        break;
      case 'n':
        s->nodes = std::atoi(optarg);
        break;
      case 'r':
        s->ranksPerNode = std::atoi(optarg);
        break;
      case 'l':
        s->allowLossy = true;
        break;
      case 'j':
        s->json = true;
        break;
      default:
        return false;
    }
  }
  return s->nodes >= 1 && s->ranksPerNode >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Settings s;
  if (!parse(argc, argv, &s)) {
    if (rank == 0) {
      std::fprintf(stderr,
                   "usage: [mpiexec -n N] zccl-topo [--topo-file FILE] [--nodes N] "
                   "[--ranks-per-node L] [--allow-lossy] [--json]\n");
    }
    MPI_Finalize();
    return 2;
  }
  zccl::TopologyOptions options;
  int status = zccl::topologyOptionsFromEnvironment(&options) == zccl::Status::kSuccess ? 0 : 1;
  if (!s.topoFile.empty()) options.xmlPath = s.topoFile;
  NodeTopology topology;
  if (status == 0 && zccl::discoverTopology(options, &topology) != zccl::Status::kSuccess) {
    std::fprintf(stderr, "zccl-topo: %s\n", zccl::lastThreadError().c_str());
    status = 1;
  }
  std::vector<int> nodeOfRank;
  ClusterModel cluster;
  if (status == 0 && ranks > 1) {
    // Under mpiexec: the job's own node map and cluster model, as a communicator builds them.
    zcclComm_t comm = nullptr;
    if (zcclCommInitMPI(MPI_COMM_WORLD, nullptr, &comm) != zcclSuccess) {
      std::fprintf(stderr, "zccl-topo: %s\n", zcclGetLastError(nullptr));
      status = 1;
    } else {
      for (int r = 0; r < ranks; ++r) nodeOfRank.push_back(comm->nodes.nodeOf(r));
      cluster = comm->cluster;
      zcclCommDestroy(comm);
    }
  } else if (status == 0) {
    const int perNode = s.ranksPerNode > 0
                            ? s.ranksPerNode
                            : std::max<int>(2, static_cast<int>(topology.gpus.size()));
    cluster = zccl::clusterModel(topology, s.nodes, perNode, true);
    zccl::measureQuantRates(&cluster);
  }
  if (status == 0 && rank == 0) {
    const auto rows = planTable(cluster, s.allowLossy);
    if (s.json) {
      printJson(topology, cluster, rows, nodeOfRank);
    } else {
      printDevices(topology);
      printMatrix(topology);
      printLinks(topology);
      if (!nodeOfRank.empty()) {
        std::printf("\nJob: %d ranks on %d nodes; rank -> node:", ranks, cluster.nodes);
        for (int r = 0; r < ranks; ++r) std::printf(" %d:%d", r, nodeOfRank[r]);
        std::printf("\n");
      }
      printPlan(cluster, rows, s.allowLossy);
    }
  }
  MPI_Finalize();
  return status;
}
