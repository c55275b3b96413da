// The inputs and expected results of the perf binaries' checks (expected.h).
#include "nccl_tests/expected.h"

#include <algorithm>
#include <cmath>

#include "harness/values.h"

namespace zccl_perf {

using zccl_harness::foldReference;
using zccl_harness::isFloat;
using zccl_harness::load;
using zccl_harness::store;

Shape shapeOf(Collective c, size_t bytes, size_t elementSize, int n) {
  size_t count = bytes / elementSize;
  const bool divided = c == Collective::kAllGather || c == Collective::kReduceScatter ||
                       c == Collective::kAllToAll || c == Collective::kGather ||
                       c == Collective::kScatter;
  if (divided) count = count / n * n;
  const size_t share = count / n;
  switch (c) {
    case Collective::kAllGather:
    case Collective::kGather:
      return Shape{count, share, count, share};
    case Collective::kReduceScatter:
    case Collective::kScatter:
      return Shape{count, count, share, share};
    case Collective::kAllToAll:
      return Shape{count, count, count, share};
    default:
      return Shape{count, count, count, count};
  }
}

namespace {

// Rank r's input element i: small values whose sums over up to 8 ranks are exact even in
// bfloat16; prod uses 1 and 2, with at most one 2 per element, so products stay exact.
double inputValue(zcclDataType_t type, zcclRedOp_t op, int r, size_t i, int n) {
  if (op == zcclProd) return (static_cast<size_t>(r) + i) % static_cast<size_t>(n) == 0 ? 2 : 1;
  const long v = static_cast<long>((static_cast<size_t>(r) * 31 + i * 7) % 33);
  if (type == zcclUint8 || type == zcclUint32 || type == zcclUint64) return static_cast<double>(v);
  return isFloat(type) ? (v - 16) / 8.0 : static_cast<double>(v - 16);
}

double reduced(const Layout& job, zcclDataType_t type, zcclRedOp_t op, size_t i) {
  double result = inputValue(type, op, 0, i, job.ranks);
  for (int r = 1; r < job.ranks; ++r)
    result = foldReference(op, result, inputValue(type, op, r, i, job.ranks));
  if (op != zcclAvg) return result;
  return isFloat(type) ? result / job.ranks : std::trunc(result / job.ranks);
}

// The exact value of element i of this rank's result.
double expectedValue(const Layout& job, const Settings& s, const Shape& shape, zcclDataType_t type,
                     zcclRedOp_t op, size_t i) {
  const size_t share = shape.argument;
  switch (job.collective) {
    case Collective::kAllGather:
    case Collective::kGather:
      return inputValue(type, op, static_cast<int>(i / share), i % share, job.ranks);
    case Collective::kScatter:
      return inputValue(type, op, s.root, job.rank * share + i, job.ranks);
    case Collective::kReduce:
      return reduced(job, type, op, i);
    case Collective::kReduceScatter:
      return reduced(job, type, op, job.rank * share + i);
    case Collective::kAllReduce:
      return reduced(job, type, op, i);
    case Collective::kAllToAll:
      return inputValue(type, op, static_cast<int>(i / share), job.rank * share + i % share,
                        job.ranks);
    case Collective::kBroadcast:
      return inputValue(type, op, s.root, i, job.ranks);
    case Collective::kSendRecv:
      return inputValue(type, op, (job.rank + job.ranks - 1) % job.ranks, i, job.ranks);
  }
  return 0;
}

// The quantizer's per-element bound for a group whose values lie within +-a
// (src/quant/quantize.h): half a step of the scale plus float32 terms.
double quantStep(const Settings& s, double a) {
  const bool int8 = s.wire == zcclWireInt8 || s.wire == zcclWireAllowInt8;
  const double levels = int8 ? 127 : s.wire == zcclWireInt2 ? 1 : 7;  // symmetric
  return a / levels / 2 * (1 + 0x1p-22) + 0x1p-21 * a + 0x1p-140;
}

// The analytic error bound of a quantized path for inputs within +-2: per contribution one
// quantization per hop, the second hop's scale grown by the first hop's partial sums and
// errors, float32 accumulation; the worse of the flat and two-level forms unless forced.
double quantizedBound(const Layout& job, const Settings& s, zcclRedOp_t op) {
  const double a = 2;
  const int n = job.ranks, perNode = job.nodeSize, nodes = job.nodes;
  if (job.collective == Collective::kAllGather) return quantStep(s, a);
  const double oneHop = (n - 1) * quantStep(s, a);
  const double hop1 = (perNode - 1) * quantStep(s, a);
  const double twoHop = nodes * hop1 + (nodes - 1) * quantStep(s, perNode * a + hop1);
  double bound = s.hierarchy == zcclHierarchyFlat       ? oneHop
                 : s.hierarchy == zcclHierarchyTwoLevel ? twoHop
                                                        : std::max(oneHop, twoHop);
  bound += 2 * n * 0x1p-24 * (n * a + bound);  // float32 sums
  if (job.collective == Collective::kAllReduce) bound += quantStep(s, n * a + bound);
  return op == zcclAvg ? bound / n : bound;
}

// Elements of this rank's result outside what the path guarantees: exact for lossless
// paths (one final rounding for a float average), the analytic bound for quantized ones.
}  // namespace

size_t countWrong(const Layout& job, const Settings& s, const Shape& shape, zcclDataType_t type,
                  zcclRedOp_t op, const void* result, bool quantized) {
  const bool resultAtRootOnly =
      job.collective == Collective::kReduce || job.collective == Collective::kGather;
  if (resultAtRootOnly && job.rank != s.root) return 0;
  const size_t elements = shape.recvElements;
  const double bound = quantized ? quantizedBound(job, s, op) : 0;
  size_t wrong = 0;
  for (size_t i = 0; i < elements; ++i) {
    const double want = expectedValue(job, s, shape, type, op, i);
    double allowed = bound;
    if (isFloat(type) && (quantized || op == zcclAvg)) {
      allowed += zccl_harness::ulp(type, std::fabs(want) + bound) * (quantized ? 2 : 1);
    }
    if (!(std::fabs(load(type, result, i) - want) <= allowed)) ++wrong;
  }
  return wrong;
}

void fillInput(const Layout& job, const Shape& shape, zcclDataType_t type, zcclRedOp_t op,
               void* send) {
  for (size_t i = 0; i < shape.sendElements; ++i)
    store(type, send, i, inputValue(type, op, job.rank, i, job.ranks));
}

}  // namespace zccl_perf
