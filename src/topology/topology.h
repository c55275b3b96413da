// What one node holds, from hwloc (the live machine, or an XML export named by
// ZCCL_TOPO_FILE) and NVML when a driver is there: GPUs, NVSwitches, NICs, InfiniBand / RoCE
// HCAs, NUMA nodes, PCI locality, NVLink bandwidths; and the link classes collectives plan
// with, each with a bandwidth estimate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace zccl {

enum class LinkClass : int {
  kSelf = 0,
  kShm = 1,     // host memory within a node
  kPcie = 2,    // GPUs without NVLink
  kNvlink = 3,  // GPUs joined by NVLink (directly or through NVSwitches)
  kEthernet = 4,
  kInfiniband = 5,  // also RoCE: any OpenFabrics device
};

const char* linkClassName(LinkClass link);

// This host's CPU model ("model name" of /proc/cpuinfo), read once; "unknown" where absent.
const char* hostCpuModel();

struct PciLocation {
  int numaNode = -1;           // -1: unknown
  std::string busId;           // "0000:61:00.0"
  std::vector<uint64_t> path;  // gp_index of every bridge from the host bridge down
};

struct Gpu {
  std::string name;  // the CUDA/NVML OS device (cuda0, nvml3), or the PCI id when none
  uint16_t deviceId = 0;
  bool computeVisible = false;  // has a cuda/nvml OS device
  PciLocation location;
};

struct Nic {
  std::string name;         // eth0, ib0
  bool infiniband = false;  // an IP-over-IB interface or on an OpenFabrics HCA
  double gbps = 0;          // from sysfs on a live machine; 0: unknown
  PciLocation location;
};

struct Hca {
  std::string name;  // mlx5_0
  PciLocation location;
};

// The fabric between nodes, which discovery cannot see: nodes under each leaf switch (0: one
// switch for every node), the leaves' uplinks oversubscribed k:1 (on one switch, every port's
// share), and pods of leavesPerPod leaves under a core whose links carry what their leaves'
// uplinks can over podOversubscription. From ZCCL_FABRIC, or the simulator's machine.
struct FabricShape {
  int nodesPerLeaf = 0;
  double oversubscription = 1;
  int leavesPerPod = 0;
  double podOversubscription = 1;
};

struct NodeTopology {
  std::string source;  // "live" or the XML path
  std::vector<Gpu> gpus;
  int nvswitches = 0;
  std::vector<Nic> nics;
  std::vector<Hca> hcas;
  int numaNodes = 0;
  // nvlinkGBps[i][j]: NVLink bandwidth between GPUs i and j (0: none), through NVSwitches
  // when the matrix joins GPUs to switches; from hwloc's NVLinkBandwidth or NVML.
  std::vector<std::vector<double>> nvlinkGBps;
  std::string nvlinkSource;  // "hwloc NVLinkBandwidth", "NVML" or ""

  LinkClass intraNode = LinkClass::kShm;
  double intraNodeGBps = 0;
  LinkClass interNode = LinkClass::kEthernet;
  double interNodeGBps = 0;  // one port's (NIC or HCA)
  // The ports of that rate the node's ranks cross by at once: its HCAs (a rail each); 1 for
  // Ethernet, whose NICs discovery cannot tell apart from those that lead elsewhere.
  int interNodeRails = 1;
  // The share of those rails' rate the fabric carries when every rank of a node crosses it at
  // once, where a lone flow crosses at its port's rate: 1 / k behind a fat tree's leaf uplinks
  // oversubscribed k:1. Discovery cannot see the fabric (1): ZCCL_FABRIC or the simulator
  // describe it (applyFabricShape).
  double interNodeFabricShare = 1;
  // Which nodes share a leaf, and a pod of leaves under a core whose links carry
  // podFabricShare of what the pod's leaves' uplinks carry (0: not known: every cross-node
  // byte is taken to leave its leaf; no pods). Traffic between nodes of one leaf never meets
  // its uplinks.
  int nodesPerLeaf = 0;
  int nodesPerPod = 0;
  double podFabricShare = 1;
  FabricShape fabric;         // as described: what the four fields above come from
  std::string interNodeNote;  // why the inter-node estimate is what it is
  // Neither NVLink nor InfiniBand: the "low-bandwidth" cluster of the ZeRO papers.
  bool lowBandwidth() const {
    return intraNode != LinkClass::kNvlink && interNode != LinkClass::kInfiniband;
  }
};

// "nodes-per-leaf=L,oversubscription=K,leaves-per-pod=P,pod-oversubscription=Q", any of them;
// errors name `what`.
Status parseFabricShape(const std::string& text, const char* what, FabricShape* fabric);
std::string describeFabricShape(const FabricShape& fabric);
// Pods are groups of leaves: leaves-per-pod without nodes-per-leaf fails, naming `what`.
Status checkPodsHaveLeaves(int leavesPerPod, int nodesPerLeaf, const char* what);

// Shows the planner the fabric: one switch oversubscribed slows every port; leaves and pods
// hold back what crosses their uplinks together (a flat ring's one flow a hop crosses at its
// port's rate), and not what stays within them.
void applyFabricShape(const FabricShape& fabric, NodeTopology* node);

struct TopologyOptions {
  std::string xmlPath;       // empty: the live machine (ZCCL_TOPO_FILE fills it)
  bool useNvml = true;       // only on a live machine
  double intraNodeGBps = 0;  // overrides (ZCCL_INTRA_NODE_GBPS, ZCCL_INTER_NODE_GBPS)
  double interNodeGBps = 0;
  FabricShape fabric;  // ZCCL_FABRIC
};

// Options from the environment: ZCCL_TOPO_FILE, ZCCL_INTRA_NODE_GBPS, ZCCL_INTER_NODE_GBPS,
// ZCCL_FABRIC.
Status topologyOptionsFromEnvironment(TopologyOptions* options);

Status discoverTopology(const TopologyOptions& options, NodeTopology* topology);

// A node nothing is known of (hwloc could not read it): shared memory inside, Ethernet
// between nodes, at the default estimates or the overrides.
NodeTopology undiscoveredTopology(const TopologyOptions& options);

// nvidia-smi's relation between two PCI devices: "PIX" (one bridge), "PXB" (several
// bridges), "PHB" (the same host bridge), "NODE" (the same NUMA node), "SYS" (across NUMA
// nodes).
const char* pciRelation(const PciLocation& a, const PciLocation& b);

// NVLink bandwidths between GPUs from NVML, loaded with dlopen (never a link-time
// dependency); false when no driver is there.
bool nvmlNvlinkMatrix(const std::vector<Gpu>& gpus, std::vector<std::vector<double>>* gbps);

}  // namespace zccl
