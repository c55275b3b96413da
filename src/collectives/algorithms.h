// zccl's collective algorithms over a Transport's point-to-point, one file each, and the
// engine's native collectives behind the same signatures. Buffers are host memory.
//
// Blocks follow a Partition: block r of a buffer belongs to rank r.
#pragma once

#include <cstddef>

#include "collectives/context.h"
#include "quant/quantize.h"

namespace zccl {

// recv gets every rank's block, laid out in bytes by `layout`; `send` is this rank's block,
// or nullptr when it already sits at its place in recv (in place).
Status allGatherRing(Context& ctx, const void* send, void* recv, const BlockBytes& layout);
// As allGatherRing, across nodes then inside them (needs ctx.levels).
Status allGatherTwoLevel(Context& ctx, const void* send, void* recv, const BlockBytes& layout);
// qwZ: blocks quantized once by their owner, dequantized by every rank (its own block too);
// flat ring or two-level.
Status allGatherQuantized(Context& ctx, const void* send, void* recv, const Partition& blocks,
                          DataType type, const QuantParams& params, bool twoLevel);

// recv (one block) gets the reduction over ranks of block rank() of send. recv may be
// send's own block (in place). Half-precision partial sums are rounded at every hop.
Status reduceScatterRing(Context& ctx, const void* send, void* recv, const Partition& blocks,
                         DataType type, RedOp op);

// As reduceScatterRing, but each rank receives every peer's copy of its block and reduces
// them in rank order, accumulating in float32 for half precision and rounding once.
// Same bytes on the wire as the ring; results are independent of the ring's rotation.
Status reduceScatterDirect(Context& ctx, const void* send, void* recv, const Partition& blocks,
                           DataType type, RedOp op);

// Intra-node reduce-scatter of node bundles, then inter-node among same-local-rank peers
// (needs ctx.levels). Half precision rounds once per level.
Status reduceScatterTwoLevel(Context& ctx, const void* send, void* recv, const Partition& blocks,
                             DataType type, RedOp op);

// qgZ: quantized reduce-scatter for kSum and kAvg of float32/float16/bfloat16, reduced in
// float32. One hop: a direct all-to-all of quantized blocks. Two hops: intra-node, then
// inter-node among same-local-rank peers (needs ctx.levels).
Status reduceScatterQuantized1Hop(Context& ctx, const void* send, void* recv,
                                  const Partition& blocks, DataType type, RedOp op,
                                  const QuantParams& params);
Status reduceScatterQuantized2Hop(Context& ctx, const void* send, void* recv,
                                  const Partition& blocks, DataType type, RedOp op,
                                  const QuantParams& params);

// Every rank sends block j of send to rank j; recv block j comes from rank j.
// send == recv is allowed (staged through scratch).
Status allToAllPairwise(Context& ctx, const void* send, void* recv, size_t blockBytes);

// Small enough to pipeline over a handful of ranks, large enough to amortise latency: the
// broadcast segment when no cost model chooses one.
constexpr size_t kDefaultBroadcastSegment = size_t{512} << 10;

// A chain from root through the ranks in order, pipelined in segments of `segmentBytes`
// (0: kDefaultBroadcastSegment; every rank must pass the same). `send` is read on root only;
// it may equal recv.
Status broadcastPipelined(Context& ctx, const void* send, void* recv, size_t bytes, int root,
                          size_t segmentBytes);

// The backend's own collectives, with zccl's in-place conventions and kAvg.
Status allGatherNative(Context& ctx, const void* send, void* recv, size_t count, DataType type);
Status reduceScatterNative(Context& ctx, const void* send, void* recv, size_t recvCount,
                           DataType type, RedOp op);
Status allReduceNative(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                       RedOp op);
Status broadcastNative(Context& ctx, const void* send, void* recv, size_t count, DataType type,
                       int root);
Status allToAllNative(Context& ctx, const void* send, void* recv, size_t count, DataType type);

}  // namespace zccl
