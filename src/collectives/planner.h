// Chooses the algorithm for a collective call, like NCCL's tuning step.
#pragma once

#include <cstddef>

#include "collectives/context.h"
#include "common/types.h"
#include "quant/quantize.h"

namespace zccl {

enum class Collective : int { kAllGather, kReduceScatter, kAllReduce, kBroadcast, kAllToAll };
// The first four mirror zcclAlgorithm_t; the others are chosen by the planner only.
enum class Algorithm : int {
  kAuto = 0,
  kRing = 1,
  kDirect = 2,
  kNative = 3,
  kPairwise = 4,   // all-to-all
  kPipelined = 5,  // broadcast
  kTwoLevel = 6,   // all-gather / reduce-scatter / all-reduce, node by node
};

// Mirror zcclWireFormat_t and zcclHierarchy_t.
enum class WireFormat : int { kNone = 0, kInt8 = 1, kInt4 = 2 };
enum class Hierarchy : int { kAuto = 0, kFlat = 1, kTwoLevel = 2 };

struct CollectiveOptions {
  Algorithm algorithm = Algorithm::kAuto;
  WireFormat wire = WireFormat::kNone;
  // The caller allowed `wire` rather than asked for it: the planner uses it only where its
  // cost model says it is faster.
  bool wireAllowedOnly = false;
  QuantScheme scheme = QuantScheme::kSymmetric;
  uint32_t groupSize = kDefaultGroupSize;
  Rounding rounding = Rounding::kNearestEven;
  uint64_t seed = 0;
  Hierarchy hierarchy = Hierarchy::kAuto;

  QuantParams quantParams() const {
    return QuantParams{wire == WireFormat::kInt4 ? 4 : 8, scheme, groupSize, rounding, seed};
  }
};

struct Plan {
  Algorithm algorithm;
  WireFormat wire;        // kNone: exact
  size_t chunkBytes = 0;  // pipelined algorithms' segment; 0: their default
};

// The flat algorithm for `collective` given a requested family (kAuto: the default for the
// type; a family the collective lacks, such as a ring broadcast, falls back to its own).
Algorithm flatAlgorithm(Collective collective, DataType type, Algorithm requested);
// All-gather, reduce-scatter and all-reduce have a two-level form.
bool hasTwoLevelForm(Collective collective);
// The path with `wire` and `twoLevel` applied over `flat`: a lossy wire format goes one hop
// flat (the ring for all-gather, the direct all-to-all for reductions) unless two-level.
Plan pathFor(Collective collective, Algorithm flat, WireFormat wire, bool twoLevel);

// True when `wire` can carry this collective: float32/16/bf16 data, and for reductions
// kSum or kAvg.
bool wireApplies(Collective collective, DataType type, RedOp op);

const char* collectiveName(Collective collective);
const char* algorithmName(Algorithm algorithm);
const char* wireFormatName(WireFormat wire);

struct ClusterModel;

// What runs for `collective`. With a cluster model and no forced algorithm, the fastest by
// the cost model among the paths the options leave open (flat or two-level, exact or the
// allowed wire format). Otherwise by rule: a lossy wire format only where the options ask for
// it and it applies; two levels when asked, or on auto when the job spans several nodes of
// equal size with several ranks each; else the flat algorithm requested, where a request the
// collective has no such algorithm for (ring broadcast) falls back to the collective's own.
// `levels` is null when the nodes differ in size (callers reject an explicit two-level).
Plan planCollective(Collective collective, DataType type, RedOp op, size_t bytes,
                    const CollectiveOptions& options, const NodeLevels* levels,
                    const ClusterModel* cluster);

}  // namespace zccl
