// The building blocks algorithms share across files: the byte-layout ring all-gather, and the
// cost formulas that an exact row and its quantized twin have in common (their CostTerms
// differ only in being quantized).
// Buffers are host memory; blocks follow a Partition: block r of a buffer belongs to rank r.
#pragma once

#include <cstddef>

#include "collectives/context.h"
#include "collectives/cost_model.h"
#include "collectives/registry.h"

namespace zccl {

// Copies `bytes` while what is posted on `t` travels: in pieces, `t` polled between them, since
// an engine that moves bytes only while polled would otherwise stall until the copy ends (an
// out-of-place all-gather's own block took as long again as the transfer of the others').
Status copyAlongside(Context& ctx, Transport& t, void* to, const void* from, size_t bytes);

// recv gets every rank's block, laid out in bytes by `layout`; `send` is this rank's block,
// or nullptr when it already sits at its place in recv (in place).
Status allGatherRing(Context& ctx, const void* send, void* recv, const BlockBytes& layout);

// Every rank's block to a.root's a.recv; a.send is this rank's block, or nullptr at a root
// whose block already sits in place.
Status gatherDirect(Context& ctx, const CollectiveArgs& a);

double allGatherRingCost(const CostTerms& t, Plan* plan);
double gatherDirectCost(const CostTerms& t);
double allGatherTwoLevelCost(const CostTerms& t, Plan* plan);
// Direct: every rank sends each peer its block at once (also the one-hop quantized form).
double reduceScatterDirectCost(const CostTerms& t, Plan* plan);
// Intra-node, then inter-node (also the two-hop quantized form).
double reduceScatterTwoLevelCost(const CostTerms& t, Plan* plan);

}  // namespace zccl
