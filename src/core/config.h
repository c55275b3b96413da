// A communicator's configuration: zcclConfig over the ZCCL_* environment over the defaults,
// and the options of one call over the communicator's.
#pragma once

#include "collectives/paths.h"
#include "common/status.h"
#include "zccl/zccl.h"

namespace zccl {

struct CommConfig {
  CollectiveOptions collective;  // defaults of every collective call
  int ranksPerNode = 0;          // 0: nodes are hosts
  double timeoutSeconds = 1800;
};

// Resolves `config` (may be null) over the ZCCL_* environment and the defaults.
Status resolveConfig(const zcclConfig* config, CommConfig* resolved);

// The options of one call: `options` (may be null) over the communicator's defaults.
Status resolveCollOptions(const zcclCollOptions* options, const CommConfig& config,
                          CollectiveOptions* resolved);

}  // namespace zccl
