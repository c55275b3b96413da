#include "core/comm.h"

#include <strings.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "common/env.h"

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

template <typename Enum>
struct Named {
  const char* name;
  Enum value;
};

// Looks `text` up in `names` (case-insensitive); the error lists what is accepted.
template <typename Enum, size_t N>
Status parseNamed(const char* variable, const std::string& text, const Named<Enum> (&names)[N],
                  Enum* value) {
  std::string accepted;
  for (const auto& entry : names) {
    if (strcasecmp(text.c_str(), entry.name) == 0) {
      *value = entry.value;
      return Status::kSuccess;
    }
    accepted += accepted.empty() ? entry.name : std::string("|") + entry.name;
  }
  return fail(Status::kInvalidArgument, "%s=%s: expected %s", variable, text.c_str(),
              accepted.c_str());
}

constexpr Named<Algorithm> kAlgorithmNames[] = {{"auto", Algorithm::kAuto},
                                                {"ring", Algorithm::kRing},
                                                {"direct", Algorithm::kDirect},
                                                {"native", Algorithm::kNative}};
constexpr Named<int> kWireNames[] = {{"none", zcclWireNone},
                                     {"int8", zcclWireInt8},
                                     {"int4", zcclWireInt4},
                                     {"allow-int8", zcclWireAllowInt8},
                                     {"allow-int4", zcclWireAllowInt4}};
constexpr Named<QuantScheme> kSchemeNames[] = {{"sym", QuantScheme::kSymmetric},
                                               {"asym", QuantScheme::kAsymmetric}};
constexpr Named<Hierarchy> kHierarchyNames[] = {{"auto", Hierarchy::kAuto},
                                                {"flat", Hierarchy::kFlat},
                                                {"two-level", Hierarchy::kTwoLevel},
                                                {"hier", Hierarchy::kTwoLevel}};

// A field of zcclConfig / zcclCollOptions: ZCCL_CONFIG_UNDEF_INT keeps `*value`.
template <typename Enum>
Status applyEnumField(const char* name, int field, int count, Enum* value) {
  if (field == ZCCL_CONFIG_UNDEF_INT) return Status::kSuccess;
  if (field < 0 || field >= count) {
    return fail(Status::kInvalidArgument, "%s=%d: expected 0..%d", name, field, count - 1);
  }
  *value = static_cast<Enum>(field);
  return Status::kSuccess;
}

// zcclWireFormat_t: none, int8 and int4 are forced; the "allow" forms leave the choice to
// the planner's cost model.
void setWire(int value, CollectiveOptions* o) {
  o->wireAllowedOnly = value == zcclWireAllowInt8 || value == zcclWireAllowInt4;
  o->wire = value == zcclWireInt8 || value == zcclWireAllowInt8   ? WireFormat::kInt8
            : value == zcclWireInt4 || value == zcclWireAllowInt4 ? WireFormat::kInt4
                                                                  : WireFormat::kNone;
}

// The quantization and hierarchy fields, shared by zcclConfig and zcclCollOptions.
struct CollFields {
  int wireFormat, quantScheme, quantGroupSize, stochasticRounding, hierarchy;
};

Status applyCollFields(const char* owner, const CollFields& f, CollectiveOptions* o) {
  const std::string prefix(owner);
  int wire = -1;
  ZCCL_CHECK(
      applyEnumField((prefix + ".wireFormat").c_str(), f.wireFormat, zcclNumWireFormats, &wire));
  if (wire >= 0) setWire(wire, o);
  ZCCL_CHECK(applyEnumField((prefix + ".quantScheme").c_str(), f.quantScheme, zcclNumQuantSchemes,
                            &o->scheme));
  ZCCL_CHECK(applyEnumField((prefix + ".hierarchy").c_str(), f.hierarchy, zcclNumHierarchies,
                            &o->hierarchy));
  if (f.stochasticRounding != ZCCL_CONFIG_UNDEF_INT) {
    if (f.stochasticRounding != 0 && f.stochasticRounding != 1) {
      return fail(Status::kInvalidArgument, "%s.stochasticRounding=%d: expected 0 or 1", owner,
                  f.stochasticRounding);
    }
    o->rounding = f.stochasticRounding ? Rounding::kStochastic : Rounding::kNearestEven;
  }
  if (f.quantGroupSize != ZCCL_CONFIG_UNDEF_INT) {
    QuantParams probe = o->quantParams();
    probe.groupSize = static_cast<uint32_t>(f.quantGroupSize);
    if (f.quantGroupSize <= 0 || checkQuantParams(probe) != Status::kSuccess) {
      return fail(Status::kInvalidArgument,
                  "%s.quantGroupSize=%d: expected a power of two in [%u, %u]", owner,
                  f.quantGroupSize, kMinGroupSize, kMaxGroupSize);
    }
    o->groupSize = probe.groupSize;
  }
  return Status::kSuccess;
}

