// A node's topology as text and JSON (describe.h).
#include "topology/describe.h"

#include <cstdarg>

#include "common/format.h"

namespace zccl {
namespace {

void appendf(std::string* out, const char* format, ...) __attribute__((format(printf, 2, 3)));

void appendf(std::string* out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  out->append(formatList(format, args));
  va_end(args);
}

std::string linkCell(const NodeTopology& t, size_t a, size_t b) {
  if (a == b) return "X";
  if (!t.nvlinkGBps.empty() && t.nvlinkGBps[a][b] > 0) {
    return "NV" + std::to_string(static_cast<int>(t.nvlinkGBps[a][b]));
  }
  return pciRelation(t.gpus[a].location, t.gpus[b].location);
}

void describeDevices(const NodeTopology& t, std::string* out) {
  appendf(out, "# zccl-topo: %s\n\nDevices\n", t.source.c_str());
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const auto& g = t.gpus[i];
    appendf(out, "  GPU%-3zu %-8s [10de:%04x] %s NUMA %d%s\n", i, g.name.c_str(), g.deviceId,
            g.location.busId.c_str(), g.location.numaNode,
            g.computeVisible ? "" : "  (no CUDA/NVML device)");
  }
  appendf(out, "  NVSwitches: %d\n", t.nvswitches);
  for (size_t i = 0; i < t.nics.size(); ++i) {
    const auto& n = t.nics[i];
    appendf(out, "  NIC%-3zu %-8s %s %s NUMA %d %s\n", i, n.name.c_str(),
            n.infiniband ? "IB " : "ETH", n.location.busId.c_str(), n.location.numaNode,
            n.gbps > 0 ? (std::to_string(n.gbps * 8) + " Gb/s").c_str() : "speed unknown");
  }
  for (const auto& h : t.hcas) {
    appendf(out, "  HCA    %-8s %s NUMA %d\n", h.name.c_str(), h.location.busId.c_str(),
            h.location.numaNode);
  }
  appendf(out, "  NUMA nodes: %d\n", t.numaNodes);
}

void describeMatrix(const NodeTopology& t, std::string* out) {
  if (t.gpus.empty() && t.nics.empty()) return;
  appendf(out,
          "\nLink matrix (NV<n>: NVLink, n GB/s%s; else the PCI path: PIX one bridge, PXB "
          "several, PHB host bridge, NODE same NUMA node, SYS across NUMA nodes)\n       ",
          t.nvlinkSource.empty() ? "" : (", from " + t.nvlinkSource).c_str());
  const size_t g = t.gpus.size(), n = t.nics.size();
  for (size_t j = 0; j < g; ++j) appendf(out, " %6s", ("GPU" + std::to_string(j)).c_str());
  for (size_t j = 0; j < n; ++j) appendf(out, " %6s", ("NIC" + std::to_string(j)).c_str());
  appendf(out, "\n");
  const auto location = [&](size_t k) {
    return k < g ? t.gpus[k].location : t.nics[k - g].location;
  };
  for (size_t i = 0; i < g + n; ++i) {
    appendf(out, "%-7s",
            (i < g ? "GPU" + std::to_string(i) : "NIC" + std::to_string(i - g)).c_str());
    for (size_t j = 0; j < g + n; ++j) {
      const std::string cell = i < g && j < g ? linkCell(t, i, j)
                               : i == j       ? std::string("X")
                                              : pciRelation(location(i), location(j));
      appendf(out, " %6s", cell.c_str());
    }
    appendf(out, "\n");
  }
}

}  // namespace

std::string describeTopology(const NodeTopology& t) {
  std::string out;
  describeDevices(t, &out);
  describeMatrix(t, &out);
  appendf(&out, "\nLinks: intra-node %s %.1f GB/s, inter-node %s %.2f GB/s x %d (%s); %s\n",
          linkClassName(t.intraNode), t.intraNodeGBps, linkClassName(t.interNode), t.interNodeGBps,
          t.interNodeRails, t.interNodeNote.c_str(),
          t.lowBandwidth() ? "a low-bandwidth cluster (neither NVLink nor InfiniBand)"
                           : "not low-bandwidth");
  const bool described = t.fabric.nodesPerLeaf > 0 || t.fabric.oversubscription != 1;
  appendf(&out, "Fabric: %s\n",
          described ? describeFabricShape(t.fabric).c_str()
                    : "not described (ZCCL_FABRIC): a switch that blocks no port assumed");
  return out;
}

std::string describeTopologyJson(const NodeTopology& t) {
  std::string out;
  appendf(&out, "{\"source\": \"%s\", \"gpus\": [", t.source.c_str());
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    appendf(&out, "%s{\"name\": \"%s\", \"bus_id\": \"%s\", \"numa\": %d}", i ? ", " : "",
            t.gpus[i].name.c_str(), t.gpus[i].location.busId.c_str(), t.gpus[i].location.numaNode);
  }
  appendf(&out, "], \"nvswitches\": %d, \"nics\": [", t.nvswitches);
  for (size_t i = 0; i < t.nics.size(); ++i) {
    appendf(&out, "%s{\"name\": \"%s\", \"infiniband\": %s, \"gbps\": %.3f}", i ? ", " : "",
            t.nics[i].name.c_str(), t.nics[i].infiniband ? "true" : "false", t.nics[i].gbps);
  }
  appendf(&out, "], \"hcas\": [");
  for (size_t i = 0; i < t.hcas.size(); ++i)
    appendf(&out, "%s\"%s\"", i ? ", " : "", t.hcas[i].name.c_str());
  appendf(&out, "], \"numa_nodes\": %d, \"nvlink_gbps\": [", t.numaNodes);
  for (size_t i = 0; i < t.nvlinkGBps.size(); ++i) {
    appendf(&out, "%s[", i ? ", " : "");
    for (size_t j = 0; j < t.nvlinkGBps[i].size(); ++j)
      appendf(&out, "%s%.1f", j ? ", " : "", t.nvlinkGBps[i][j]);
    appendf(&out, "]");
  }
  appendf(&out, "], \"intra_node\": {\"class\": \"%s\", \"gbps\": %.3f}, ",
          linkClassName(t.intraNode), t.intraNodeGBps);
  appendf(&out,
          "\"inter_node\": {\"class\": \"%s\", \"gbps\": %.3f, \"rails\": %d, \"note\": \"%s\"}, ",
          linkClassName(t.interNode), t.interNodeGBps, t.interNodeRails, t.interNodeNote.c_str());
  appendf(&out,
          "\"fabric\": {\"nodes_per_leaf\": %d, \"oversubscription\": %g, \"leaves_per_pod\": "
          "%d, \"pod_oversubscription\": %g}, ",
          t.fabric.nodesPerLeaf, t.fabric.oversubscription, t.fabric.leavesPerPod,
          t.fabric.podOversubscription);
  appendf(&out, "\"low_bandwidth\": %s}", t.lowBandwidth() ? "true" : "false");
  return out;
}

}  // namespace zccl
