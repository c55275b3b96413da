// Choosing a collective's path (planner.h).
#include "collectives/planner.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <mutex>
#include <set>
#include <tuple>

#include "collectives/cost_model.h"
#include "collectives/registry.h"
#include "common/log.h"

namespace zccl {
namespace {

bool wantsTwoLevel(const CollectiveOptions& options, const NodeLevels* levels) {
  if (levels == nullptr || options.hierarchy == Hierarchy::kFlat) return false;
  if (options.hierarchy == Hierarchy::kTwoLevel) return true;
  return options.algorithm == Algorithm::kAuto && levels->numNodes > 1 && levels->ranksPerNode > 1;
}

// The preferred row's plan, or none (row == nullptr) when no row serves the path.
Plan preferredPlan(Collective collective, DataType type, MemoryKind memory, WireFormat wire,
                   int levels, const CollectiveOptions& options) {
  const AlgorithmRow* row =
      preferredRow(collective, type, memory, wire != WireFormat::kNone, levels, options.algorithm);
  return row != nullptr ? planOf(*row, wire, options) : Plan{};
}

// Half precision keeps a path whose roundings do not grow with the ranks (it rounds once, or
// once per level) unless a ring that rounds at every hop is estimated this many times faster:
// behind oversubscribed leaves a ring, whose neighbours mostly share a leaf, runs several times
// faster than sends to every node (docs/topology-and-planner.md).
constexpr double kFewRoundingsWorth = 2;

void insertCheapestFirst(const Candidates::Entry& entry, Candidates* all) {
  constexpr int kCapacity = static_cast<int>(std::size(Candidates{}.entries));
  if (all->count == kCapacity) {
    if (entry.seconds >= all->entries[kCapacity - 1].seconds) return;
    --all->count;  // the dearest gives way
  }
  // Among equals, in the order found.
  int at = all->count++;
  for (; at > 0 && all->entries[at - 1].seconds > entry.seconds; --at) {
    all->entries[at] = all->entries[at - 1];
  }
  all->entries[at] = entry;
}

// Drops the paths that round at every hop where another is within kFewRoundingsWorth of them.
void preferFewRoundings(Candidates* all) {
  double fewRoundings = std::numeric_limits<double>::infinity();
  for (int i = 0; i < all->count; ++i) {
    if (!all->entries[i].plan.row->roundsEveryHop) {
      fewRoundings = std::min(fewRoundings, all->entries[i].seconds);
    }
  }
  int kept = 0;
  for (int i = 0; i < all->count; ++i) {
    const Candidates::Entry& entry = all->entries[i];
    if (!entry.plan.row->roundsEveryHop || entry.seconds * kFewRoundingsWorth < fewRoundings) {
      all->entries[kept++] = entry;
    }
  }
  all->count = kept;
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

Candidates candidatePlans(const ClusterModel& cluster, Collective collective, DataType type,
                          RedOp op, size_t bytes, const CollectiveOptions& options,
                          MemoryKind memory) {
  // At most two wire formats by two levels by the rows of each, without allocating: this runs
  // on every call.
  const bool lossyApplies = options.wire != WireFormat::kNone && wireApplies(collective, type, op);
  WireFormat wires[2] = {WireFormat::kNone, options.wire};
  int numWires = 1;
  if (lossyApplies) {
    if (options.wireAllowedOnly) {
      numWires = 2;
    } else {
      wires[0] = options.wire;
    }
  }
  const bool hierarchical = preferredRow(collective, type, memory, false, 2, Algorithm::kAuto);
  int levels[2] = {1, 2};
  int numLevels = 1;
  if (hierarchical && cluster.uniform && options.hierarchy == Hierarchy::kTwoLevel) levels[0] = 2;
  if (hierarchical && cluster.twoLevelAvailable() && options.hierarchy == Hierarchy::kAuto)
    numLevels = 2;

  Candidates all;
  for (int w = 0; w < numWires; ++w) {
    for (int l = 0; l < numLevels; ++l) {
      for (const AlgorithmRow* row : algorithmRows()) {
        if (!row->serves(collective, wires[w] != WireFormat::kNone, levels[l], memory) ||
            row->algorithm == Algorithm::kNative) {
          continue;
        }
        Candidates::Entry entry;
        entry.seconds = estimateSeconds(cluster, collective, planOf(*row, wires[w], options), bytes,
                                        type, &entry.plan);
        insertCheapestFirst(entry, &all);
      }
    }
  }
  if (isHalfPrecision(type)) preferFewRoundings(&all);
  return all;
}

Plan cheapestPlan(const ClusterModel& cluster, Collective collective, DataType type, RedOp op,
                  size_t bytes, const CollectiveOptions& options, MemoryKind memory) {
  const Candidates all = candidatePlans(cluster, collective, type, op, bytes, options, memory);
  return all.count > 0 ? all.entries[0].plan : Plan{};
}

Plan planCollective(Collective collective, DataType type, RedOp op, size_t bytes,
                    const CollectiveOptions& options, const NodeLevels* levels,
                    const ClusterModel* cluster, MemoryKind memory) {
  Plan plan;
  if (cluster != nullptr && options.algorithm == Algorithm::kAuto) {
    ClusterModel model = *cluster;
    model.uniform = model.uniform && levels != nullptr;
    plan = cheapestPlan(model, collective, type, op, bytes, options, memory);
  } else {
    const bool forcedWire = options.wire != WireFormat::kNone && !options.wireAllowedOnly &&
                            wireApplies(collective, type, op);
    const bool twoLevel =
        preferredRow(collective, type, memory, forcedWire, 2, options.algorithm) &&
        wantsTwoLevel(options, levels);
    plan = preferredPlan(collective, type, memory, forcedWire ? options.wire : WireFormat::kNone,
                         twoLevel ? 2 : 1, options);
  }
  logOnce(collective, type, bytes, options, plan);
  return plan;
}

}  // namespace zccl
