// Chooses the path of a collective call among the registry's rows, like NCCL's tuning step.
#pragma once

#include <cstddef>

#include "collectives/context.h"
#include "collectives/paths.h"

namespace zccl {

struct ClusterModel;

// The candidate paths the options leave open (every row, flat or two-level, exact or the
// allowed wire format) with their cost model estimates, the cheapest first. For half precision,
// a ring that rounds at every hop is a candidate only where it is estimated more than twice as
// fast as every path whose roundings do not grow with the ranks.
struct Candidates {
  struct Entry {
    Plan plan;
    double seconds;
  };
  Entry entries[8];
  int count = 0;
};
Candidates candidatePlans(const ClusterModel& cluster, Collective collective, DataType type,
                          RedOp op, size_t bytes, const CollectiveOptions& options,
                          MemoryKind memory);

// The first of candidatePlans.
Plan cheapestPlan(const ClusterModel& cluster, Collective collective, DataType type, RedOp op,
                  size_t bytes, const CollectiveOptions& options,
                  MemoryKind memory = MemoryKind::kHost);

// What runs for `collective`. With a cluster model and no forced algorithm, cheapestPlan.
// Otherwise by rule: a lossy wire format only where the options ask for it and it applies;
// two levels when asked, or on auto when the job spans several nodes of equal size with
// several ranks each; the requested algorithm where a row has it, else the collective's own.
// `levels` is null when the nodes differ in size (callers reject an explicit two-level).
Plan planCollective(Collective collective, DataType type, RedOp op, size_t bytes,
                    const CollectiveOptions& options, const NodeLevels* levels,
                    const ClusterModel* cluster, MemoryKind memory = MemoryKind::kHost);

}  // namespace zccl
