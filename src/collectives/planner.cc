#include "collectives/planner.h"

#include <mutex>
#include <set>
#include <utility>

#include "common/log.h"

namespace zccl {
namespace {

// Reduce-scatter (and so all-reduce) has both forms. The direct form rounds half-precision
// sums once, in rank order, for the same bytes on the wire, so it is the default there;
// float32/64 and integers take the ring, whose single peer per step scales to many ranks.
Algorithm reduceScatterDefault(DataType type) {
  return isHalfPrecision(type) ? Algorithm::kDirect : Algorithm::kRing;
}

Algorithm choose(Collective collective, DataType type, Algorithm requested) {
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

void logOnce(Collective collective, DataType type, size_t bytes, Algorithm requested,
             Algorithm chosen) {
  if (!logEnabled(LogLevel::kInfo)) return;
  static std::mutex mutex;
  static std::set<std::pair<int, int>> seen;
  int sizeClass = 0;
  while ((bytes >> sizeClass) > 1) ++sizeClass;  // log2 of the size
  std::lock_guard<std::mutex> lock(mutex);
  if (!seen.insert({static_cast<int>(collective) * 16 + static_cast<int>(type), sizeClass})
           .second) {
    return;
  }
  ZCCL_LOG(kInfo, "plan %s %s ~2^%d bytes: %s (requested %s)", collectiveName(collective),
           dataTypeName(type), sizeClass, algorithmName(chosen), algorithmName(requested));
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
  }
  return "unknown";
}

Algorithm planAlgorithm(Collective collective, DataType type, size_t bytes, Algorithm requested) {
  const Algorithm chosen = choose(collective, type, requested);
  logOnce(collective, type, bytes, requested, chosen);
  return chosen;
}

}  // namespace zccl
