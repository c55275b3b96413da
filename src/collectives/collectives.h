// The collectives as core calls them: plan, then run the chosen registry row.
#pragma once

#include <cstdint>

#include "collectives/context.h"
#include "collectives/paths.h"
#include "collectives/registry.h"

namespace zccl {

// Arguments are already validated (see CollectiveArgs for the layout and in-place forms).
Status runCollective(Context& ctx, Collective collective, const CollectiveArgs& args,
                     const CollectiveOptions& options);

// What an all-gather of weight differences keeps between calls: the last gathered values.
struct GatherReference {
  void* values;  // every rank's block, of the calls' type
  uint64_t calls = 0;
  int resyncEvery = 0;  // every resyncEvery-th call (and the first) gathers exact values
};

// An all-gather (args as runCollective's) of each rank's difference from `reference`, on the
// path `options` plan for its float32 differences (quantized as they say): every rank adds the
// same decoded differences to the same reference, which becomes the result. Exact on the
// first call and on every resyncEvery-th.
Status allGatherDifferences(Context& ctx, const CollectiveArgs& args,
                            const CollectiveOptions& options, GatherReference* reference);

}  // namespace zccl
