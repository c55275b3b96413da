#include "collectives/planner.h"

#include <mutex>
#include <set>
#include <tuple>

#include "collectives/cost_model.h"
#include "common/log.h"

namespace zccl {
namespace {

// Reduce-scatter (and so all-reduce) has both forms. The direct form rounds half-precision
// sums once, in rank order, for the same bytes on the wire, so it is the default there;
// float32/64 and integers take the ring, whose single peer per step scales to many ranks.
Algorithm reduceScatterDefault(DataType type) {
  return isHalfPrecision(type) ? Algorithm::kDirect : Algorithm::kRing;
}

}  // namespace

Algorithm flatAlgorithm(Collective collective, DataType type, Algorithm requested) {
  if (requested == Algorithm::kNative) return Algorithm::kNative;
  switch (collective) {
    case Collective::kReduceScatter:
    case Collective::kAllReduce:
      return requested == Algorithm::kAuto ? reduceScatterDefault(type) : requested;
    case Collective::kAllGather:
      return Algorithm::kRing;
    case Collective::kBroadcast:
      return Algorithm::kPipelined;
    case Collective::kAllToAll:
      return Algorithm::kPairwise;
  }
  return Algorithm::kAuto;
}

bool hasTwoLevelForm(Collective collective) {
  return collective == Collective::kAllGather || collective == Collective::kReduceScatter ||
         collective == Collective::kAllReduce;
}

Plan pathFor(Collective collective, Algorithm flat, WireFormat wire, bool twoLevel) {
  Plan plan{flat, wire};
  if (wire != WireFormat::kNone) {
    plan.algorithm = collective == Collective::kAllGather ? Algorithm::kRing : Algorithm::kDirect;
  }
  if (twoLevel) plan.algorithm = Algorithm::kTwoLevel;
  return plan;
}

namespace {

bool wantsTwoLevel(const CollectiveOptions& options, const NodeLevels* levels) {
  if (levels == nullptr || options.hierarchy == Hierarchy::kFlat) return false;
  if (options.hierarchy == Hierarchy::kTwoLevel) return true;
  return options.algorithm == Algorithm::kAuto && levels->numNodes > 1 && levels->ranksPerNode > 1;
}

void logOnce(Collective collective, DataType type, size_t bytes, const CollectiveOptions& options,
             const Plan& plan) {
  if (!logEnabled(LogLevel::kInfo)) return;
  static std::mutex mutex;
  static std::set<std::tuple<int, int, int, int>> seen;
  int sizeClass = 0;
  while ((bytes >> sizeClass) > 1) ++sizeClass;  // log2 of the size
  std::lock_guard<std::mutex> lock(mutex);
  const auto key =
      std::make_tuple(static_cast<int>(collective) * 16 + static_cast<int>(type), sizeClass,
                      static_cast<int>(plan.algorithm), static_cast<int>(plan.wire));
  if (!seen.insert(key).second) return;
  ZCCL_LOG(kInfo, "plan %s %s ~2^%d bytes: %s, wire %s (requested %s, wire %s)",
           collectiveName(collective), dataTypeName(type), sizeClass, algorithmName(plan.algorithm),
           wireFormatName(plan.wire), algorithmName(options.algorithm),
           wireFormatName(options.wire));
}

}  // namespace

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kReduceScatter:
      return "reduce-scatter";
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllToAll:
      return "all-to-all";
  }
  return "unknown";
}

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kNative:
      return "native";
    case Algorithm::kPairwise:
      return "pairwise";
    case Algorithm::kPipelined:
      return "pipelined";
    case Algorithm::kTwoLevel:
      return "two-level";
  }
  return "unknown";
}

const char* wireFormatName(WireFormat wire) {
  switch (wire) {
    case WireFormat::kNone:
      return "none";
    case WireFormat::kInt8:
      return "int8";
    case WireFormat::kInt4:
      return "int4";
  }
  return "unknown";
}

bool wireApplies(Collective collective, DataType type, RedOp op) {
  const bool floating =
      type == DataType::kFloat32 || type == DataType::kFloat16 || type == DataType::kBfloat16;
  switch (collective) {
    case Collective::kAllGather:
      return floating;
    case Collective::kReduceScatter:
    case Collective::kAllReduce:
      return floating && (op == RedOp::kSum || op == RedOp::kAvg);
    default:
      return false;
  }
}

Plan planCollective(Collective collective, DataType type, RedOp op, size_t bytes,
                    const CollectiveOptions& options, const NodeLevels* levels,
                    const ClusterModel* cluster) {
  Plan plan{Algorithm::kAuto, WireFormat::kNone};
  if (cluster != nullptr && options.algorithm == Algorithm::kAuto) {
    ClusterModel model = *cluster;
    model.uniform = model.uniform && levels != nullptr;
    plan = cheapestPlan(model, collective, type, op, bytes, options);
  } else {
    const bool forcedWire = options.wire != WireFormat::kNone && !options.wireAllowedOnly &&
                            wireApplies(collective, type, op);
    plan = pathFor(collective, flatAlgorithm(collective, type, options.algorithm),
                   forcedWire ? options.wire : WireFormat::kNone,
                   hasTwoLevelForm(collective) && wantsTwoLevel(options, levels));
  }
  logOnce(collective, type, bytes, options, plan);
  return plan;
}

}  // namespace zccl
