// The collectives as core calls them: plan, then run the chosen algorithm.
// Arguments are already validated; `send` == nullptr means in place where noted in zccl.h.
#pragma once

#include <cstddef>

#include "collectives/context.h"
#include "collectives/planner.h"

namespace zccl {

// send == nullptr: this rank's block already sits in recv.
Status allGather(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t sendCount, DataType type);
Status reduceScatter(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                     size_t recvCount, DataType type, RedOp op);
Status allReduce(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t count, DataType type, RedOp op);
Status broadcast(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                 size_t count, DataType type, int root);
Status allToAll(Context& ctx, const CollectiveOptions& options, const void* send, void* recv,
                size_t count, DataType type);

// The steps the collectives share once planned: all-gather and reduce-scatter of the blocks
// of a Partition (flat or two-level, exact or quantized).
Status allGatherBlocks(Context& ctx, const Plan& plan, const CollectiveOptions& options,
                       const void* send, void* recv, const Partition& blocks, DataType type);
Status reduceScatterBlocks(Context& ctx, const Plan& plan, const CollectiveOptions& options,
                           const void* send, void* recv, const Partition& blocks, DataType type,
                           RedOp op);
// Counts a native call in ctx.native (its volume estimated, see below).
void chargeNative(Context& ctx, Collective collective, size_t bytesPerRank, int root);

// The bytes one rank sends in a bandwidth-optimal form of the collective: what the native
// algorithm is charged in the statistics, since its peers are hidden inside the engine.
size_t nativeBytesEstimate(Collective collective, size_t bytesPerRank, int ranks, int rank,
                           int root);

}  // namespace zccl
