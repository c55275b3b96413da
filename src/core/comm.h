// The communicator behind zcclComm_t: transport, node map, configuration, statistics and
// scratch memory of one group of ranks.
#pragma once

#include <memory>
#include <string>

#include "collectives/collectives.h"
#include "common/scratch.h"
#include "topology/node_map.h"
#include "transport/transport.h"
#include "zccl/zccl.h"

struct CommConfig {
  zccl::Algorithm algorithm = zccl::Algorithm::kAuto;
  int ranksPerNode = 0;  // 0: nodes are hosts
  double timeoutSeconds = 1800;
};

struct zcclComm {
  std::unique_ptr<zccl::Transport> transport;
  zccl::NodeMap nodes;
  CommConfig config;
  zccl::ScratchPool scratch;
  std::string lastError;
  uint64_t nativeBytesEstimated = 0;
  uint64_t nativeCalls = 0;

  int rank() const { return transport->rank(); }
  int size() const { return transport->size(); }
  zccl::Context context() { return zccl::Context{*transport, scratch}; }
  zccl::CollectiveOptions options() const { return zccl::CollectiveOptions{config.algorithm}; }
  zcclLinkClass_t linkTo(int peer) const;
};

namespace zccl {

// Resolves `config` (may be null) over the ZCCL_* environment and the defaults.
Status resolveConfig(const zcclConfig* config, CommConfig* resolved);

}  // namespace zccl
