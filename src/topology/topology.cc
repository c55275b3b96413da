// Discovering a node's topology with hwloc (topology.h).
#include "topology/topology.h"

#include <hwloc.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <type_traits>

#include "common/env.h"
#include "common/log.h"
#include "common/named_numbers.h"

namespace zccl {
namespace {

constexpr uint16_t kNvidiaVendor = 0x10de;
// Estimates where nothing better is known (each named in interNodeNote or the log).
constexpr double kShmGBps = 20;           // a memcpy between processes of one host
constexpr double kPcieGBps = 12;          // PCIe 3.0 x16
constexpr double kInfinibandGBps = 12.5;  // 100 Gb/s EDR
constexpr double kEthernetGBps = 1.25;    // 10 GbE

bool startsWith(const char* text, const char* prefix) {
  return text != nullptr && std::strncmp(text, prefix, std::strlen(prefix)) == 0;
}

bool isNvswitch(hwloc_obj_t pci) {
  if (pci->subtype != nullptr && std::strcmp(pci->subtype, "NVSwitch") == 0) return true;
  return pci->attr->pcidev.vendor_id == kNvidiaVendor && pci->attr->pcidev.class_id == 0x0680;
}

bool isGpu(hwloc_obj_t pci) {
  const unsigned cls = pci->attr->pcidev.class_id;
  return pci->attr->pcidev.vendor_id == kNvidiaVendor && (cls == 0x0300 || cls == 0x0302) &&
         !isNvswitch(pci);
}

PciLocation locate(hwloc_topology_t topology, hwloc_obj_t obj) {
  PciLocation location;
  hwloc_obj_t pci = obj;
  while (pci != nullptr && pci->type != HWLOC_OBJ_PCI_DEVICE) pci = pci->parent;
  if (pci != nullptr) {
    char busId[32];
    std::snprintf(busId, sizeof(busId), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                  pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
    location.busId = busId;
  }
  const hwloc_obj_t below = pci != nullptr ? pci : obj;
  for (hwloc_obj_t up = below->parent; up != nullptr && up->type == HWLOC_OBJ_BRIDGE;
       up = up->parent) {
    location.path.insert(location.path.begin(), up->gp_index);
  }
  hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, obj);
  if (ancestor != nullptr && ancestor->nodeset != nullptr &&
      !hwloc_bitmap_iszero(ancestor->nodeset))
    location.numaNode = hwloc_bitmap_first(ancestor->nodeset);
  return location;
}

// Speed of a live interface from sysfs, in GB/s; 0 when unknown (virtio reports -1).
double sysfsNicGBps(const std::string& name) {
  std::ifstream file("/sys/class/net/" + name + "/speed");
  long megabits = -1;
  if (!(file >> megabits) || megabits <= 0) return 0;
  return static_cast<double>(megabits) / 8000.0;
}

// The first port's rate of a live HCA ("100 Gb/sec (4X EDR)"), in GB/s; 0 when unknown.
double sysfsHcaGBps(const std::string& name) {
  std::ifstream file("/sys/class/infiniband/" + name + "/ports/1/rate");
  double gigabits = 0;
  if (!(file >> gigabits) || gigabits <= 0) return 0;
  return gigabits / 8.0;
}

void collectPci(hwloc_topology_t topology, NodeTopology* node, std::vector<hwloc_obj_t>* gpuObjs) {
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology, nullptr); pci != nullptr;
       pci = hwloc_get_next_pcidev(topology, pci)) {
    if (isNvswitch(pci)) {
      ++node->nvswitches;
      continue;
    }
    if (!isGpu(pci)) continue;
    Gpu gpu;
    gpu.deviceId = pci->attr->pcidev.device_id;
    gpu.location = locate(topology, pci);
    gpu.name = gpu.location.busId;
    for (hwloc_obj_t os = pci->io_first_child; os != nullptr; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE) continue;
      // The OS-device type number changed across hwloc versions (GPU or COPROC): go by name.
      if (startsWith(os->name, "cuda") || startsWith(os->name, "nvml")) {
        if (!gpu.computeVisible || startsWith(os->name, "cuda")) gpu.name = os->name;
        gpu.computeVisible = true;
      }
    }
    node->gpus.push_back(gpu);
    gpuObjs->push_back(pci);
  }
}

