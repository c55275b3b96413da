// The vocabulary of paths that the registry, the planner and the cost model share: which
// collective, which algorithm family, which wire format, one level or two, and the options a
// call brings. Nothing here chooses; planner.h does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/types.h"
#include "quant/quantize.h"

namespace zccl {

enum class Collective : int {
  kAllGather,
  kReduceScatter,
  kAllReduce,
  kBroadcast,
  kAllToAll,
  kReduce,
  kGather,
  kScatter,
};
constexpr int kNumCollectives = 8;

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
enum class WireFormat : int { kNone = 0, kInt8 = 1, kInt4 = 2, kInt2 = 5 };
// The names of zcclWireFormat_t's values, indexed by them, the one list every table of them is
// made from: WireFormat's values are the formats asked for, 3 and 4 the same as 1 and 2 but
// allowed rather than asked for.
constexpr const char* kWireFormatNames[] = {"none",       "int8",       "int4",
                                            "allow-int8", "allow-int4", "int2"};
constexpr int kNumWireFormatNames = 6;
// Bits per code of a lossy format.
constexpr int wireBits(WireFormat format) {
  return format == WireFormat::kInt2 ? 2 : format == WireFormat::kInt4 ? 4 : 8;
}
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
  bool smoothing = false;
  // The call keeps error feedback (zcclFeedback_t): its quantization costs more.
  bool errorFeedback = false;
  Hierarchy hierarchy = Hierarchy::kAuto;

  // The quantization of a path whose wire format is `format` (int8, int4 or int2).
  QuantParams quantParams(WireFormat format) const {
    return QuantParams{wireBits(format), scheme, groupSize, rounding, seed, smoothing};
  }
  QuantParams quantParams() const { return quantParams(wire); }
};

struct AlgorithmRow;

// A chosen path: its registry row, the wire format it runs with, and its tuning.
struct Plan {
  Algorithm algorithm = Algorithm::kAuto;
  WireFormat wire = WireFormat::kNone;  // kNone: exact
  size_t chunkBytes = 0;                // pipelined algorithms' segment; 0: their default
  QuantParams quant;                    // when wire != kNone
  bool errorFeedback = false;           // the call's (CollectiveOptions::errorFeedback)
  const AlgorithmRow* row = nullptr;
};

// True when a lossy wire format can carry this collective: float32/16/bf16 data, and for
// reductions kSum or kAvg.
bool wireApplies(Collective collective, DataType type, RedOp op);

const char* collectiveName(Collective collective);
const char* algorithmName(Algorithm algorithm);
const char* wireFormatName(WireFormat wire);

}  // namespace zccl
