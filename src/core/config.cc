// Resolving a communicator's configuration and a call's options (config.h).
#include "core/config.h"

#include <strings.h>

#include <optional>
#include <string>

#include "common/env.h"
#include "core/validate.h"
#include "zccl/zccl.h"

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
constexpr Named<TransportKind> kTransportNames[] = {
    {"auto", TransportKind::kAuto}, {"mpi", TransportKind::kMpi}, {"ucx", TransportKind::kUcx}};
constexpr Named<DeviceBackend> kDeviceBackendNames[] = {{"auto", DeviceBackend::kAuto},
                                                        {"staged", DeviceBackend::kStaged},
                                                        {"nccl", DeviceBackend::kNccl}};
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

// zcclWireFormat_t: none, int8, int4 and int2 are forced; the "allow" forms leave the choice
// to the planner's cost model.
void setWire(int value, CollectiveOptions* o) {
  o->wireAllowedOnly = value == zcclWireAllowInt8 || value == zcclWireAllowInt4;
  o->wire = value == zcclWireInt8 || value == zcclWireAllowInt8   ? WireFormat::kInt8
            : value == zcclWireInt4 || value == zcclWireAllowInt4 ? WireFormat::kInt4
            : value == zcclWireInt2                               ? WireFormat::kInt2
                                                                  : WireFormat::kNone;
}

// The quantization and hierarchy fields, shared by zcclConfig and zcclCollOptions (whose wire
// formats differ in kind: a policy's, or the call's own).
struct CollFields {
  int quantScheme, quantGroupSize, stochasticRounding, hierarchy, smoothing;
};

// The wire format `policy` gives a call of `collective` whose buffer is `bytes` long.
int policyFormat(const zcclWirePolicy& policy, Collective collective, size_t bytes) {
  if (bytes < policy.minBytes) return zcclWireNone;
  switch (collective) {
    case Collective::kAllGather:
      return policy.allGather;
    case Collective::kReduceScatter:
      return policy.reduceScatter;
    case Collective::kAllReduce:
    case Collective::kReduce:
      return policy.allReduce;
    default:
      return zcclWireNone;
  }
}

// A zcclWireFormat_t from the environment: its name.
Status parseWire(const char* variable, const std::string& text, int* format) {
  zcclWireFormat_t named = zcclWireNone;
  if (zcclWireFormatFromName(text.c_str(), &named) != zcclSuccess) {
    std::string accepted;
    for (const char* name : kWireFormatNames)
      accepted += (accepted.empty() ? "" : "|") + std::string(name);
    return fail(Status::kInvalidArgument, "%s=%s: expected %s", variable, text.c_str(),
                accepted.c_str());
  }
  *format = named;
  return Status::kSuccess;
}

void setPolicyFormat(int format, zcclWirePolicy* policy) {
  policy->allGather = policy->reduceScatter = policy->allReduce = format;
}

