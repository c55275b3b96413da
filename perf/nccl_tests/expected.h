// The values every rank feeds a collective and what its result must be: exact for lossless
// paths, within the quantizer's analytic bound for quantized ones (src/quant/quantize.h).
#pragma once

#include <cstddef>

#include "nccl_tests/settings.h"

namespace zccl_perf {

// Who runs the collective: the ranks and how they sit on nodes.
struct Layout {
  Collective collective;
  int rank = 0;
  int ranks = 1;
  int nodeSize = 1;  // ranks per node, from zcclCommSplitNode
  int nodes = 1;
};

// Elements per rank of the send and receive buffers and the count argument, for `count`
// elements in all (the size column, as nccl-tests counts it).
struct Shape {
  size_t count;  // the row's count: elements of the whole operation
  size_t sendElements;
  size_t recvElements;
  size_t argument;  // the count passed to the call
};

Shape shapeOf(Collective c, size_t bytes, size_t elementSize, int n);

// Writes this rank's input.
void fillInput(const Layout& job, const Shape& shape, zcclDataType_t type, zcclRedOp_t op,
               void* send);

// Elements of this rank's result outside what the path guarantees.
size_t countWrong(const Layout& job, const Settings& s, const Shape& shape, zcclDataType_t type,
                  zcclRedOp_t op, const void* result, bool quantized);

}  // namespace zccl_perf
