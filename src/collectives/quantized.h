// What the quantized algorithms share: message sizes per block and per-sender parameters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/context.h"
#include "quant/quantize.h"

namespace zccl {

// Bytes of the message carrying `count` elements; an empty block sends nothing.
inline size_t messageBytes(size_t count, const QuantParams& params) {
  return count == 0 ? 0 : quantizedBytes(count, params);
}

inline BlockBytes messageLayout(const Partition& blocks, const QuantParams& params) {
  return BlockBytes::of(blocks, [&](size_t k) { return messageBytes(k, params); });
}

// Stochastic rounding must not draw the same numbers on every rank and hop, or the errors of
// the contributions to one element would be correlated instead of cancelling.
inline QuantParams senderParams(const QuantParams& params, int rank, int hop) {
  QuantParams mine = params;
  mine.seed ^= (static_cast<uint64_t>(rank) + 1) * 0x9e3779b97f4a7c15ull +
               static_cast<uint64_t>(hop) * 0xc2b2ae3d27d4eb4full;
  return mine;
}

// Chunk `chunk` of a pipelined message draws stochastic-rounding numbers of its own (chunk 0
// those of the whole message), for the same reason.
inline QuantParams chunkParams(const QuantParams& params, size_t chunk) {
  QuantParams mine = params;
  mine.seed ^= static_cast<uint64_t>(chunk) * 0xd6e8feb86659fd93ull;
  return mine;
}

}  // namespace zccl
