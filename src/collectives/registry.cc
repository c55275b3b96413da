// The registry's rows, listed once in preference order, and the lookups over them
// (registry.h).
#include "collectives/registry.h"

namespace zccl {

// Each row is defined beside its algorithm. Their order is the preference among rows that
// serve the same path (preferredRow).
extern const AlgorithmRow kAllGatherRing, kAllGatherTwoLevel, kAllGatherQuantizedRing,
    kAllGatherQuantizedTwoLevel, kAllGatherNative;
extern const AlgorithmRow kReduceScatterRing, kReduceScatterDirect, kReduceScatterTwoLevel,
    kReduceScatterQuantized1Hop, kReduceScatterQuantized2Hop, kReduceScatterNative;
extern const AlgorithmRow kAllReduceRing, kAllReduceDirect, kAllReduceTwoLevel,
    kAllReduceQuantized1Hop, kAllReduceQuantized2Hop, kAllReduceNative;
extern const AlgorithmRow kBroadcastPipelined, kBroadcastNative;
extern const AlgorithmRow kAllToAllPairwise, kAllToAllNative;
extern const AlgorithmRow kReduceRing, kReduceDirect, kReduceTwoLevel, kReduceQuantized1Hop,
    kReduceQuantized2Hop, kReduceNative;
extern const AlgorithmRow kGatherDirect, kGatherNative, kScatterDirect, kScatterNative;

const std::vector<const AlgorithmRow*>& algorithmRows() {
  static const std::vector<const AlgorithmRow*> rows{
      &kAllGatherRing,
      &kAllGatherTwoLevel,
      &kAllGatherQuantizedRing,
      &kAllGatherQuantizedTwoLevel,
      &kAllGatherNative,

      &kReduceScatterRing,
      &kReduceScatterDirect,
      &kReduceScatterTwoLevel,
      &kReduceScatterQuantized1Hop,
      &kReduceScatterQuantized2Hop,
      &kReduceScatterNative,

      &kAllReduceRing,
      &kAllReduceDirect,
      &kAllReduceTwoLevel,
      &kAllReduceQuantized1Hop,
      &kAllReduceQuantized2Hop,
      &kAllReduceNative,

      &kBroadcastPipelined,
      &kBroadcastNative,

      &kAllToAllPairwise,
      &kAllToAllNative,

      &kReduceRing,
      &kReduceDirect,
      &kReduceTwoLevel,
      &kReduceQuantized1Hop,
      &kReduceQuantized2Hop,
      &kReduceNative,

      &kGatherDirect,
      &kGatherNative,

      &kScatterDirect,
      &kScatterNative,
  };
  return rows;
}

const AlgorithmRow* findRow(Collective collective, Algorithm algorithm, bool quantized,
                            MemoryKind memory) {
  for (const AlgorithmRow* row : algorithmRows()) {
    if (row->collective == collective && row->algorithm == algorithm &&
        row->quantized == quantized && row->runsOn(memory)) {
      return row;
    }
  }
  return nullptr;
}

const AlgorithmRow* preferredRow(Collective collective, DataType type, MemoryKind memory,
                                 bool quantized, int levels, Algorithm requested) {
  const AlgorithmRow* first = nullptr;
  const AlgorithmRow* roundsOnce = nullptr;
  for (const AlgorithmRow* row : algorithmRows()) {
    if (!row->serves(collective, quantized, levels, memory)) continue;
    if (row->algorithm == requested) return row;
    if (row->algorithm == Algorithm::kNative) continue;  // only ever by request
    if (first == nullptr) first = row;
    if (roundsOnce == nullptr && row->roundsOnce) roundsOnce = row;
  }
  return isHalfPrecision(type) && roundsOnce != nullptr ? roundsOnce : first;
}

Plan planOf(const AlgorithmRow& row, WireFormat wire, const CollectiveOptions& options) {
  Plan plan;
  plan.algorithm = row.algorithm;
  plan.wire = row.quantized ? wire : WireFormat::kNone;
  if (plan.wire != WireFormat::kNone) plan.quant = options.quantParams(plan.wire);
  plan.errorFeedback = options.errorFeedback;
  plan.row = &row;
  return plan;
}

}  // namespace zccl