Status checkHeader(const char* owner, unsigned magic, size_t size, unsigned wantMagic,
                   size_t wantSize, const char* initializer) {
  if (magic != wantMagic || size != wantSize) {
    return fail(Status::kInvalidArgument,
                "%s: magic=0x%x size=%zu, expected 0x%x and %zu; initialise it with %s", owner,
                magic, size, wantMagic, wantSize, initializer);
  }
  return Status::kSuccess;
}

Status applyConfig(const zcclConfig& config, CommConfig* resolved) {
  ZCCL_CHECK(checkHeader("config", config.magic, config.size, ZCCL_CONFIG_MAGIC, sizeof(zcclConfig),
                         "ZCCL_CONFIG_INITIALIZER"));
  ZCCL_CHECK(applyEnumField("config.algorithm", config.algorithm, zcclNumAlgos,
                            &resolved->collective.algorithm));
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
  return applyCollFields("config",
                         CollFields{config.wireFormat, config.quantScheme, config.quantGroupSize,
                                    config.stochasticRounding, config.hierarchy},
                         &resolved->collective);
}

Status applyEnvironment(CommConfig* result) {
  CollectiveOptions& o = result->collective;
  if (const auto text = envString("ZCCL_ALGO"))
    ZCCL_CHECK(parseNamed("ZCCL_ALGO", *text, kAlgorithmNames, &o.algorithm));
  if (const auto text = envString("ZCCL_QUANT")) {
    int wire = zcclWireNone;
    ZCCL_CHECK(parseNamed("ZCCL_QUANT", *text, kWireNames, &wire));
    setWire(wire, &o);
  }
  if (const auto text = envString("ZCCL_QUANT_SCHEME"))
    ZCCL_CHECK(parseNamed("ZCCL_QUANT_SCHEME", *text, kSchemeNames, &o.scheme));
  if (const auto text = envString("ZCCL_HIERARCHY"))
    ZCCL_CHECK(parseNamed("ZCCL_HIERARCHY", *text, kHierarchyNames, &o.hierarchy));
  std::optional<long> value;
  ZCCL_CHECK(envInt("ZCCL_QUANT_GROUP", kMinGroupSize, kMaxGroupSize, &value));
  if (value) {
    o.groupSize = static_cast<uint32_t>(*value);
    if (checkQuantParams(o.quantParams()) != Status::kSuccess) {
      return fail(Status::kInvalidArgument, "ZCCL_QUANT_GROUP=%ld: expected a power of two",
                  *value);
    }
  }
  ZCCL_CHECK(envInt("ZCCL_QUANT_STOCHASTIC", 0, 1, &value));
  if (value) o.rounding = *value ? Rounding::kStochastic : Rounding::kNearestEven;
  ZCCL_CHECK(envInt("ZCCL_RANKS_PER_NODE", 1, 1 << 20, &value));
  if (value) result->ranksPerNode = static_cast<int>(*value);
  std::optional<double> timeout;
  ZCCL_CHECK(envDouble("ZCCL_TIMEOUT_S", 0, 1e9, &timeout));
  if (timeout) result->timeoutSeconds = *timeout;
  return Status::kSuccess;
}

}  // namespace

Status resolveConfig(const zcclConfig* config, CommConfig* resolved) {
  CommConfig result;
  ZCCL_CHECK(applyEnvironment(&result));
  if (config != nullptr) ZCCL_CHECK(applyConfig(*config, &result));
  *resolved = result;
  return Status::kSuccess;
}

Status resolveCollOptions(const zcclCollOptions* options, const CommConfig& config,
                          CollectiveOptions* resolved) {
  CollectiveOptions result = config.collective;
  if (options != nullptr) {
    ZCCL_CHECK(checkHeader("options", options->magic, options->size, ZCCL_COLL_OPTIONS_MAGIC,
                           sizeof(zcclCollOptions), "ZCCL_COLL_OPTIONS_INITIALIZER"));
    ZCCL_CHECK(applyCollFields(
        "options",
        CollFields{options->wireFormat, options->quantScheme, options->quantGroupSize,
                   options->stochasticRounding, options->hierarchy},
        &result));
    result.seed = options->seed;
  }
  *resolved = result;
  return Status::kSuccess;
}

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

}  // namespace zccl
