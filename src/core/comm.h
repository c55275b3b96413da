// The communicator behind zcclComm_t: transport, node map, configuration, statistics and
// scratch memory of one group of ranks.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/cost_model.h"
#include "common/scratch.h"
#include "topology/node_map.h"
#include "transport/transport.h"
#include "zccl/zccl.h"

struct CommConfig {
  zccl::CollectiveOptions collective;  // defaults of every collective call
  int ranksPerNode = 0;                // 0: nodes are hosts
  double timeoutSeconds = 1800;
};

struct zcclComm {
  std::unique_ptr<zccl::Transport> transport;
  zccl::NodeMap nodes;
  CommConfig config;
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
  zccl::Context context() {
    return zccl::Context{*transport, scratch, hasLevels() ? &levels : nullptr, native, &cluster};
  }
  zcclLinkClass_t linkTo(int peer) const;
  // This rank's traffic per parent peer: its own transport's plus the level transports'.
  std::vector<zccl::PeerTraffic> trafficByPeer() const;
  void resetTraffic();
};

namespace zccl {

// Resolves `config` (may be null) over the ZCCL_* environment and the defaults.
Status resolveConfig(const zcclConfig* config, CommConfig* resolved);

// The options of one call: `options` (may be null) over the communicator's defaults.
Status resolveCollOptions(const zcclCollOptions* options, const CommConfig& config,
                          CollectiveOptions* resolved);

// Creates the node and cross-node transports when the nodes are of equal size (collective).
Status buildLevels(zcclComm* comm);

// This process's node topology (discovered once: the live machine or ZCCL_TOPO_FILE).
Status localTopology(const NodeTopology** topology);

// The cluster model from every rank's topology and the node map (collective).
Status buildClusterModel(zcclComm* comm);

}  // namespace zccl
