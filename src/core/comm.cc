#include "core/comm.h"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "common/log.h"

zcclLinkClass_t zcclComm::linkTo(int peer) const {
  if (peer == rank()) return zcclLinkSelf;
  return nodes.sameNode(peer, rank()) ? zcclLinkIntraNode : zcclLinkInterNode;
}

std::vector<zccl::PeerTraffic> zcclComm::trafficByPeer() const {
  std::vector<zccl::PeerTraffic> all = transport->traffic();
  const auto fold = [&](const zccl::Transport& level, auto parentOf) {
    const auto& traffic = level.traffic();
    for (size_t member = 0; member < traffic.size(); ++member) {
      zccl::PeerTraffic& into = all[static_cast<size_t>(parentOf(static_cast<int>(member)))];
      into.bytes += traffic[member].bytes;
      into.messages += traffic[member].messages;
    }
  };
  if (hasLevels()) {
    fold(*nodeTransport, [&](int local) { return levels.rankAt(levels.myNode, local); });
    fold(*crossTransport, [&](int node) { return levels.rankAt(node, levels.myLocal); });
  }
  return all;
}

void zcclComm::resetTraffic() {
  transport->resetTraffic();
  if (hasLevels()) {
    nodeTransport->resetTraffic();
    crossTransport->resetTraffic();
  }
  native = zccl::NativeCounters{};
}

namespace zccl {
namespace {

// Every rank's host identity over the control channel, then the map (collective).
Status discoverNodes(zcclComm* comm) {
  const uint64_t mine = localHostIdentity();
  std::vector<uint64_t> hosts(static_cast<size_t>(comm->size()));
  ZCCL_CHECK(comm->transport->allGatherControl(&mine, sizeof(mine), hosts.data()));
  comm->nodes = nodeMapFromHosts(hosts, comm->config.ranksPerNode);
  return Status::kSuccess;
}

void announceEmulation(const zcclComm& comm) {
  static std::atomic<bool> announced{false};
  if (comm.config.ranksPerNode <= 0 || comm.rank() != 0 || announced.exchange(true)) return;
  // Printed once per process whatever ZCCL_DEBUG says: byte counts per link class mean
  // something else under emulation.
  logMessage(LogLevel::kWarn,
             "ZCCL_RANKS_PER_NODE=%d: emulating %d nodes of up to %d consecutive ranks; "
             "intra/inter-node statistics follow this map, not the hardware",
             comm.config.ranksPerNode, comm.nodes.numNodes(), comm.config.ranksPerNode);
}

// Creates the node and cross-node transports when the nodes are of equal size (collective).
Status buildLevels(zcclComm* comm) {
  const NodeMap& nodes = comm->nodes;
  if (!nodes.isUniform()) return Status::kSuccess;  // every rank agrees: same map
  const int me = comm->rank();
  NodeLevels& levels = comm->levels;
  levels.numNodes = nodes.numNodes();
  levels.ranksPerNode = nodes.localSize(me);
  levels.myNode = nodes.nodeOf(me);
  levels.myLocal = nodes.localRank(me);
  levels.ranks.clear();
  for (int node = 0; node < levels.numNodes; ++node) {
    for (int local = 0; local < levels.ranksPerNode; ++local) {
      levels.ranks.push_back(nodes.rankAt(node, local));
    }
  }
  ZCCL_CHECK(comm->transport->split(levels.myNode, levels.myLocal, &comm->nodeTransport));
  ZCCL_CHECK(comm->transport->split(levels.myLocal, levels.myNode, &comm->crossTransport));
  levels.node = comm->nodeTransport.get();
  levels.cross = comm->crossTransport.get();
  return Status::kSuccess;
}

}  // namespace

Status localTopology(const NodeTopology** topology) {
  static std::mutex mutex;
  static NodeTopology node;
  static bool discovered = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!discovered) {
    TopologyOptions options;
    ZCCL_CHECK(topologyOptionsFromEnvironment(&options));
    const Status status = discoverTopology(options, &node);
    // A file the user named must load; a live machine hwloc cannot read (a restricted
    // container) still gets a communicator, planned with the default link estimates.
    if (status != Status::kSuccess && !options.xmlPath.empty()) return status;
    if (status != Status::kSuccess) node = undiscoveredTopology(options);
    discovered = true;
  }
  *topology = &node;
  return Status::kSuccess;
}