// hwloc keeps a topology file's osdev_type number unchecked, and loading a number outside the
// enum as the enum is undefined: read the integer that is stored.
int osdevTypeNumber(hwloc_obj_t os) {
  std::underlying_type_t<hwloc_obj_osdev_type_t> number;
  std::memcpy(&number, &os->attr->osdev.type, sizeof number);
  return static_cast<int>(number);
}

void collectNetwork(hwloc_topology_t topology, bool live, NodeTopology* node) {
  for (hwloc_obj_t os = hwloc_get_next_osdev(topology, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topology, os)) {
    // A device without a name (a damaged topology file) cannot be told from another.
    if (os->name == nullptr) continue;
    const int type = osdevTypeNumber(os);
    if (type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      node->hcas.push_back(Hca{os->name, locate(topology, os)});
    } else if (type == HWLOC_OBJ_OSDEV_NETWORK) {
      Nic nic;
      nic.name = os->name;
      nic.location = locate(topology, os);
      nic.gbps = live ? sysfsNicGBps(nic.name) : 0;
      nic.infiniband = startsWith(os->name, "ib");
      node->nics.push_back(nic);
    }
  }
  // An interface on the same PCI device as an HCA is InfiniBand or RoCE.
  for (Nic& nic : node->nics) {
    for (const Hca& hca : node->hcas) nic.infiniband |= nic.location.busId == hca.location.busId;
  }
}

// GPU index of a distance-matrix object (an OS device under the GPU, or the PCI device).
int gpuIndexOf(hwloc_obj_t obj, const std::vector<hwloc_obj_t>& gpuObjs) {
  for (hwloc_obj_t up = obj; up != nullptr; up = up->parent) {
    const auto found = std::find(gpuObjs.begin(), gpuObjs.end(), up);
    if (found != gpuObjs.end()) return static_cast<int>(found - gpuObjs.begin());
    if (up->type == HWLOC_OBJ_PCI_DEVICE) break;
  }
  return -1;
}

// GPU-to-GPU NVLink bandwidth from hwloc's NVLinkBandwidth matrix (MB/s). Through NVSwitches
// every GPU reaches every other at its injection bandwidth (the sum of its links into the
// fabric), so a pair gets the smaller of the two; direct links count as given.
bool hwlocNvlinkMatrix(hwloc_topology_t topology, const std::vector<hwloc_obj_t>& gpuObjs,
                       std::vector<std::vector<double>>* gbps) {
  unsigned count = 1;
  hwloc_distances_s* distances = nullptr;
  if (hwloc_distances_get_by_name(topology, "NVLinkBandwidth", &count, &distances, 0) != 0 ||
      count == 0) {
    return false;
  }
  const size_t n = gpuObjs.size();
  gbps->assign(n, std::vector<double>(n, 0.0));
  std::vector<double> injection(n, 0.0);
  bool switched = false;
  const unsigned objects = distances->nbobjs;
  for (unsigned i = 0; i < objects; ++i) {
    const int a = gpuIndexOf(distances->objs[i], gpuObjs);
    if (a < 0) continue;
    for (unsigned j = 0; j < objects; ++j) {
      const double value = static_cast<double>(distances->values[i * objects + j]) / 1000.0;
      if (i == j || value <= 0) continue;
      const int b = gpuIndexOf(distances->objs[j], gpuObjs);
      if (b >= 0) {
        (*gbps)[a][b] += value;
      } else {
        switched = switched || (distances->objs[j]->type == HWLOC_OBJ_PCI_DEVICE &&
                                isNvswitch(distances->objs[j]));
        injection[a] += value;
      }
    }
  }
  hwloc_distances_release(topology, distances);
  if (switched) {
    for (size_t a = 0; a < n; ++a) {
      for (size_t b = 0; b < n; ++b) {
        if (a != b) (*gbps)[a][b] += std::min(injection[a], injection[b]);
      }
    }
  }
  return true;
}

