// What the quantized algorithms share: message sizes per block and per-sender parameters.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

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

// Quantizes `count` values of `in` (of `type`) into `message`, with error feedback where
// `residual` is given (count values, what quantizing them lost last time): the residual is
// added first, and what this quantization loses is kept in it for the next call (EF21, LoCo),
// so that over calls nothing is lost. `work` (count float32 values; may be `in` when it is
// float32) is scratch.
inline Status quantizeWithFeedback(Kernels& k, const void* in, DataType type, size_t count,
                                   const QuantParams& params, void* message, size_t capacity,
                                   const Residuals& residual, float* work) {
  if (residual.values == nullptr) return k.quantize(in, type, count, params, message, capacity);
  return k.quantizeWithFeedback(in, type, count, params, message, capacity, residual, work);
}

// Decodes the message of the `count` gathered elements that start at element `first` of the
// all-gather's buffer: into recv, or onto the call's target (recv, float32, as work space).
inline Status decodeGathered(Context& ctx, const CollectiveArgs& a, const QuantParams& format,
                             const void* message, size_t bytes, size_t first, size_t count) {
  char* out = static_cast<char*>(a.recv) + first * elementSize(a.type);
  if (a.onto == nullptr) return ctx.kernels.dequantize(message, bytes, format, out, a.type, count);
  a.onto->applied = true;
  return ctx.kernels.dequantizeOnto(message, bytes, format, count, a.onto->target.from(first),
                                    reinterpret_cast<float*>(out));
}

// Blocks cut into rows of chunks for the pipelined algorithms: chunk `row` of a block holds
// its elements [row * chunk, (row + 1) * chunk), each chunk one quantized message, and `chunk`
// is a multiple of every group size, so that the groups are those of the whole block. A block
// of one chunk sends exactly the message of the unpipelined algorithm.
class PipelineRows {
 public:
  PipelineRows(const Partition& blocks, const QuantParams& params, const Kernels& kernels)
      : params_(params),
        chunk_(std::max<size_t>(kernels.pipelineElements(), params.groupSize)),
        rows_((blocks.largest() + chunk_ - 1) / chunk_) {}

  size_t chunk() const { return chunk_; }
  size_t rows() const { return rows_; }
  // Elements of chunk `row` of a block of `block` elements (0 past its end).
  size_t chunkSize(size_t block, size_t row) const {
    return row * chunk_ < block ? std::min(chunk_, block - row * chunk_) : 0;
  }
  size_t chunkBytes(size_t block, size_t row) const {
    return messageBytes(chunkSize(block, row), params_);
  }
  // Where chunk `row` starts among its block's chunk messages (after full chunks), and where
  // they end.
  size_t chunkOffset(size_t row) const { return row * messageBytes(chunk_, params_); }
  size_t blockBytes(size_t block) const {
    return chunkOffset(block / chunk_) + messageBytes(block % chunk_, params_);
  }

 private:
  const QuantParams& params_;
  const size_t chunk_;
  const size_t rows_;
};

// Rows of the two-level algorithms. A bundle is the blocks of one local rank on every node;
// its messages lie row by row, row `row` holding that row's chunk of each node's block, so
// that a bundle's row is one contiguous message.
class RowLayout : public PipelineRows {
 public:
  RowLayout(const Partition& blocks, const NodeLevels& levels, const QuantParams& params,
            const Kernels& kernels)
      : PipelineRows(blocks, params, kernels),
        blocks_(blocks),
        levels_(levels),
        stride_(static_cast<size_t>(levels.numNodes) * rows() + 1),
        offsets_(static_cast<size_t>(levels.ranksPerNode) * stride_, 0) {
    for (int local = 0; local < levels.ranksPerNode; ++local) {
      size_t* at = &offsets_[static_cast<size_t>(local) * stride_];
      for (size_t i = 0; i + 1 < stride_; ++i) {
        const int node = static_cast<int>(i % levels.numNodes);
        at[i + 1] = at[i] + chunkBytes(blockOf(node, local), i / levels.numNodes);
      }
    }
  }

  size_t blockOf(int node, int local) const { return blocks_.size(levels_.rankAt(node, local)); }
  // Where chunk `row` of node `node`'s block starts in local rank `local`'s bundle (node =
  // numNodes: where the row ends).
  size_t offset(int local, size_t row, int node) const {
    return offsets_[static_cast<size_t>(local) * stride_ + row * levels_.numNodes + node];
  }
  size_t rowBytes(int local, size_t row) const {
    return offset(local, row, levels_.numNodes) - offset(local, row, 0);
  }
  size_t bundleBytes(int local) const { return offset(local, rows(), 0); }

 private:
  const Partition& blocks_;
  const NodeLevels& levels_;
  const size_t stride_;
  std::vector<size_t> offsets_;  // per local rank, rows x nodes + 1
};

}  // namespace zccl