namespace {

// The cluster model from every rank's topology and the node map (collective).
Status buildClusterModel(zcclComm* comm) {
  const NodeTopology* mine = nullptr;
  ZCCL_CHECK(localTopology(&mine));
  struct Summary {
    int intraClass, interClass;
    double intraGBps, interGBps;
  };
  const Summary local{static_cast<int>(mine->intraNode), static_cast<int>(mine->interNode),
                      mine->intraNodeGBps, mine->interNodeGBps};
  std::vector<Summary> all(static_cast<size_t>(comm->size()));
  ZCCL_CHECK(comm->transport->allGatherControl(&local, sizeof(Summary), all.data()));
  // Every rank plans with the slowest link of each class in the job, so all plans agree.
  NodeTopology slowest;
  slowest.intraNodeGBps = slowest.interNodeGBps = 1e300;
  for (const Summary& s : all) {
    if (s.intraGBps < slowest.intraNodeGBps) {
      slowest.intraNodeGBps = s.intraGBps;
      slowest.intraNode = static_cast<LinkClass>(s.intraClass);
    }
    if (s.interGBps < slowest.interNodeGBps) {
      slowest.interNodeGBps = s.interGBps;
      slowest.interNode = static_cast<LinkClass>(s.interClass);
    }
  }
  const NodeMap& nodes = comm->nodes;
  const int perNode = std::max(1, comm->size() / nodes.numNodes());
  comm->cluster = clusterModel(slowest, nodes.numNodes(), perNode, nodes.isUniform());
  measureQuantRates(&comm->cluster);
  return Status::kSuccess;
}

}  // namespace

Status createComm(std::unique_ptr<Transport> transport, const CommConfig& config, zcclComm** out) {
  auto comm = std::make_unique<zcclComm>();
  comm->config = config;
  comm->transport = std::move(transport);
  ZCCL_CHECK(discoverNodes(comm.get()));
  announceEmulation(*comm);
  ZCCL_CHECK(buildLevels(comm.get()));
  ZCCL_CHECK(buildClusterModel(comm.get()));
  ZCCL_LOG(kInfo,
           "comm %p: rank %d of %d, node %d of %d (local rank %d of %d), algorithm %s, wire %s, "
           "two-level algorithms %s",
           static_cast<void*>(comm.get()), comm->rank(), comm->size(),
           comm->nodes.nodeOf(comm->rank()), comm->nodes.numNodes(),
           comm->nodes.localRank(comm->rank()), comm->nodes.localSize(comm->rank()),
           algorithmName(config.collective.algorithm), wireFormatName(config.collective.wire),
           comm->hasLevels() ? "available" : "unavailable (nodes differ in size)");
  *out = comm.release();
  return Status::kSuccess;
}

Status splitComm(zcclComm* parent, int color, int key, const zcclConfig* config, zcclComm** out) {
  CommConfig resolved = parent->config;
  if (config != nullptr) ZCCL_CHECK(resolveConfig(config, &resolved));
  std::unique_ptr<Transport> child;
  ZCCL_CHECK(parent->transport->split(color, key, &child));
  *out = nullptr;
  if (!child) return Status::kSuccess;
  auto comm = std::make_unique<zcclComm>();
  comm->config = resolved;
  comm->transport = std::move(child);
  const int parentRank = parent->rank();
  std::vector<int> parentRanks(static_cast<size_t>(comm->size()));
  ZCCL_CHECK(comm->transport->allGatherControl(&parentRank, sizeof(int), parentRanks.data()));
  comm->nodes = parent->nodes.subset(parentRanks);
  ZCCL_CHECK(buildLevels(comm.get()));
  ZCCL_CHECK(buildClusterModel(comm.get()));
  *out = comm.release();
  return Status::kSuccess;
}

Status cachedSplit(zcclComm* parent, bool crossNode, zcclComm** out) {
  std::unique_ptr<zcclComm>& cached = crossNode ? parent->crossComm : parent->nodeComm;
  if (!cached) {
    const int me = parent->rank();
    const int node = parent->nodes.nodeOf(me);
    const int local = parent->nodes.localRank(me);
    zcclComm* created = nullptr;
    ZCCL_CHECK(crossNode ? splitComm(parent, local, node, nullptr, &created)
                         : splitComm(parent, node, me, nullptr, &created));
    created->ownedByParent = true;
    cached.reset(created);
  }
  *out = cached.get();
  return Status::kSuccess;
}

}  // namespace zccl