void classifyLinks(const TopologyOptions& options, NodeTopology* node) {
  double slowestNvlink = 0;
  for (size_t a = 0; a < node->nvlinkGBps.size(); ++a) {
    double best = 0;
    for (double v : node->nvlinkGBps[a]) best = std::max(best, v);
    slowestNvlink = a == 0 ? best : std::min(slowestNvlink, best);
  }
  if (!node->gpus.empty() && slowestNvlink > 0) {
    node->intraNode = LinkClass::kNvlink;
    node->intraNodeGBps = slowestNvlink;
  } else if (!node->gpus.empty()) {
    node->intraNode = LinkClass::kPcie;
    node->intraNodeGBps = kPcieGBps;
  } else {
    node->intraNode = LinkClass::kShm;
    node->intraNodeGBps = kShmGBps;
  }
  double fastestNic = 0;
  for (const Nic& nic : node->nics) fastestNic = std::max(fastestNic, nic.gbps);
  if (!node->hcas.empty()) {
    node->interNode = LinkClass::kInfiniband;
    double rate = 0;
    for (const Hca& hca : node->hcas)
      rate = std::max(rate, node->source == "live" ? sysfsHcaGBps(hca.name) : 0);
    node->interNodeGBps = rate > 0 ? rate : kInfinibandGBps;
    node->interNodeRails = static_cast<int>(node->hcas.size());
    node->interNodeNote = rate > 0 ? "HCA port rate" : "HCA rate unknown: 100 Gb/s assumed";
  } else {
    node->interNode = LinkClass::kEthernet;
    node->interNodeGBps = fastestNic > 0 ? fastestNic : kEthernetGBps;
    node->interNodeNote = node->nics.empty() ? "no NIC found: 10 GbE assumed"
                          : fastestNic > 0   ? "NIC speed from sysfs"
                                             : "NIC speed unknown: 10 GbE assumed";
  }
  if (options.intraNodeGBps > 0) node->intraNodeGBps = options.intraNodeGBps;
  if (options.interNodeGBps > 0) {
    node->interNodeGBps = options.interNodeGBps;
    node->interNodeNote = "ZCCL_INTER_NODE_GBPS";
  }
  applyFabricShape(options.fabric, node);
}

}  // namespace

const char* hostCpuModel() {
  static const std::string model = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (line.rfind("model name", 0) != 0) continue;
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
    return std::string("unknown");
  }();
  return model.c_str();
}

const char* linkClassName(LinkClass link) {
  switch (link) {
    case LinkClass::kSelf:
      return "SELF";
    case LinkClass::kShm:
      return "SHM";
    case LinkClass::kPcie:
      return "PCIE";
    case LinkClass::kNvlink:
      return "NVLINK";
    case LinkClass::kEthernet:
      return "ETH";
    case LinkClass::kInfiniband:
      return "IB";
  }
  return "?";
}

Status topologyOptionsFromEnvironment(TopologyOptions* options) {
  if (const auto file = envString("ZCCL_TOPO_FILE")) options->xmlPath = *file;
  std::optional<double> intra;
  ZCCL_CHECK(envDouble("ZCCL_INTRA_NODE_GBPS", 1e-3, 1e6, &intra));
  if (intra) options->intraNodeGBps = *intra;
  std::optional<double> inter;
  ZCCL_CHECK(envDouble("ZCCL_INTER_NODE_GBPS", 1e-3, 1e6, &inter));
  if (inter) options->interNodeGBps = *inter;
  if (const auto fabric = envString("ZCCL_FABRIC")) {
    ZCCL_CHECK(parseFabricShape(*fabric, "ZCCL_FABRIC", &options->fabric));
  }
  return Status::kSuccess;
}

