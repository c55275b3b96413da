// The communicator behind zcclComm_t: transport, node map, configuration, statistics and
// scratch memory of one group of ranks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/cost_model.h"
#include "common/scratch.h"
#include "core/config.h"
#include "topology/node_map.h"
#include "transport/transport.h"
#include "zccl/zccl.h"

struct zcclComm {
  std::unique_ptr<zccl::Transport> transport;
  zccl::NodeMap nodes;
  zccl::CommConfig config;
  zccl::ScratchPool scratch;
  std::string lastError;
  zccl::NativeCounters native;
  // Two-level algorithms run over these, when every node holds the same number of ranks.
  std::unique_ptr<zccl::Transport> nodeTransport;
  std::unique_ptr<zccl::Transport> crossTransport;
  zccl::NodeLevels levels;
  // The planner's view of the job, from every rank's topology.
  zccl::ClusterModel cluster;
  // zcclCommSplitNode / zcclCommSplitCrossNode, created on first use and owned here.
  std::unique_ptr<zcclComm> nodeComm;
  std::unique_ptr<zcclComm> crossComm;
  bool ownedByParent = false;

  int rank() const { return transport->rank(); }
  int size() const { return transport->size(); }
  bool hasLevels() const { return nodeTransport != nullptr; }
  zccl::Context context(zccl::MemoryKind memory) {
    return zccl::Context{
        *transport,          scratch, hasLevels() ? &levels : nullptr, native, &cluster, memory,
        zccl::kCollectiveTag};
  }
  zcclLinkClass_t linkTo(int peer) const;
  // This rank's traffic per parent peer: its own transport's plus the level transports'.
  std::vector<zccl::PeerTraffic> trafficByPeer() const;
  void resetTraffic();
};

namespace zccl {

// A communicator over `transport`, whichever engine moves its bytes (collective over the
// transport's ranks): node map from every rank's host, node levels, cluster model.
Status createComm(std::unique_ptr<Transport> transport, const CommConfig& config, zcclComm** out);

// Ranks of `parent` with the same color >= 0 form a new communicator ordered by (key, rank);
// color < 0 gives *out = nullptr. `config` (may be null) over the parent's configuration.
Status splitComm(zcclComm* parent, int color, int key, const zcclConfig* config, zcclComm** out);

// The cached node or cross-node sub-communicator of `parent`, created on first use.
Status cachedSplit(zcclComm* parent, bool crossNode, zcclComm** out);

// This process's node topology (discovered once: the live machine or ZCCL_TOPO_FILE).
Status localTopology(const NodeTopology** topology);

}  // namespace zccl
