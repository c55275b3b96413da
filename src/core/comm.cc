#include "core/comm.h"

#include <strings.h>

#include <cstring>
#include <optional>

#include "common/env.h"

zcclLinkClass_t zcclComm::linkTo(int peer) const {
  if (peer == rank()) return zcclLinkSelf;
  return nodes.sameNode(peer, rank()) ? zcclLinkIntraNode : zcclLinkInterNode;
}

namespace zccl {
namespace {

Status parseAlgorithm(const std::string& text, Algorithm* algorithm) {
  static const struct {
    const char* name;
    Algorithm value;
  } names[] = {{"auto", Algorithm::kAuto},
               {"ring", Algorithm::kRing},
               {"direct", Algorithm::kDirect},
               {"native", Algorithm::kNative}};
  for (const auto& entry : names) {
    if (strcasecmp(text.c_str(), entry.name) == 0) {
      *algorithm = entry.value;
      return Status::kSuccess;
    }
  }
  return fail(Status::kInvalidArgument, "ZCCL_ALGO=%s: expected auto, ring, direct or native",
              text.c_str());
}

Status checkConfigHeader(const zcclConfig& config) {
  if (config.magic != ZCCL_CONFIG_MAGIC || config.size != sizeof(zcclConfig)) {
    return fail(Status::kInvalidArgument,
                "config: magic=0x%x size=%zu, expected 0x%x and %zu; initialise it with "
                "ZCCL_CONFIG_INITIALIZER",
                config.magic, config.size, ZCCL_CONFIG_MAGIC, sizeof(zcclConfig));
  }
  return Status::kSuccess;
}

Status applyConfig(const zcclConfig& config, CommConfig* resolved) {
  ZCCL_CHECK(checkConfigHeader(config));
  if (config.algorithm != ZCCL_CONFIG_UNDEF_INT) {
    if (config.algorithm < 0 || config.algorithm >= zcclNumAlgos) {
      return fail(Status::kInvalidArgument, "config.algorithm=%d: expected a zcclAlgorithm_t",
                  config.algorithm);
    }
    resolved->algorithm = static_cast<Algorithm>(config.algorithm);
  }
  if (config.ranksPerNode != ZCCL_CONFIG_UNDEF_INT) {
    if (config.ranksPerNode < 0) {
      return fail(Status::kInvalidArgument, "config.ranksPerNode=%d: expected >= 0",
                  config.ranksPerNode);
    }
    resolved->ranksPerNode = config.ranksPerNode;
  }
  if (config.timeoutSeconds != ZCCL_CONFIG_UNDEF_DOUBLE) {
    if (!(config.timeoutSeconds >= 0)) {
      return fail(Status::kInvalidArgument, "config.timeoutSeconds=%g: expected >= 0",
                  config.timeoutSeconds);
    }
    resolved->timeoutSeconds = config.timeoutSeconds;
  }
  return Status::kSuccess;
}

}  // namespace

Status resolveConfig(const zcclConfig* config, CommConfig* resolved) {
  CommConfig result;
  if (const auto algo = envString("ZCCL_ALGO"))
    ZCCL_CHECK(parseAlgorithm(*algo, &result.algorithm));
  std::optional<long> ranksPerNode;
  ZCCL_CHECK(envInt("ZCCL_RANKS_PER_NODE", 1, 1 << 20, &ranksPerNode));
  if (ranksPerNode) result.ranksPerNode = static_cast<int>(*ranksPerNode);
  std::optional<double> timeout;
  ZCCL_CHECK(envDouble("ZCCL_TIMEOUT_S", 0, 1e9, &timeout));
  if (timeout) result.timeoutSeconds = *timeout;
  if (config != nullptr) ZCCL_CHECK(applyConfig(*config, &result));
  *resolved = result;
  return Status::kSuccess;
}

}  // namespace zccl