Status parseFabricShape(const std::string& text, const char* what, FabricShape* fabric) {
  FabricShape parsed = *fabric;
  double nodesPerLeaf = parsed.nodesPerLeaf, leavesPerPod = parsed.leavesPerPod;
  ZCCL_CHECK(parseNamedNumbers(text, what,
                               {{"nodes-per-leaf", &nodesPerLeaf, "one switch", true},
                                {"oversubscription", &parsed.oversubscription},
                                {"leaves-per-pod", &leavesPerPod, "no pods", true},
                                {"pod-oversubscription", &parsed.podOversubscription}}));
  parsed.nodesPerLeaf = static_cast<int>(nodesPerLeaf);
  parsed.leavesPerPod = static_cast<int>(leavesPerPod);
  ZCCL_CHECK(checkPodsHaveLeaves(parsed.leavesPerPod, parsed.nodesPerLeaf, what));
  if (parsed.oversubscription < 1 || parsed.podOversubscription < 1) {
    return fail(Status::kInvalidArgument,
                "%s=%s: oversubscription K:1 takes K >= 1 (a switch carries at most what its "
                "ports do)",
                what, text.c_str());
  }
  *fabric = parsed;
  return Status::kSuccess;
}

Status checkPodsHaveLeaves(int leavesPerPod, int nodesPerLeaf, const char* what) {
  if (leavesPerPod > 0 && nodesPerLeaf == 0) {
    return fail(Status::kInvalidArgument,
                "%s: leaves-per-pod=%d needs leaves: give nodes-per-leaf too (it is 0, one "
                "switch for every node)",
                what, leavesPerPod);
  }
  return Status::kSuccess;
}

std::string describeFabricShape(const FabricShape& f) {
  char text[160];
  const int used =
      f.nodesPerLeaf > 0
          ? std::snprintf(text, sizeof(text), "leaves of %d nodes, uplinks %g:1", f.nodesPerLeaf,
                          f.oversubscription)
          : std::snprintf(text, sizeof(text), "one switch, ports %g:1", f.oversubscription);
  if (f.leavesPerPod > 0 && used > 0 && static_cast<size_t>(used) < sizeof(text)) {
    std::snprintf(text + used, sizeof(text) - static_cast<size_t>(used),
                  ", pods of %d leaves, core links %g:1", f.leavesPerPod, f.podOversubscription);
  }
  return text;
}

void applyFabricShape(const FabricShape& fabric, NodeTopology* node) {
  const bool leaves = fabric.nodesPerLeaf > 0;
  if (!leaves) node->interNodeGBps /= fabric.oversubscription;
  node->interNodeFabricShare = leaves ? std::min(1.0, 1 / fabric.oversubscription) : 1;
  node->nodesPerLeaf = fabric.nodesPerLeaf;
  node->nodesPerPod = fabric.nodesPerLeaf * fabric.leavesPerPod;
  node->podFabricShare = std::min(1.0, 1 / fabric.podOversubscription);
  node->fabric = fabric;
}