Status applyCollFields(const char* owner, const CollFields& f, CollectiveOptions* o) {
  const std::string prefix(owner);
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
  if (f.smoothing != ZCCL_CONFIG_UNDEF_INT) {
    if (f.smoothing != 0 && f.smoothing != 1) {
      return fail(Status::kInvalidArgument, "%s.smoothing=%d: expected 0 or 1", owner, f.smoothing);
    }
    o->smoothing = f.smoothing == 1;
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
  if (config.blocking != ZCCL_CONFIG_UNDEF_INT) {
    if (config.blocking != 0 && config.blocking != 1) {
      return fail(Status::kInvalidArgument, "config.blocking=%d: expected 0 or 1", config.blocking);
    }
    resolved->blocking = config.blocking == 1;
  }
  if (config.checkCalls != ZCCL_CONFIG_UNDEF_INT) {
    if (config.checkCalls != 0 && config.checkCalls != 1) {
      return fail(Status::kInvalidArgument, "config.checkCalls=%d: expected 0 or 1",
                  config.checkCalls);
    }
    resolved->checkCalls = config.checkCalls == 1;
  }
  int wire = -1;
  ZCCL_CHECK(applyEnumField("config.wireFormat", config.wireFormat, zcclNumWireFormats, &wire));
  if (wire >= 0) setPolicyFormat(wire, &resolved->wirePolicy);
  return applyCollFields(
      "config",
      CollFields{config.quantScheme, config.quantGroupSize, config.stochasticRounding,
                 config.hierarchy, ZCCL_CONFIG_UNDEF_INT},
      &resolved->collective);
}

Status applyEnvironment(CommConfig* result) {
  CollectiveOptions& o = result->collective;
  if (const auto text = envString("ZCCL_ALGO"))
    ZCCL_CHECK(parseNamed("ZCCL_ALGO", *text, kAlgorithmNames, &o.algorithm));
  if (const auto text = envString("ZCCL_QUANT")) {
    int wire = zcclWireNone;
    ZCCL_CHECK(parseWire("ZCCL_QUANT", *text, &wire));
    setPolicyFormat(wire, &result->wirePolicy);
  }
  if (const auto text = envString("ZCCL_QUANT_SCHEME"))
    ZCCL_CHECK(parseNamed("ZCCL_QUANT_SCHEME", *text, kSchemeNames, &o.scheme));
  if (const auto isa = envString("ZCCL_QUANT_ISA");
      isa && *isa != "scalar" && *isa != "avx2" && *isa != "avx512") {
    return fail(Status::kInvalidArgument, "ZCCL_QUANT_ISA=%s: expected scalar|avx2|avx512",
                isa->c_str());
  }
  if (const auto text = envString("ZCCL_TRANSPORT"))
    ZCCL_CHECK(parseNamed("ZCCL_TRANSPORT", *text, kTransportNames, &result->transport));
  if (const auto text = envString("ZCCL_HIERARCHY"))
    ZCCL_CHECK(parseNamed("ZCCL_HIERARCHY", *text, kHierarchyNames, &o.hierarchy));
  if (const auto text = envString("ZCCL_DEVICE_BACKEND")) {
    ZCCL_CHECK(
        parseNamed("ZCCL_DEVICE_BACKEND", *text, kDeviceBackendNames, &result->deviceBackend));
  }
  std::optional<long> chunk;
  ZCCL_CHECK(envInt("ZCCL_STAGED_CHUNK_BYTES", 4096, 1L << 30, &chunk));
  if (chunk) result->stagedChunkBytes = static_cast<size_t>(*chunk);
  std::optional<long> blocking;
  ZCCL_CHECK(envInt("ZCCL_DEVICE_BLOCKING", 0, 1, &blocking));
  if (blocking) result->deviceBlocking = *blocking == 1;
  std::optional<long> blockingCalls;
  ZCCL_CHECK(envInt("ZCCL_BLOCKING", 0, 1, &blockingCalls));
  if (blockingCalls) result->blocking = *blockingCalls == 1;
  std::optional<long> cma;
  ZCCL_CHECK(envInt("ZCCL_UCX_CMA", 0, 1, &cma));
  if (cma) result->ucxCrossMemoryAttach = *cma == 1;
  std::optional<long> tune;
  ZCCL_CHECK(envInt("ZCCL_TUNE", 0, 1, &tune));
  if (tune) result->tunePlans = *tune == 1;
  std::optional<long> group;
  ZCCL_CHECK(envInt("ZCCL_QUANT_GROUP", kMinGroupSize, kMaxGroupSize, &group));
  if (group) {
    o.groupSize = static_cast<uint32_t>(*group);
    if (checkQuantParams(o.quantParams()) != Status::kSuccess) {
      return fail(Status::kInvalidArgument, "ZCCL_QUANT_GROUP=%ld: expected a power of two",
                  *group);
    }
  }
  std::optional<long> smoothing;
  ZCCL_CHECK(envInt("ZCCL_QUANT_SMOOTHING", 0, 1, &smoothing));
  if (smoothing) o.smoothing = *smoothing == 1;
  std::optional<long> stochastic;
  ZCCL_CHECK(envInt("ZCCL_QUANT_STOCHASTIC", 0, 1, &stochastic));
  if (stochastic) o.rounding = *stochastic ? Rounding::kStochastic : Rounding::kNearestEven;
  std::optional<long> ranksPerNode;
  ZCCL_CHECK(envInt("ZCCL_RANKS_PER_NODE", 1, 1 << 20, &ranksPerNode));
  if (ranksPerNode) result->ranksPerNode = static_cast<int>(*ranksPerNode);
  std::optional<double> timeout;
  ZCCL_CHECK(envDouble("ZCCL_TIMEOUT_S", 0, 1e9, &timeout));
  if (timeout) result->timeoutSeconds = *timeout;
  std::optional<long> check;
  ZCCL_CHECK(envInt("ZCCL_CHECK", 0, 1, &check));
  if (check) result->checkCalls = *check == 1;
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
                          Collective collective, size_t bytes, CollectiveOptions* resolved) {
  CollectiveOptions result = config.collective;
  setWire(policyFormat(config.wirePolicy, collective, bytes), &result);
  if (options != nullptr) {
    ZCCL_CHECK(checkHeader("options", options->magic, options->size, ZCCL_COLL_OPTIONS_MAGIC,
                           sizeof(zcclCollOptions), "ZCCL_COLL_OPTIONS_INITIALIZER"));
    int wire = -1;
    ZCCL_CHECK(
        applyEnumField("options.wireFormat", options->wireFormat, zcclNumWireFormats, &wire));
    if (wire >= 0) setWire(wire, &result);
    ZCCL_CHECK(applyCollFields(
        "options",
        CollFields{options->quantScheme, options->quantGroupSize, options->stochasticRounding,
                   options->hierarchy, options->smoothing},
        &result));
    result.seed = options->seed;
  }
  *resolved = result;
  return Status::kSuccess;
}

Status checkWirePolicy(const zcclWirePolicy& policy) {
  const struct {
    const char* name;
    int value;
  } fields[] = {{"policy.allGather", policy.allGather},
                {"policy.reduceScatter", policy.reduceScatter},
                {"policy.allReduce", policy.allReduce}};
  for (const auto& field : fields) {
    if (field.value < 0 || field.value >= zcclNumWireFormats) {
      return fail(Status::kInvalidArgument, "%s=%d: expected a zcclWireFormat_t (0..%d)",
                  field.name, field.value, zcclNumWireFormats - 1);
    }
  }
  return Status::kSuccess;
}

}  // namespace zccl
