// What the multi-rank tests of quantized collectives share: the emulated node layout, the
// library's block split, the documented wire format with the quantizer's per-element bound,
// and intervals of values.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "harness/gtest.h"

namespace zccl_harness {

// The job's node layout as the test sets it up: consecutive ranks, ZCCL_RANKS_PER_NODE each.
struct Layout {
  int n = worldSize();
  int me = worldRank();
  int perNode = [] {
    const char* text = std::getenv("ZCCL_RANKS_PER_NODE");
    return text != nullptr ? std::atoi(text) : worldSize();
  }();

  int nodes() const { return (n + perNode - 1) / perNode; }
  int node(int r) const { return r / perNode; }
  int local(int r) const { return r % perNode; }
  int rankAt(int node, int local) const { return node * perNode + local; }
  bool uniform() const { return n % perNode == 0; }
  zcclLinkClass_t link(int peer) const {
    if (peer == me) return zcclLinkSelf;
    return node(peer) == node(me) ? zcclLinkIntraNode : zcclLinkInterNode;
  }
};

// Blocks of `count` elements over `parts` ranks, the larger first (the library's contract
// for all-reduce, restated here).
struct Blocks {
  size_t count;
  int parts;
  size_t size(int r) const { return count / parts + (size_t(r) < count % parts ? 1 : 0); }
  size_t offset(int r) const { return r * (count / parts) + std::min<size_t>(r, count % parts); }
};

// The quantized wire format as documented in src/quant/quantize.h, and the quantizer's
// per-element error bound.
struct Wire {
  zcclWireFormat_t format = zcclWireNone;
  zcclQuantScheme_t scheme = zcclQuantSymmetric;
  size_t group = 512;
  bool stochastic = false;
  bool smoothing = false;

  int bits() const {
    return format == zcclWireInt2                                  ? 2
           : format == zcclWireInt4 || format == zcclWireAllowInt4 ? 4
                                                                   : 8;
  }
  // Symmetric codes -Q..Q with Q = 2^(bits-1) - 1, asymmetric 0..2^bits - 1.
  double levels() const {
    return scheme == zcclQuantSymmetric ? (1 << (bits() - 1)) - 1 : (1 << bits()) - 1;
  }
  // Header, payload padded to 4 bytes, then one float (symmetric) or two per group.
  uint64_t messageBytes(size_t k) const {
    if (k == 0) return 0;
    const size_t payload = (k * static_cast<size_t>(bits()) + 7) / 8;
    const size_t groups = (k + group - 1) / group;
    return 24 + (payload + 3) / 4 * 4 + groups * (scheme == zcclQuantSymmetric ? 4 : 8);
  }
  // max |x - deq(q(x))| over a group whose values lie in [lo, hi].
  double groupError(double lo, double hi) const {
    const double absmax = std::max(std::fabs(lo), std::fabs(hi));
    const double range = scheme == zcclQuantSymmetric ? absmax : hi - lo;
    const double scale = range / levels() * (1 + 0x1p-22);
    return (stochastic ? scale : scale / 2) + 0x1p-21 * absmax + 0x1p-140;
  }
  zcclCollOptions options(zcclHierarchy_t hierarchy) const {
    zcclCollOptions o = ZCCL_COLL_OPTIONS_INITIALIZER;
    o.wireFormat = format;
    o.quantScheme = scheme;
    o.quantGroupSize = static_cast<int>(group);
    o.stochasticRounding = stochastic ? 1 : 0;
    o.smoothing = smoothing ? 1 : 0;
    o.hierarchy = hierarchy;
    o.seed = 1234;
    return o;
  }
};

// An interval of values and the bound on errors already in them.
struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) { lo = std::min(lo, v), hi = std::max(hi, v); }
  Range widened(double by) const { return Range{lo - by, hi + by}; }
};

// Hierarchies to run: two-level only where every node holds the same number of ranks.
inline std::vector<zcclHierarchy_t> hierarchies(const Layout& layout) {
  if (!layout.uniform()) return {zcclHierarchyFlat};
  return {zcclHierarchyFlat, zcclHierarchyTwoLevel};
}

}  // namespace zccl_harness