namespace {

// Loads this machine (path empty) or a topology file, I/O devices included: true when hwloc
// takes it.
bool load(hwloc_topology_t topology, const std::string& path) {
  hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_ALL);
  // Displays (gl: X11 connections) and OpenCL devices say nothing about links, and probing
  // them took half of a communicator's setup.
  hwloc_topology_set_components(topology, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
  hwloc_topology_set_components(topology, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
  if (!path.empty() && hwloc_topology_set_xml(topology, path.c_str()) != 0) return false;
  return hwloc_topology_load(topology) == 0;
}

// A malformed file can crash hwloc itself (seen: hwloc 2.9, SEGV in
// hwloc_bitmap_compare_first, found by fuzzing), so a child process parses it first.
Status checkFileInChild(const std::string& path) {
  const pid_t child = fork();
  if (child < 0) return fail(Status::kSystemError, "fork: %s", std::strerror(errno));
  if (child == 0) {
    // A crash here is the answer, not an event for the application's (or a tool's) handlers.
    for (const int deadly : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) signal(deadly, SIG_DFL);
    hwloc_topology_t topology;
    const bool loaded = hwloc_topology_init(&topology) == 0 && load(topology, path);
    _exit(loaded ? 0 : 1);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return fail(Status::kInvalidArgument,
                "ZCCL_TOPO_FILE=%s: not a topology hwloc can read (parsing it killed hwloc with "
                "signal %d)",
                path.c_str(), WTERMSIG(status));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return fail(Status::kInvalidArgument, "ZCCL_TOPO_FILE=%s: not a topology hwloc can read",
                path.c_str());
  }
  return Status::kSuccess;
}

}  // namespace

Status discoverTopology(const TopologyOptions& options, NodeTopology* node) {
  const bool live = options.xmlPath.empty();
  if (!live) ZCCL_CHECK(checkFileInChild(options.xmlPath));
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0)
    return fail(Status::kSystemError, "hwloc_topology_init failed");
  if (!load(topology, options.xmlPath)) {
    hwloc_topology_destroy(topology);
    return live ? fail(Status::kSystemError, "hwloc cannot read this machine's topology")
                : fail(Status::kInvalidArgument, "ZCCL_TOPO_FILE=%s: not a topology hwloc can read",
                       options.xmlPath.c_str());
  }
  *node = NodeTopology{};
  node->source = live ? "live" : options.xmlPath;
  node->numaNodes = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_NUMANODE);
  std::vector<hwloc_obj_t> gpuObjs;
  collectPci(topology, node, &gpuObjs);
  collectNetwork(topology, live, node);
  if (hwlocNvlinkMatrix(topology, gpuObjs, &node->nvlinkGBps)) {
    node->nvlinkSource = "hwloc NVLinkBandwidth";
  } else if (live && options.useNvml && !node->gpus.empty() &&
             nvmlNvlinkMatrix(node->gpus, &node->nvlinkGBps)) {
    node->nvlinkSource = "NVML";
  }
  hwloc_topology_destroy(topology);
  classifyLinks(options, node);
  ZCCL_LOG(kInfo,
           "topology %s: %zu GPUs, %d NVSwitches, %zu NICs, %zu HCAs, %d NUMA nodes; "
           "intra-node %s %.1f GB/s, inter-node %s %.2f GB/s (%s); fabric: %s",
           node->source.c_str(), node->gpus.size(), node->nvswitches, node->nics.size(),
           node->hcas.size(), node->numaNodes, linkClassName(node->intraNode), node->intraNodeGBps,
           linkClassName(node->interNode), node->interNodeGBps, node->interNodeNote.c_str(),
           describeFabricShape(options.fabric).c_str());
  return Status::kSuccess;
}

NodeTopology undiscoveredTopology(const TopologyOptions& options) {
  NodeTopology node;
  node.source = "unknown (hwloc could not read the machine)";
  classifyLinks(options, &node);
  return node;
}

const char* pciRelation(const PciLocation& a, const PciLocation& b) {
  if (a.numaNode >= 0 && b.numaNode >= 0 && a.numaNode != b.numaNode) return "SYS";
  size_t common = 0;
  while (common < a.path.size() && common < b.path.size() && a.path[common] == b.path[common])
    ++common;
  if (common == 0) return a.numaNode >= 0 && a.numaNode == b.numaNode ? "NODE" : "SYS";
  if (common == 1) return "PHB";  // only the host bridge in common
  return a.path.size() == common && b.path.size() == common ? "PIX" : "PXB";
}

}  // namespace zccl
