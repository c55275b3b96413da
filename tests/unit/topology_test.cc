// Topology discovery on real machines' hwloc exports (tests/fixtures/topology), counted here
// from the XML text itself; the live machine; and the planner's cost model on synthetic
// clusters.
#include "topology/topology.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "collectives/cost_model.h"
#include "collectives/planner.h"
#include "collectives/registry.h"
#include "common/status.h"

namespace zccl {
namespace {

std::string fixture(const char* name) { return std::string(ZCCL_TOPOLOGY_FIXTURES) + "/" + name; }

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

size_t countMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// What a fixture holds, read from its XML: NVIDIA display/3D-class PCI functions that are not
// NVSwitches, NVSwitch PCI functions, network and OpenFabrics OS devices, NUMA nodes.
struct Expected {
  size_t gpus, nvswitches, nics, hcas, numa;
  bool nvlink;
};

Expected expectedFrom(const std::string& xml) {
  Expected e{};
  const std::regex pci("<object type=\"PCIDev\"[^>]*>");
  for (auto it = std::sregex_iterator(xml.begin(), xml.end(), pci); it != std::sregex_iterator();
       ++it) {
    const std::string tag = it->str();
    const bool nvswitch = tag.find("subtype=\"NVSwitch\"") != std::string::npos;
    e.nvswitches += nvswitch ? 1 : 0;
    e.gpus +=
        !nvswitch && std::regex_search(tag, std::regex("pci_type=\"030[02] \\[10de:")) ? 1 : 0;
  }
  e.nics = countMatches(xml, "<object type=\"OSDev\"[^>]*osdev_type=\"2\"");
  e.hcas = countMatches(xml, "<object type=\"OSDev\"[^>]*osdev_type=\"3\"");
  e.numa = countMatches(xml, "<object type=\"NUMANode\"");
  e.nvlink = xml.find("name=\"NVLinkBandwidth\"") != std::string::npos;
  return e;
}

class Fixtures : public ::testing::TestWithParam<const char*> {};

TEST_P(Fixtures, DetectsWhatTheExportHolds) {
  const std::string path = fixture(GetParam());
  const Expected e = expectedFrom(readFile(path));
  ASSERT_GT(e.numa, 0u) << "could not read " << path;
  TopologyOptions options;
  options.xmlPath = path;
  NodeTopology t;
  ASSERT_EQ(discoverTopology(options, &t), Status::kSuccess) << lastThreadError();
  EXPECT_EQ(t.gpus.size(), e.gpus);
  EXPECT_EQ(static_cast<size_t>(t.nvswitches), e.nvswitches);
  EXPECT_EQ(t.nics.size(), e.nics);
  EXPECT_EQ(t.hcas.size(), e.hcas);
  EXPECT_EQ(static_cast<size_t>(t.numaNodes), e.numa);
  // Link classes follow from what is there.
  const LinkClass intra = e.nvlink     ? LinkClass::kNvlink
                          : e.gpus > 0 ? LinkClass::kPcie
                                       : LinkClass::kShm;
  EXPECT_EQ(t.intraNode, intra);
  EXPECT_EQ(t.interNode, e.hcas > 0 ? LinkClass::kInfiniband : LinkClass::kEthernet);
  EXPECT_EQ(t.lowBandwidth(), !e.nvlink && e.hcas == 0);
  EXPECT_GT(t.intraNodeGBps, 0);
  EXPECT_GT(t.interNodeGBps, 0);
  for (const Gpu& g : t.gpus) EXPECT_FALSE(g.location.busId.empty());
}

INSTANTIATE_TEST_SUITE_P(Topology, Fixtures,
                         ::testing::Values("nvidia-dgx2-16gpu-nvswitch.xml",
                                           "32em64t-2n8c2t-pci-wholeio.xml",
                                           "24em64t-2n6c2t-pci.xml", "96em64t-4n4d3ca2co-pci.xml"));

TEST(Topology, Dgx2GpusReachEachOtherThroughNvswitches) {
  TopologyOptions options;
  options.xmlPath = fixture("nvidia-dgx2-16gpu-nvswitch.xml");
  NodeTopology t;
  ASSERT_EQ(discoverTopology(options, &t), Status::kSuccess);
  ASSERT_EQ(t.nvlinkGBps.size(), t.gpus.size());
  EXPECT_EQ(t.nvlinkSource, "hwloc NVLinkBandwidth");
  // Each V100 has 6 links of 25 GB/s into the switches (the matrix's own entries).
  for (size_t a = 0; a < t.gpus.size(); ++a) {
    for (size_t b = 0; b < t.gpus.size(); ++b) {
      if (a != b) {
        EXPECT_DOUBLE_EQ(t.nvlinkGBps[a][b], 150.0) << a << "," << b;
      }
    }
  }
  EXPECT_DOUBLE_EQ(t.intraNodeGBps, 150.0);
  for (const Gpu& g : t.gpus) EXPECT_TRUE(g.computeVisible) << g.name;  // nvml OS devices
  EXPECT_STREQ(pciRelation(t.gpus[0].location, t.gpus[15].location), "SYS");
}

TEST(Topology, InfinibandInterfaceSitsOnItsHca) {
  TopologyOptions options;
  options.xmlPath = fixture("32em64t-2n8c2t-pci-wholeio.xml");
  NodeTopology t;
  ASSERT_EQ(discoverTopology(options, &t), Status::kSuccess);
  int infiniband = 0, visible = 0;
  for (const Nic& n : t.nics) infiniband += n.infiniband ? 1 : 0;
  for (const Gpu& g : t.gpus) visible += g.computeVisible ? 1 : 0;
  EXPECT_EQ(infiniband, 1) << "ib0";
  EXPECT_EQ(visible, 1) << "cuda0 only";
}

TEST(Topology, OsDevicesWithoutANameAreLeftOut) {
  // Found by fuzzing: a network device without a name (hwloc accepts it) crashed discovery.
  TopologyOptions options;
  options.xmlPath = ZCCL_FUZZ_CORPUS "/topology_xml/nameless-osdev.xml";
  NodeTopology t;
  ASSERT_EQ(discoverTopology(options, &t), Status::kSuccess) << lastThreadError();
  ASSERT_EQ(t.nics.size(), 1u);
  EXPECT_EQ(t.nics[0].name, "eth1");
  EXPECT_TRUE(t.hcas.empty()) << "the HCA has no name either";
}

TEST(Topology, AFileThatCrashesHwlocIsAnErrorNamingTheVariable) {
  // Found by fuzzing: hwloc 2.9 dies (SEGV) parsing this; zccl asks a child process first.
  TopologyOptions options;
  options.xmlPath = ZCCL_FUZZ_CORPUS "/topology_xml/crash-e6e19377e471653571e9f6243e0c8d68f97fd605";
  NodeTopology t;
  EXPECT_EQ(discoverTopology(options, &t), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("ZCCL_TOPO_FILE=" + options.xmlPath), std::string::npos)
      << lastThreadError();
  options.xmlPath = ZCCL_FUZZ_CORPUS "/bootstrap/http";  // not XML at all
  EXPECT_EQ(discoverTopology(options, &t), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("not a topology hwloc can read"), std::string::npos);
}

TEST(Topology, LinkOverridesFromTheEnvironmentAreIndependent) {
  setenv("ZCCL_INTRA_NODE_GBPS", "5", 1);
  TopologyOptions options;
  ASSERT_EQ(topologyOptionsFromEnvironment(&options), Status::kSuccess);
  EXPECT_EQ(options.intraNodeGBps, 5.0);
  EXPECT_EQ(options.interNodeGBps, 0.0) << "ZCCL_INTER_NODE_GBPS is unset";
  unsetenv("ZCCL_INTRA_NODE_GBPS");
  setenv("ZCCL_INTER_NODE_GBPS", "0.125", 1);
  options = TopologyOptions{};
  ASSERT_EQ(topologyOptionsFromEnvironment(&options), Status::kSuccess);
  EXPECT_EQ(options.intraNodeGBps, 0.0);
  EXPECT_EQ(options.interNodeGBps, 0.125);
  unsetenv("ZCCL_INTER_NODE_GBPS");
}

// ZCCL_FABRIC tells the planner what discovery cannot see; a malformed value names itself.
TEST(Topology, FabricFromTheEnvironment) {
  setenv("ZCCL_FABRIC", "nodes-per-leaf=4,oversubscription=3,leaves-per-pod=8", 1);
  TopologyOptions options;
  ASSERT_EQ(topologyOptionsFromEnvironment(&options), Status::kSuccess) << lastThreadError();
  EXPECT_EQ(options.fabric.nodesPerLeaf, 4);
  EXPECT_EQ(options.fabric.oversubscription, 3.0);
  EXPECT_EQ(options.fabric.leavesPerPod, 8);
  EXPECT_EQ(options.fabric.podOversubscription, 1.0) << "not named: the default";
  options.interNodeGBps = 12.5;
  const NodeTopology t = undiscoveredTopology(options);
  EXPECT_DOUBLE_EQ(t.interNodeGBps, 12.5) << "behind leaves a lone flow keeps its port's rate";
  EXPECT_DOUBLE_EQ(t.interNodeFabricShare, 1.0 / 3);
  EXPECT_EQ(t.nodesPerLeaf, 4);
  EXPECT_EQ(t.nodesPerPod, 32);
  EXPECT_EQ(describeFabricShape(options.fabric),
            "leaves of 4 nodes, uplinks 3:1, pods of 8 leaves, core links 1:1");
  for (const char* bad :
       {"nodes-per-leaf=-1", "spines=2", "oversubscription", "oversubscription=0",
        "nodes-per-leaf=2.5", "nodes-per-leaf=1e12", "leaves-per-pod=2", "oversubscription=0.5"}) {
    setenv("ZCCL_FABRIC", bad, 1);
    options = TopologyOptions{};
    EXPECT_EQ(topologyOptionsFromEnvironment(&options), Status::kInvalidArgument) << bad;
    EXPECT_NE(lastThreadError().find("ZCCL_FABRIC"), std::string::npos) << lastThreadError();
  }
  // One switch oversubscribed slows every port.
  setenv("ZCCL_FABRIC", "oversubscription=4", 1);
  options = TopologyOptions{};
  ASSERT_EQ(topologyOptionsFromEnvironment(&options), Status::kSuccess) << lastThreadError();
  options.interNodeGBps = 12.5;
  EXPECT_DOUBLE_EQ(undiscoveredTopology(options).interNodeGBps, 12.5 / 4);
  unsetenv("ZCCL_FABRIC");
}

TEST(Topology, LiveMachineIsClassifiedSensibly) {
  NodeTopology t;
  ASSERT_EQ(discoverTopology(TopologyOptions{}, &t), Status::kSuccess) << lastThreadError();
  EXPECT_EQ(t.source, "live");
  EXPECT_GE(t.numaNodes, 1);
  if (t.gpus.empty()) {
    EXPECT_EQ(t.intraNode, LinkClass::kShm);
  }
  if (t.hcas.empty()) {
    EXPECT_EQ(t.interNode, LinkClass::kEthernet);
  }
  EXPECT_FALSE(t.interNodeNote.empty());
}

TEST(Topology, MissingFileIsAClearError) {
  TopologyOptions options;
  options.xmlPath = "/nonexistent/machine.xml";
  NodeTopology t;
  EXPECT_EQ(discoverTopology(options, &t), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("ZCCL_TOPO_FILE=/nonexistent/machine.xml"), std::string::npos);
}

TEST(Topology, UnreadableMachineFallsBackToDefaultEstimates) {
  TopologyOptions options;
  options.interNodeGBps = 3;
  const NodeTopology t = undiscoveredTopology(options);
  EXPECT_EQ(t.intraNode, LinkClass::kShm);
  EXPECT_EQ(t.interNode, LinkClass::kEthernet);
  EXPECT_GT(t.intraNodeGBps, 0);
  EXPECT_DOUBLE_EQ(t.interNodeGBps, 3.0) << "an override still applies";
}

// ---- planner ----

ClusterModel cluster(int nodes, int perNode, LinkClass intra, double intraGBps, LinkClass inter,
                     double interGBps) {
  ClusterModel c;
  c.nodes = nodes;
  c.ranksPerNode = perNode;
  c.intra = linkModel(intra, intraGBps);
  c.inter = linkModel(inter, interGBps);
  return c;  // the default CPU rates: the plans do not depend on this machine
}

const ClusterModel kNvlinkIb = cluster(2, 8, LinkClass::kNvlink, 150, LinkClass::kInfiniband, 25);
const ClusterModel kTenGbE = cluster(2, 2, LinkClass::kShm, 20, LinkClass::kEthernet, 1.25);
const ClusterModel kOneGbE = cluster(2, 2, LinkClass::kShm, 20, LinkClass::kEthernet, 0.125);
const ClusterModel kOneNode = cluster(1, 8, LinkClass::kShm, 20, LinkClass::kEthernet, 1.25);

CollectiveOptions allowing(WireFormat wire) {
  CollectiveOptions o;
  o.wire = wire;
  o.wireAllowedOnly = true;
  return o;
}

// The chosen plan is no slower, by the model, than any other path the options leave open.
void expectCheapest(const ClusterModel& c, Collective collective, size_t bytes,
                    const CollectiveOptions& options) {
  const Plan chosen = cheapestPlan(c, collective, DataType::kBfloat16, RedOp::kSum, bytes, options);
  const double best = estimateSeconds(c, collective, chosen, bytes, DataType::kBfloat16);
  // Against every other path the registry holds for the collective, exact and quantized.
  for (const AlgorithmRow* row : algorithmRows()) {
    if (row->collective != collective || row->cost == nullptr) continue;
    if (row->levels == 2 && !c.twoLevelAvailable()) continue;
    const Plan other = planOf(*row, row->quantized ? options.wire : WireFormat::kNone, options);
    const double seconds = estimateSeconds(c, collective, other, bytes, DataType::kBfloat16);
    EXPECT_LE(best, seconds * (1 + 1e-12))
        << collectiveName(collective) << " " << bytes << " vs " << algorithmName(row->algorithm);
  }
}

TEST(Planner, ChoicesAreTheCostModelsMinimum) {
  for (const ClusterModel* c : {&kNvlinkIb, &kTenGbE, &kOneGbE, &kOneNode}) {
    for (size_t bytes : {size_t{4} << 10, size_t{1} << 20, size_t{256} << 20}) {
      expectCheapest(*c, Collective::kAllGather, bytes, allowing(WireFormat::kInt8));
      expectCheapest(*c, Collective::kReduceScatter, bytes, allowing(WireFormat::kInt4));
      expectCheapest(*c, Collective::kAllReduce, bytes, allowing(WireFormat::kInt4));
    }
  }
}

TEST(Planner, PathsFollowTheLinks) {
  const size_t big = size_t{256} << 20;
  const auto plan = [&](const ClusterModel& c, Collective col, const CollectiveOptions& o) {
    return cheapestPlan(c, col, DataType::kBfloat16, RedOp::kSum, big, o);
  };
  // Two nodes: large transfers go node by node.
  EXPECT_EQ(plan(kNvlinkIb, Collective::kAllGather, {}).algorithm, Algorithm::kTwoLevel);
  EXPECT_EQ(plan(kTenGbE, Collective::kReduceScatter, {}).algorithm, Algorithm::kTwoLevel);
  // NVLink + InfiniBand: quantizing on the CPU costs more than the bytes it saves.
  EXPECT_EQ(plan(kNvlinkIb, Collective::kReduceScatter, allowing(WireFormat::kInt4)).wire,
            WireFormat::kNone);
  // 1 GbE between nodes: INT4 in two hops wins when allowed, never when not.
  const Plan slow = plan(kOneGbE, Collective::kReduceScatter, allowing(WireFormat::kInt4));
  EXPECT_EQ(slow.wire, WireFormat::kInt4);
  EXPECT_EQ(slow.algorithm, Algorithm::kTwoLevel);
  EXPECT_EQ(plan(kOneGbE, Collective::kReduceScatter, {}).wire, WireFormat::kNone);
  // One node of shared memory: flat, exact.
  const Plan local = plan(kOneNode, Collective::kAllGather, allowing(WireFormat::kInt8));
  EXPECT_EQ(local.algorithm, Algorithm::kRing);
  EXPECT_EQ(local.wire, WireFormat::kNone);
}

// Nodes of 8 GPUs with a rail each: a flat ring crosses nodes through one NIC, the two-level
// path through all eight at once, which the model must see to prefer it at scale.
TEST(Planner, RailsCarryANodesCrossNodeStepTogether) {
  ClusterModel oneRail = cluster(16, 8, LinkClass::kNvlink, 300, LinkClass::kInfiniband, 12.5);
  ClusterModel eightRails = oneRail;
  eightRails.rails = 8;
  const size_t bytes = size_t{8} << 20;
  const CollectiveOptions exact;
  const Plan chosen = cheapestPlan(eightRails, Collective::kAllGather, DataType::kBfloat16,
                                   RedOp::kSum, bytes, exact);
  EXPECT_EQ(chosen.algorithm, Algorithm::kTwoLevel);
  // The same two-level plan costs less with eight rails; a ring's cost does not change.
  const double railed =
      estimateSeconds(eightRails, Collective::kAllGather, chosen, bytes, DataType::kBfloat16);
  EXPECT_LT(railed,
            estimateSeconds(oneRail, Collective::kAllGather, chosen, bytes, DataType::kBfloat16));
  Plan ring = chosen;
  ring.algorithm = Algorithm::kRing;
  ring.row = nullptr;
  EXPECT_EQ(estimateSeconds(eightRails, Collective::kAllGather, ring, bytes, DataType::kBfloat16),
            estimateSeconds(oneRail, Collective::kAllGather, ring, bytes, DataType::kBfloat16));
}

// A two-level path's cross-node step goes to every other node alike: only what leaves a leaf
// (a pod) meets its uplinks (core links), at their share of the rails' rate.
TEST(Planner, OnlyWhatLeavesALeafMeetsItsUplinks) {
  NodeTopology node;
  node.intraNode = LinkClass::kNvlink;
  node.intraNodeGBps = 150;
  node.interNode = LinkClass::kInfiniband;
  node.interNodeGBps = 12.5;
  node.interNodeRails = 8;
  const ClusterModel unknown = clusterModel(node, 8, 8, true);
  applyFabricShape({4, 8, 0, 1}, &node);
  const ClusterModel leaves = clusterModel(node, 8, 8, true);
  applyFabricShape({2, 1, 2, 4}, &node);
  const ClusterModel pods = clusterModel(node, 8, 8, true);
  const CostTerms unknownTerms{unknown, DataType::kFloat32, 0, 0, 0, 0, false};
  const CostTerms leafTerms{leaves, DataType::kFloat32, 0, 0, 0, 0, false};
  const CostTerms podTerms{pods, DataType::kFloat32, 0, 0, 0, 0, false};
  EXPECT_DOUBLE_EQ(unknownTerms.fabricSlowdown(), 1.0);
  // Leaves of 4 of the 8 nodes: 4 of the other 7 nodes lie beyond the leaf, at 1/8 of the rate.
  EXPECT_DOUBLE_EQ(leafTerms.fabricSlowdown(), 4.0 / 7 * 8);
  // Pods of 4 of the 8 nodes behind core links 4:1; leaves 1:1 carry what leaves them.
  EXPECT_DOUBLE_EQ(podTerms.fabricSlowdown(), 4.0 / 7 * 4);
  const size_t bytes = size_t{64} << 20;
  const Plan twoLevel = cheapestPlan(leaves, Collective::kAllGather, DataType::kFloat32,
                                     RedOp::kSum, bytes, CollectiveOptions{});
  ASSERT_EQ(twoLevel.algorithm, Algorithm::kTwoLevel);
  ClusterModel everyByteLeaves = leaves;
  everyByteLeaves.nodesPerLeaf = 0;
  EXPECT_LT(estimateSeconds(leaves, Collective::kAllGather, twoLevel, bytes, DataType::kFloat32),
            estimateSeconds(everyByteLeaves, Collective::kAllGather, twoLevel, bytes,
                            DataType::kFloat32));
}

// Messages posted together wait out the wire's latency side by side; what each costs its ends
// adds up. Over the host's own transports (shared memory, TCP) the CPU moves every message, so
// all of a message's cost is its own: m messages cost m lone ones, as they always did.
TEST(Planner, MessagesPostedTogetherShareTheLatency) {
  for (LinkClass engine : {LinkClass::kNvlink, LinkClass::kInfiniband, LinkClass::kPcie}) {
    const LinkModel link = linkModel(engine, 25);
    EXPECT_GT(link.latencySeconds, link.overheadSeconds) << linkClassName(engine);
    EXPECT_DOUBLE_EQ(CostTerms::step(link, 0, 16), link.latencySeconds + 16 * link.overheadSeconds);
  }
  for (LinkClass host : {LinkClass::kShm, LinkClass::kEthernet}) {
    const LinkModel link = linkModel(host, 1.25);
    EXPECT_DOUBLE_EQ(CostTerms::step(link, 0, 16), 16 * link.loneMessageSeconds())
        << linkClassName(host);
  }
  // 16 nodes of 8 GPUs, 8 rails: a small two-level all-gather posts its 15 cross-node and 112
  // node messages of a row together; the ring's 127 steps follow one another. Simulated
  // (docs/simulation.md) 8 against 303 us at 64 KiB; counting every message's latency in
  // series had priced them alike (382 against 386 us).
  ClusterModel railed = cluster(16, 8, LinkClass::kNvlink, 150, LinkClass::kInfiniband, 12.5);
  railed.rails = 8;
  const size_t bytes = size_t{64} << 10;
  const Plan twoLevel = cheapestPlan(railed, Collective::kAllGather, DataType::kFloat32,
                                     RedOp::kSum, bytes, CollectiveOptions{});
  ASSERT_EQ(twoLevel.algorithm, Algorithm::kTwoLevel);
  Plan ring = twoLevel;
  ring.algorithm = Algorithm::kRing;
  ring.row = nullptr;
  const double ringSeconds =
      estimateSeconds(railed, Collective::kAllGather, ring, bytes, DataType::kFloat32);
  EXPECT_GT(ringSeconds, 127 * railed.inter.loneMessageSeconds());
  EXPECT_LT(estimateSeconds(railed, Collective::kAllGather, twoLevel, bytes, DataType::kFloat32),
            ringSeconds / 4);
}

// Smoothing rotates each group both ways and error feedback decodes every message it sends
// once more: the model charges both, and where the CPU is the bottleneck (one node's shared
// memory) they tip an allowed INT4 reduce-scatter over to the exact path sooner.
TEST(Planner, PricesSmoothingAndErrorFeedback) {
  for (const ClusterModel* c : {&kOneGbE, &kTenGbE, &kOneNode}) {
    for (size_t bytes : {size_t{1} << 20, size_t{64} << 20}) {
      CollectiveOptions plain = allowing(WireFormat::kInt4);
      plain.wireAllowedOnly = false;
      CollectiveOptions smoothed = plain, feedback = plain;
      smoothed.smoothing = true;
      feedback.errorFeedback = true;
      const auto seconds = [&](const CollectiveOptions& o) {
        const Plan plan =
            cheapestPlan(*c, Collective::kReduceScatter, DataType::kFloat32, RedOp::kSum, bytes, o);
        EXPECT_EQ(plan.wire, WireFormat::kInt4);
        return estimateSeconds(*c, Collective::kReduceScatter, plan, bytes, DataType::kFloat32);
      };
      const double base = seconds(plain);
      EXPECT_GT(seconds(smoothed), base) << bytes;
      EXPECT_GT(seconds(feedback), base) << bytes;
    }
  }
  ClusterModel slowCpu = kOneNode;
  slowCpu.kernels.smoothing = 0.05e9;
  CollectiveOptions allowed = allowing(WireFormat::kInt4);
  allowed.smoothing = true;
  const Plan plan = cheapestPlan(slowCpu, Collective::kReduceScatter, DataType::kFloat32,
                                 RedOp::kSum, size_t{64} << 20, allowed);
  EXPECT_EQ(plan.wire, WireFormat::kNone) << "a slow rotation makes the exact path cheaper";
}

TEST(Planner, ForcedChoicesWin) {
  const size_t big = size_t{256} << 20;
  CollectiveOptions forced;
  forced.wire = WireFormat::kInt4;  // asked for, not allowed: used even where it is slower
  EXPECT_EQ(cheapestPlan(kNvlinkIb, Collective::kReduceScatter, DataType::kBfloat16, RedOp::kSum,
                         big, forced)
                .wire,
            WireFormat::kInt4);
  CollectiveOptions flat;
  flat.hierarchy = Hierarchy::kFlat;
  EXPECT_NE(
      cheapestPlan(kNvlinkIb, Collective::kAllGather, DataType::kBfloat16, RedOp::kSum, big, flat)
          .algorithm,
      Algorithm::kTwoLevel);
  // ZCCL_ALGO=ring: the planner by rule, whatever the model would say.
  CollectiveOptions ring;
  ring.algorithm = Algorithm::kRing;
  NodeLevels levels;
  EXPECT_EQ(planCollective(Collective::kReduceScatter, DataType::kFloat32, RedOp::kSum, big, ring,
                           &levels, &kOneGbE)
                .algorithm,
            Algorithm::kRing);
  // Lossy formats never apply where they cannot (integers, max).
  EXPECT_EQ(
      cheapestPlan(kOneGbE, Collective::kReduceScatter, DataType::kInt32, RedOp::kSum, big, forced)
          .wire,
      WireFormat::kNone);
  EXPECT_EQ(cheapestPlan(kOneGbE, Collective::kReduceScatter, DataType::kFloat32, RedOp::kMax, big,
                         forced)
                .wire,
            WireFormat::kNone);
}

}  // namespace
}  // namespace zccl
