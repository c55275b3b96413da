// The algorithm registry: one row per algorithm, defined in the algorithm's own file and
// listed once in registry.cc. The dispatcher runs a plan's row, the planner chooses among
// rows, the cost model prices them; none of them knows an algorithm by name. Adding an
// algorithm is adding its file and its line in registry.cc.
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/context.h"
#include "collectives/paths.h"

namespace zccl {

// Where an all-gather's gathered float32 values go besides recv (weight differences: onto
// their reference). The quantized paths add each block to the target as they decode it, recv
// then only their work space, and mark it applied; paths that do not decode store the values
// in recv and leave it unapplied.
struct GatherOnto {
  SumTarget target;  // of the whole gathered buffer
  bool applied = false;
};

// What every algorithm is called with: the logical buffer (what all ranks hold together:
// all-gather's output, reduce-scatter's input, all-reduce's and broadcast's buffer,
// all-to-all's count * ranks) cut into one block per rank.
struct CollectiveArgs {
  const void* send;  // all-gather: nullptr when this rank's block already sits in recv
  void* recv;
  Partition blocks;
  DataType type;
  RedOp op = RedOp::kSum;
  int root = 0;
  GatherOnto* onto = nullptr;  // all-gather of float32 values only
};

struct CostTerms;

using RunAlgorithm = Status (*)(Context& ctx, const CollectiveArgs& args, const Plan& plan);
// Estimated seconds of a path, filling tuning the plan leaves open (a chunk size).
using AlgorithmCost = double (*)(const CostTerms& terms, Plan* plan);

constexpr unsigned kHostOnly = 1u << static_cast<int>(MemoryKind::kHost);
// Algorithms that touch their buffers only through ctx.kernels and move them only through
// ctx.transport run on any memory whose kernels and transport the context brings.
constexpr unsigned kAnyMemory = kHostOnly | 1u << static_cast<int>(MemoryKind::kDevice);

// A row is built by name, from what it runs, so that it reads as what it is:
//   AlgorithmRow::of(Collective::kReduceScatter, Algorithm::kTwoLevel, reduceScatterQuantized2Hop)
//       .quantizedWire().twoLevels().foldsInRankOrder().costs(reduceScatterTwoLevelCost)
struct AlgorithmRow {
  Collective collective;
  Algorithm algorithm;
  RunAlgorithm run;
  bool quantized = false;  // the wire carries INT8 or INT4 messages (the plan says which)
  int levels = 1;          // 1: over all ranks at once; 2: between nodes, then inside them
  unsigned memoryKinds = kAnyMemory;  // bits 1 << MemoryKind
  // A reduction that folds contributions in rank order, rounding half precision once, so
  // its result does not depend on the ring's rotation (preferred for half precision).
  bool roundsOnce = false;
  // A reduction that rounds half precision at every hop of a ring: its error grows with the
  // ranks (the planner takes it for half precision only where it is much the faster).
  bool roundsEveryHop = false;
  // nullptr: not modelled (the native algorithm is only ever asked for).
  AlgorithmCost cost = nullptr;

  static constexpr AlgorithmRow of(Collective collective, Algorithm algorithm, RunAlgorithm run) {
    return AlgorithmRow{collective, algorithm, run};
  }
  constexpr AlgorithmRow quantizedWire() const { return with(&AlgorithmRow::quantized, true); }
  constexpr AlgorithmRow twoLevels() const { return with(&AlgorithmRow::levels, 2); }
  constexpr AlgorithmRow foldsInRankOrder() const { return with(&AlgorithmRow::roundsOnce, true); }
  constexpr AlgorithmRow roundsAtEveryHop() const {
    return with(&AlgorithmRow::roundsEveryHop, true);
  }
  constexpr AlgorithmRow costs(AlgorithmCost estimate) const {
    return with(&AlgorithmRow::cost, estimate);
  }

  bool runsOn(MemoryKind kind) const { return (memoryKinds & (1u << static_cast<int>(kind))) != 0; }
  // Whether the row runs `of` at `atLevels` with an exact or quantized wire on `memory`.
  bool serves(Collective of, bool quantizedWire, int atLevels, MemoryKind memory) const {
    return collective == of && quantized == quantizedWire && levels == atLevels && runsOn(memory);
  }

 private:
  template <typename Field, typename Value>
  constexpr AlgorithmRow with(Field AlgorithmRow::*field, Value value) const {
    AlgorithmRow row = *this;
    row.*field = value;
    return row;
  }
};

// Every row of the registry.
const std::vector<const AlgorithmRow*>& algorithmRows();

// The row of `algorithm` for `collective` with an exact or quantized wire, or nullptr.
const AlgorithmRow* findRow(Collective collective, Algorithm algorithm, bool quantized,
                            MemoryKind memory);

// The row that runs `collective` at `levels` with an exact or quantized wire on `memory`:
// the requested algorithm where such a row exists; else, for half precision, the first
// that rounds once; else the first row that is not the native one. nullptr when none does.
const AlgorithmRow* preferredRow(Collective collective, DataType type, MemoryKind memory,
                                 bool quantized, int levels, Algorithm requested);

// The plan that runs `row` with `wire` (kNone for exact rows).
Plan planOf(const AlgorithmRow& row, WireFormat wire, const CollectiveOptions& options);

}  // namespace zccl
