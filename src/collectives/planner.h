// Chooses the algorithm for a collective call, like NCCL's tuning step.
#pragma once

#include <cstddef>

#include "common/types.h"

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
};

const char* collectiveName(Collective collective);
const char* algorithmName(Algorithm algorithm);

// The algorithm that runs for `collective` given the communicator's request. A request the
// collective has no such algorithm for (ring broadcast) falls back to the collective's own.
Algorithm planAlgorithm(Collective collective, DataType type, size_t bytes, Algorithm requested);

}  // namespace zccl
