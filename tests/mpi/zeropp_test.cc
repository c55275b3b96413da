// ZeRO++ collectives on emulated nodes (ctest sets ZCCL_RANKS_PER_NODE): plain flat and
// two-level paths give exact results; quantized paths stay within the analytic error bound
// computed here in fp64 from every rank's inputs and the quantizer's per-element bound; and
// the bytes each rank sends per link class equal what each algorithm's definition says,
// computed here from the documented wire format.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness/gtest.h"
#include "harness/quantized_bounds.h"
#include "harness/values.h"

namespace zccl_harness {
namespace {

// Rank r's input element i, representable in `type`: magnitudes vary between groups.
double inputValue(zcclDataType_t type, int rank, size_t i) {
  const double u = static_cast<double>(mix(77, static_cast<uint64_t>(rank), i) >> 11) * 0x1p-53;
  const double magnitude = std::ldexp(1.0, static_cast<int>((i / 700) % 9) - 4);
  double value = (2 * u - 1) * magnitude;
  char cell[8];
  store(type, cell, 0, value);  // rounds (float16, float32) or truncates (bfloat16)
  return load(type, cell, 0);
}

// Exactly summable inputs for the lossless paths: small integers / 8, small enough that every
// partial sum over up to 8 ranks is a bfloat16 (8 significant bits), so that any order and
// any number of roundings gives the exact result.
double exactValue(int rank, size_t i) {
  return static_cast<double>(static_cast<int64_t>(mix(5, rank, i) % 33) - 16) / 8;
}

// One rounding to `type` of a result within `error` of `value`.
double outputRounding(zcclDataType_t type, double value, double error) {
  return ulp(type, std::fabs(value) + error);
}

class ZeroPlusPlus : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = makeComm(zcclAlgoAuto);  // ZCCL_RANKS_PER_NODE comes from the environment
    ASSERT_NE(comm_, nullptr);
  }
  void TearDown() override { EXPECT_EQ(zcclCommDestroy(comm_), zcclSuccess); }

  static double sumOver(int ranks, double (*value)(int, size_t), size_t i) {
    double sum = 0;
    for (int r = 0; r < ranks; ++r) sum += value(r, i);
    return sum;
  }

  // Error bound of element `index` (global) of the block of `owner` after a quantized
  // reduce-scatter of `blocks`: per contribution the quantizer's bound for its group (groups
  // start at each block's start), float32 accumulation, and the final rounding to `type`.
  // Two hops: intra-node partials carry hop-1 errors into hop 2, whose scale grows with them.
  std::vector<double> reduceScatterBound(zcclDataType_t type, const Wire& wire,
                                         const Blocks& blocks, int owner, bool twoLevel) const {
    const size_t first = blocks.offset(owner), count = blocks.size(owner);
    std::vector<double> bound(count, 0.0);
    const auto x = [&](int r, size_t j) { return inputValue(type, r, first + j); };
    const auto senders = [&](int r) { return r != owner; };
    const int l = layout_.local(owner);
    for (size_t g0 = 0; g0 < count; g0 += wire.group) {
      const size_t g1 = std::min(count, g0 + wire.group);
      if (!twoLevel) {
        double err = 0;
        for (int r = 0; r < layout_.n; ++r) {
          if (!senders(r)) continue;
          Range range;
          for (size_t j = g0; j < g1; ++j) range.add(x(r, j));
          err += wire.groupError(range.lo, range.hi);
        }
        for (size_t j = g0; j < g1; ++j) {
          double magnitude = 0;
          for (int r = 0; r < layout_.n; ++r) magnitude += std::fabs(x(r, j));
          bound[j] = err + layout_.n * 0x1p-24 * (magnitude + err);
        }
        continue;
      }
      // Hop 1 on every node k, received by (k, l); hop 2 from (k, l) to the owner.
      for (int k = 0; k < layout_.nodes(); ++k) {
        double err1 = 0;
        for (int m = 0; m < layout_.perNode; ++m) {
          if (m == l) continue;
          Range range;
          for (size_t j = g0; j < g1; ++j) range.add(x(layout_.rankAt(k, m), j));
          err1 += wire.groupError(range.lo, range.hi);
        }
        Range partial;
        double worst1 = 0;
        std::vector<double> hop1(g1 - g0);
        for (size_t j = g0; j < g1; ++j) {
          double sum = 0, magnitude = 0;
          for (int m = 0; m < layout_.perNode; ++m) {
            sum += x(layout_.rankAt(k, m), j);
            magnitude += std::fabs(x(layout_.rankAt(k, m), j));
          }
          hop1[j - g0] = err1 + layout_.perNode * 0x1p-24 * (magnitude + err1);
          worst1 = std::max(worst1, hop1[j - g0]);
          partial.add(sum);
          bound[j] += hop1[j - g0];
        }
        const Range seen = partial.widened(worst1);
        const double err2 = k == layout_.node(owner) ? 0 : wire.groupError(seen.lo, seen.hi);
        for (size_t j = g0; j < g1; ++j) {
          const double magnitude = std::max(std::fabs(seen.lo), std::fabs(seen.hi));
          bound[j] += err2 + layout_.nodes() * 0x1p-24 * (magnitude + err2);
        }
      }
    }
    return bound;
  }

  double exactSum(zcclDataType_t type, size_t index) const {
    double sum = 0;
    for (int r = 0; r < layout_.n; ++r) sum += inputValue(type, r, index);
    return sum;
  }

  // Runs a quantized all-gather of `count` elements per rank, checks every element against
  // what its owner sent within the bound, and that every rank holds the same bytes; returns
  // them.
  std::vector<char> checkQuantizedAllGather(zcclDataType_t type, const Wire& wire,
                                            zcclHierarchy_t hierarchy, size_t count) {
    const size_t es = sizeOf(type);
    std::vector<char> mine(count * es), gathered(count * layout_.n * es);
    for (size_t i = 0; i < count; ++i) store(type, mine.data(), i, inputValue(type, layout_.me, i));
    const zcclCollOptions options = wire.options(hierarchy);
    EXPECT_EQ(zcclAllGatherEx(mine.data(), gathered.data(), count, type, comm_, nullptr, &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    size_t wrong = 0;
    for (int r = 0; r < layout_.n; ++r) {
      for (size_t g0 = 0; g0 < count; g0 += wire.group) {
        const size_t g1 = std::min(count, g0 + wire.group);
        Range range;
        for (size_t j = g0; j < g1; ++j) range.add(inputValue(type, r, j));
        const double err = wire.groupError(range.lo, range.hi);
        for (size_t j = g0; j < g1; ++j) {
          const double want = inputValue(type, r, j);
          const double got = load(type, gathered.data(), r * count + j);
          if (!(std::fabs(got - want) <= err + outputRounding(type, want, err)) && wrong++ == 0) {
            ADD_FAILURE() << "block " << r << " element " << j << ": got " << got << ", sent "
                          << want << ", bound " << err;
          }
        }
      }
    }
    EXPECT_EQ(wrong, 0u);
    // Every rank holds the same bytes, its own block included.
    std::vector<char> root(gathered);
    broadcastBytes(root.data(), root.size(), 0);
    EXPECT_TRUE(root == gathered) << "rank " << layout_.me << " differs from rank 0";
    return gathered;
  }

  // Runs a quantized reduce-scatter of recvcount elements and checks every element of the
  // result against the exact fp64 sum (or average) within the bound.
  void checkQuantizedReduceScatter(zcclDataType_t type, const Wire& wire, zcclRedOp_t op,
                                   zcclHierarchy_t hierarchy, size_t recvcount) {
    const size_t es = sizeOf(type);
    std::vector<char> send(recvcount * layout_.n * es), recv(recvcount * es);
    for (size_t i = 0; i < recvcount * layout_.n; ++i)
      store(type, send.data(), i, inputValue(type, layout_.me, i));
    const zcclCollOptions options = wire.options(hierarchy);
    ASSERT_EQ(zcclReduceScatterEx(send.data(), recv.data(), recvcount, type, op, comm_, nullptr,
                                  &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    const Blocks blocks{recvcount * layout_.n, layout_.n};
    const bool twoLevel = hierarchy == zcclHierarchyTwoLevel;
    const auto bound = reduceScatterBound(type, wire, blocks, layout_.me, twoLevel);
    const double divisor = op == zcclAvg ? layout_.n : 1;
    size_t wrong = 0;
    for (size_t j = 0; j < recvcount; ++j) {
      const double want = exactSum(type, blocks.offset(layout_.me) + j) / divisor;
      const double allowed =
          bound[j] / divisor + 0x1p-23 * std::fabs(want) + outputRounding(type, want, bound[j]);
      const double got = load(type, recv.data(), j);
      if (!(std::fabs(got - want) <= allowed) && wrong++ == 0) {
        ADD_FAILURE() << "element " << j << ": got " << got << ", exact " << want
                      << ", allowed error " << allowed << " (rank " << layout_.me << ")";
      }
    }
    EXPECT_EQ(wrong, 0u);
  }

  void expectStats(zcclComm_t comm, const uint64_t (&bytes)[zcclNumLinkClasses],
                   const uint64_t (&messages)[zcclNumLinkClasses], const std::string& what) {
    zcclStats stats;
    ASSERT_EQ(zcclCommGetStats(comm, &stats), zcclSuccess);
    for (int link = 0; link < zcclNumLinkClasses; ++link) {
      EXPECT_EQ(stats.bytesSent[link], bytes[link])
          << what << " link " << link << " rank " << layout_.me;
      EXPECT_EQ(stats.messagesSent[link], messages[link])
          << what << " link " << link << " rank " << layout_.me;
    }
  }

  // Accumulates what this rank sends, by link class.
  struct Expected {
    uint64_t bytes[zcclNumLinkClasses] = {};
    uint64_t messages[zcclNumLinkClasses] = {};
  };
  void send(Expected* e, int peer, uint64_t bytes, uint64_t messages = 1) const {
    if (bytes == 0) return;
    e->bytes[layout_.link(peer)] += bytes;
    e->messages[layout_.link(peer)] += messages;
  }

  // What an all-gather of `blockBytes(r)` blocks sends: flat ring, two-level (cross ring of
  // my local rank's blocks, then node ring of bundles, one message per block), or quantized
  // two-level (my block to every other node, then my bundle to every node peer, one message
  // each while a block is one pipeline row).
  template <typename BlockBytes>
  void allGatherTraffic(Expected* e, bool twoLevel, bool quantized, BlockBytes&& blockBytes) const {
    const Layout& L = layout_;
    if (!twoLevel) {
      for (int step = 0; step < L.n - 1; ++step)
        send(e, (L.me + 1) % L.n, blockBytes(((L.me - step) % L.n + L.n) % L.n));
      return;
    }
    const int N = L.nodes(), P = L.perNode, k = L.node(L.me), l = L.local(L.me);
    if (quantized) {  // my block to every other node, then my bundle to every node peer
      uint64_t bundle = 0;
      for (int node = 0; node < N; ++node) {
        if (node != k) send(e, L.rankAt(node, l), blockBytes(L.me));
        bundle += blockBytes(L.rankAt(node, l));
      }
      for (int m = 0; m < P; ++m)
        if (m != l) send(e, L.rankAt(k, m), bundle);
      return;
    }
    for (int step = 0; step < N - 1; ++step) {
      const int unit = ((k - step) % N + N) % N;
      send(e, L.rankAt((k + 1) % N, l), blockBytes(L.rankAt(unit, l)));
    }
    for (int step = 0; step < P - 1; ++step) {
      const int unit = ((l - step) % P + P) % P;
      for (int node = 0; node < N; ++node)
        send(e, L.rankAt(k, (l + 1) % P), blockBytes(L.rankAt(node, unit)));
    }
  }

  // What a reduce-scatter sends: plain two-level (one message per block), 1-hop quantized
  // (one message per peer) or 2-hop quantized (one packed message per node peer, then one
  // per cross-node peer).
  template <typename BlockBytes>
  void reduceScatterTraffic(Expected* e, bool twoLevel, bool packed,
                            BlockBytes&& blockBytes) const {
    const Layout& L = layout_;
    if (!twoLevel) {
      for (int peer = 0; peer < L.n; ++peer)
        if (peer != L.me) send(e, peer, blockBytes(peer));
      return;
    }
    const int k = L.node(L.me), l = L.local(L.me);
    for (int m = 0; m < L.perNode; ++m) {
      if (m == l) continue;
      uint64_t bundle = 0;
      for (int node = 0; node < L.nodes(); ++node) {
        const uint64_t b = blockBytes(L.rankAt(node, m));
        if (!packed) send(e, L.rankAt(k, m), b);
        bundle += b;
      }
      if (packed) send(e, L.rankAt(k, m), bundle);
    }
    for (int node = 0; node < L.nodes(); ++node)
      if (node != k) send(e, L.rankAt(node, l), blockBytes(L.rankAt(node, l)));
  }

  const Layout layout_;
  zcclComm_t comm_ = nullptr;
};

constexpr zcclDataType_t kFloatTypes[] = {zcclFloat32, zcclBfloat16, zcclFloat16};
const char* typeName(zcclDataType_t type) {
  return type == zcclFloat32 ? "float32" : type == zcclBfloat16 ? "bfloat16" : "float16";
}

TEST_F(ZeroPlusPlus, PlainFlatAndTwoLevelAreExact) {
  const size_t count = 10007;  // divides by nothing
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
    options.hierarchy = hierarchy;
    const std::string what = hierarchy == zcclHierarchyFlat ? "flat" : "two-level";
    // One pipeline row, and blocks of several rows (the host's rows are 65536 elements), the
    // last one partial, out of place and in place.
    for (size_t elements : {count, 2 * size_t{65536} + 40961}) {
      std::vector<float> mine(elements), gathered(elements * layout_.n);
      for (size_t i = 0; i < elements; ++i) mine[i] = exactValue(layout_.me, i);
      for (bool inPlace : {false, true}) {
        float* send = inPlace ? gathered.data() + layout_.me * elements : mine.data();
        std::fill(gathered.begin(), gathered.end(), -1.0f);
        if (inPlace) std::copy(mine.begin(), mine.end(), gathered.begin() + layout_.me * elements);
        ASSERT_EQ(
            zcclAllGatherEx(send, gathered.data(), elements, zcclFloat32, comm_, nullptr, &options),
            zcclSuccess)
            << zcclGetLastError(comm_);
        for (size_t i = 0; i < gathered.size(); ++i) {
          ASSERT_EQ(gathered[i], exactValue(int(i / elements), i % elements))
              << what << (inPlace ? " in-place" : "") << " all-gather of " << elements << ": " << i;
        }
      }
    }
    std::vector<float> mine(count);
    for (size_t i = 0; i < count; ++i) mine[i] = exactValue(layout_.me, i);

    // One row, and blocks of several rows of the two-level reduce-scatter (four of the host
    // kernels' rows of 65536 elements), the last one partial.
    for (size_t elements : {count, 9 * size_t{65536} + 4097}) {
      for (zcclDataType_t type : {zcclFloat32, zcclBfloat16}) {
        std::vector<char> in(elements * layout_.n * 4), out(elements * 4);
        for (size_t i = 0; i < elements * layout_.n; ++i)
          store(type, in.data(), i, exactValue(layout_.me, i));
        ASSERT_EQ(zcclReduceScatterEx(in.data(), out.data(), elements, type, zcclSum, comm_,
                                      nullptr, &options),
                  zcclSuccess)
            << zcclGetLastError(comm_);
        for (size_t j = 0; j < elements; ++j) {
          const size_t i = layout_.me * elements + j;
          ASSERT_EQ(load(type, out.data(), j), sumOver(layout_.n, exactValue, i))
              << what << " reduce-scatter of " << elements << " " << typeName(type) << " element "
              << j;
        }
        // In place: rows of the result written early must not clobber input still to be read.
        char* mine = in.data() + layout_.me * elements * sizeOf(type);
        ASSERT_EQ(
            zcclReduceScatterEx(in.data(), mine, elements, type, zcclSum, comm_, nullptr, &options),
            zcclSuccess)
            << zcclGetLastError(comm_);
        EXPECT_EQ(0, std::memcmp(mine, out.data(), elements * sizeOf(type)))
            << what << " in-place reduce-scatter of " << elements << " " << typeName(type);
      }
    }

    const int root = layout_.n - 1;
    std::vector<float> reduced(count);
    ASSERT_EQ(zcclReduceEx(mine.data(), layout_.me == root ? reduced.data() : nullptr, count,
                           zcclFloat32, zcclSum, root, comm_, nullptr, &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    for (size_t i = 0; layout_.me == root && i < count; ++i)
      ASSERT_EQ(reduced[i], sumOver(layout_.n, exactValue, i)) << what << " reduce " << i;

    const size_t big = 1000003;
    std::vector<float> data(big);
    for (size_t i = 0; i < big; ++i) data[i] = exactValue(layout_.me, i);
    ASSERT_EQ(zcclAllReduceEx(data.data(), data.data(), big, zcclFloat32, zcclSum, comm_, nullptr,
                              &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    for (size_t i = 0; i < big; ++i)
      ASSERT_EQ(data[i], sumOver(layout_.n, exactValue, i)) << what << " all-reduce " << i;
  }
}

TEST_F(ZeroPlusPlus, QuantizedAllGatherIsWithinTheBoundAndIdenticalOnEveryRank) {
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    for (zcclDataType_t type : kFloatTypes) {
      for (Wire wire : {Wire{zcclWireInt8, zcclQuantSymmetric, 512, false},
                        Wire{zcclWireInt4, zcclQuantAsymmetric, 64, false},
                        Wire{zcclWireInt8, zcclQuantAsymmetric, 4096, true}}) {
        SCOPED_TRACE(std::string(typeName(type)) + " bits " + std::to_string(wire.bits()) +
                     (hierarchy == zcclHierarchyFlat ? " flat" : " two-level"));
        checkQuantizedAllGather(type, wire, hierarchy, 30011);
      }
    }
  }
}

// Blocks of several pipeline rows, the last one partial: every chunk travels on its own (round
// the ring, chunk after chunk, when flat), and in place the rows dequantized early must not
// clobber the own block still to be quantized, so the result equals the out-of-place one.
TEST_F(ZeroPlusPlus, QuantizedAllGatherOfManyRowsIsWithinTheBoundAndInPlaceAlike) {
  const size_t count = 2 * 65536 + 40961;
  const Wire wire{zcclWireInt8, zcclQuantSymmetric, 512, false};
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    SCOPED_TRACE(hierarchy == zcclHierarchyFlat ? "flat" : "two-level");
    const std::vector<char> gathered =
        checkQuantizedAllGather(zcclBfloat16, wire, hierarchy, count);
    std::vector<char> inPlace(gathered.size());
    char* mine = inPlace.data() + layout_.me * count * 2;
    for (size_t i = 0; i < count; ++i)
      store(zcclBfloat16, mine, i, inputValue(zcclBfloat16, layout_.me, i));
    const zcclCollOptions options = wire.options(hierarchy);
    ASSERT_EQ(zcclAllGatherEx(mine, inPlace.data(), count, zcclBfloat16, comm_, nullptr, &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    EXPECT_TRUE(inPlace == gathered) << "in place differs from out of place";
  }
}

TEST_F(ZeroPlusPlus, QuantizedReduceScatterIsWithinTheBoundForSumAndAvg) {
  const size_t recvcount = 20011;
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    for (zcclDataType_t type : kFloatTypes) {
      for (zcclRedOp_t op : {zcclSum, zcclAvg}) {
        for (Wire wire : {Wire{zcclWireInt4, zcclQuantSymmetric, 512, false},
                          Wire{zcclWireInt8, zcclQuantAsymmetric, 128, false}}) {
          SCOPED_TRACE(std::string(typeName(type)) + (op == zcclSum ? " sum" : " avg") + " bits " +
                       std::to_string(wire.bits()) +
                       (hierarchy == zcclHierarchyFlat ? " 1-hop" : " 2-hop"));
          checkQuantizedReduceScatter(type, wire, op, hierarchy, recvcount);
        }
      }
    }
  }
}

TEST_F(ZeroPlusPlus, StochasticQuantizedReduceScatterIsWithinItsBound) {
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    checkQuantizedReduceScatter(zcclFloat32, Wire{zcclWireInt4, zcclQuantSymmetric, 256, true},
                                zcclSum, hierarchy, 5003);
  }
}

// Blocks of several pipeline rows (the host's rows are 65536 elements), the last one partial
// and not a whole number of groups; in place, the rows written early must not clobber input
// still to be read, so the result equals the out-of-place one bit for bit.
TEST_F(ZeroPlusPlus, QuantizedReduceScatterOfManyRowsIsWithinTheBoundAndInPlaceAlike) {
  const size_t recvcount = 2 * 65536 + 40961;
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    SCOPED_TRACE(hierarchy == zcclHierarchyFlat ? "1-hop" : "2-hop");
    checkQuantizedReduceScatter(zcclFloat16, Wire{zcclWireInt4, zcclQuantAsymmetric, 4096, true},
                                zcclAvg, hierarchy, recvcount);
    const Wire wire{zcclWireInt4, zcclQuantSymmetric, 512, false};
    std::vector<uint16_t> send(recvcount * layout_.n), recv(recvcount);
    for (size_t i = 0; i < send.size(); ++i)
      store(zcclBfloat16, send.data(), i, inputValue(zcclBfloat16, layout_.me, i));
    const zcclCollOptions options = wire.options(hierarchy);
    ASSERT_EQ(zcclReduceScatterEx(send.data(), recv.data(), recvcount, zcclBfloat16, zcclSum, comm_,
                                  nullptr, &options),
              zcclSuccess);
    uint16_t* mine = send.data() + layout_.me * recvcount;
    ASSERT_EQ(zcclReduceScatterEx(send.data(), mine, recvcount, zcclBfloat16, zcclSum, comm_,
                                  nullptr, &options),
              zcclSuccess);
    EXPECT_EQ(0, std::memcmp(mine, recv.data(), recvcount * sizeof(uint16_t)));
  }
}

// Calls that allow a lossy format time their candidate paths at first (ZCCL_TUNE, on by
// default): every rank runs the same path at every call (else the calls would fail), each
// result is within the format's bound (an exact one is too), and once the trials are over
// (at most two candidates here, five rounds of three calls each for calls this small) the size
// class keeps one path, whose bytes repeat.
// (Which candidates are in reach depends on this machine's rates: the schedule itself is
// tested in tuner_test.)
TEST_F(ZeroPlusPlus, TunedCallsAgreeOnEveryRankAndKeepOnePath) {
  const auto sent = [&] { return zccl_harness::bytesSent(comm_); };
  const Wire allowInt4{zcclWireAllowInt4, zcclQuantSymmetric, 512, false};
  const Wire allowInt8{zcclWireAllowInt8, zcclQuantSymmetric, 512, false};
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    SCOPED_TRACE(hierarchy == zcclHierarchyFlat ? "flat" : "two-level");
    std::vector<uint64_t> reduceScatterBytes, allGatherBytes;
    constexpr int kTrials = 2 * 5 * 3, kCalls = kTrials + 3;
    for (int call = 0; call < kCalls; ++call) {
      ASSERT_EQ(zcclCommResetStats(comm_), zcclSuccess);
      checkQuantizedReduceScatter(zcclFloat32, allowInt4, zcclSum, hierarchy, 20011);
      reduceScatterBytes.push_back(sent());
      ASSERT_EQ(zcclCommResetStats(comm_), zcclSuccess);
      checkQuantizedAllGather(zcclBfloat16, allowInt8, hierarchy, 30011);
      allGatherBytes.push_back(sent());
    }
    for (int call = kTrials + 1; call < kCalls; ++call) {
      EXPECT_EQ(reduceScatterBytes[call], reduceScatterBytes[kTrials]) << "call " << call;
      EXPECT_EQ(allGatherBytes[call], allGatherBytes[kTrials]) << "call " << call;
    }
  }
}

// A quantized reduce is the quantized reduce-scatter with its blocks gathered exactly: at the
// root every owner's block stays within that owner's reduce-scatter bound.
TEST_F(ZeroPlusPlus, QuantizedReduceIsWithinTheReduceScatterBound) {
  const size_t count = 30011;
  const zcclDataType_t type = zcclFloat32;
  const Wire wire{zcclWireInt4, zcclQuantSymmetric, 512, false};
  const int root = layout_.n - 1;
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    std::vector<float> send(count), result(count);
    for (size_t i = 0; i < count; ++i)
      send[i] = static_cast<float>(inputValue(type, layout_.me, i));
    const zcclCollOptions options = wire.options(hierarchy);
    ASSERT_EQ(zcclReduceEx(send.data(), result.data(), count, type, zcclSum, root, comm_, nullptr,
                           &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    if (layout_.me != root) continue;
    const Blocks blocks{count, layout_.n};
    size_t wrong = 0;
    size_t quantized = 0;  // elements off by more than float32 rounding: the wire was INT4
    for (int owner = 0; owner < layout_.n; ++owner) {
      const auto bound =
          reduceScatterBound(type, wire, blocks, owner, hierarchy == zcclHierarchyTwoLevel);
      for (size_t j = 0; j < blocks.size(owner); ++j) {
        const size_t i = blocks.offset(owner) + j;
        const double want = exactSum(type, i);
        if (std::fabs(result[i] - want) > 0x1p-20 * std::fabs(want)) ++quantized;
        const double allowed =
            bound[j] + 0x1p-23 * std::fabs(want) + outputRounding(type, want, bound[j]);
        if (!(std::fabs(result[i] - want) <= allowed) && wrong++ == 0) {
          ADD_FAILURE() << "element " << i << ": got " << result[i] << ", exact " << want
                        << ", allowed " << allowed;
        }
      }
    }
    EXPECT_EQ(wrong, 0u) << (hierarchy == zcclHierarchyFlat ? "flat" : "two-level");
    EXPECT_GT(quantized, count / 2) << "the reduce did not take the INT4 wire";
  }
}

TEST_F(ZeroPlusPlus, QuantizedAllReduceOfAnOddCountIsWithinTheBound) {
  const size_t count = 1000003;
  const zcclDataType_t type = zcclBfloat16;
  const Wire wire{zcclWireInt8, zcclQuantSymmetric, 512, false};
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    std::vector<uint16_t> data(count);
    for (size_t i = 0; i < count; ++i) store(type, data.data(), i, inputValue(type, layout_.me, i));
    const zcclCollOptions options = wire.options(hierarchy);
    ASSERT_EQ(
        zcclAllReduceEx(data.data(), data.data(), count, type, zcclAvg, comm_, nullptr, &options),
        zcclSuccess)
        << zcclGetLastError(comm_);
    const Blocks blocks{count, layout_.n};
    size_t wrong = 0;
    for (int owner = 0; owner < layout_.n; ++owner) {
      const auto rsBound =
          reduceScatterBound(type, wire, blocks, owner, hierarchy == zcclHierarchyTwoLevel);
      const size_t first = blocks.offset(owner);
      for (size_t g0 = 0; g0 < blocks.size(owner); g0 += wire.group) {
        const size_t g1 = std::min(blocks.size(owner), g0 + wire.group);
        // The all-gather quantizes the owner's reduced block: its values lie within the
        // exact averages widened by the reduce-scatter's error and rounding to bfloat16.
        Range reduced;
        double worst = 0;
        for (size_t j = g0; j < g1; ++j) {
          const double avg = exactSum(type, first + j) / layout_.n;
          const double e = rsBound[j] / layout_.n + outputRounding(type, avg, rsBound[j]);
          reduced.add(avg);
          worst = std::max(worst, e);
        }
        const Range seen = reduced.widened(worst);
        const double agError = wire.groupError(seen.lo, seen.hi);
        for (size_t j = g0; j < g1; ++j) {
          const double want = exactSum(type, first + j) / layout_.n;
          const double allowed = worst + agError + outputRounding(type, want, worst + agError) +
                                 0x1p-23 * std::fabs(want);
          const double got = load(type, data.data(), first + j);
          if (!(std::fabs(got - want) <= allowed) && wrong++ == 0) {
            ADD_FAILURE() << "element " << first + j << ": got " << got << ", exact " << want
                          << ", allowed " << allowed;
          }
        }
      }
    }
    EXPECT_EQ(wrong, 0u) << (hierarchy == zcclHierarchyFlat ? "flat" : "two-level");
  }
}

TEST_F(ZeroPlusPlus, AvgDividesByTheWorldSizeExactlyOnce) {
  // All-ones gradients: the average is exactly 1 whatever the path, so a division by the
  // node count (or twice by the world size) cannot hide inside the error bound.
  const size_t recvcount = 4099;
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    std::vector<float> in(recvcount * layout_.n, 1.0f), out(recvcount);
    const zcclCollOptions options =
        Wire{zcclWireInt4, zcclQuantSymmetric, 512, false}.options(hierarchy);
    ASSERT_EQ(zcclReduceScatterEx(in.data(), out.data(), recvcount, zcclFloat32, zcclAvg, comm_,
                                  nullptr, &options),
              zcclSuccess);
    for (size_t j = 0; j < recvcount; ++j) ASSERT_EQ(out[j], 1.0f) << j;
  }
}

TEST_F(ZeroPlusPlus, StatsEqualEachAlgorithmsDefinition) {
  const size_t count = 10007;
  const Wire int8{zcclWireInt8, zcclQuantSymmetric, 512, false};
  const Wire int4{zcclWireInt4, zcclQuantSymmetric, 512, false};
  std::vector<uint16_t> shard(count), gathered(count * layout_.n), grads(count * layout_.n),
      reduced(count);
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    const bool twoLevel = hierarchy == zcclHierarchyTwoLevel;
    const std::string name = twoLevel ? "two-level" : "flat";
    for (const Wire* wire : {static_cast<const Wire*>(nullptr), &int8}) {
      const zcclCollOptions options = wire ? wire->options(hierarchy) : Wire{}.options(hierarchy);
      ASSERT_EQ(zcclCommResetStats(comm_), zcclSuccess);
      ASSERT_EQ(zcclAllGatherEx(shard.data(), gathered.data(), count, zcclBfloat16, comm_, nullptr,
                                &options),
                zcclSuccess);
      Expected e;
      allGatherTraffic(&e, twoLevel, wire != nullptr,
                       [&](int) { return wire ? wire->messageBytes(count) : count * 2; });
      expectStats(comm_, e.bytes, e.messages, name + (wire ? " qwZ all-gather" : " all-gather"));
    }
    for (const Wire* wire : {static_cast<const Wire*>(nullptr), &int4}) {
      const zcclCollOptions options = wire ? wire->options(hierarchy) : Wire{}.options(hierarchy);
      if (!wire && !twoLevel) continue;  // the flat exact forms are covered by stats_test
      ASSERT_EQ(zcclCommResetStats(comm_), zcclSuccess);
      ASSERT_EQ(zcclReduceScatterEx(grads.data(), reduced.data(), count, zcclBfloat16, zcclSum,
                                    comm_, nullptr, &options),
                zcclSuccess);
      Expected e;
      reduceScatterTraffic(&e, twoLevel, wire != nullptr,
                           [&](int) { return wire ? wire->messageBytes(count) : count * 2; });
      expectStats(comm_, e.bytes, e.messages,
                  name + (wire ? " qgZ reduce-scatter" : " reduce-scatter"));
    }
    // Quantized all-reduce of an odd count: uneven blocks in both halves.
    const size_t odd = 100003;
    std::vector<float> data(odd, 0.5f);
    const zcclCollOptions options = int4.options(hierarchy);
    ASSERT_EQ(zcclCommResetStats(comm_), zcclSuccess);
    ASSERT_EQ(zcclAllReduceEx(data.data(), data.data(), odd, zcclFloat32, zcclSum, comm_, nullptr,
                              &options),
              zcclSuccess);
    const Blocks blocks{odd, layout_.n};
    Expected e;
    const auto messageOf = [&](int r) { return int4.messageBytes(blocks.size(r)); };
    reduceScatterTraffic(&e, twoLevel, true, messageOf);
    allGatherTraffic(&e, twoLevel, true, messageOf);
    expectStats(comm_, e.bytes, e.messages, name + " quantized all-reduce");
  }
}

TEST_F(ZeroPlusPlus, NodeAndCrossNodeSubCommunicators) {
  zcclComm_t node = nullptr, cross = nullptr, again = nullptr;
  ASSERT_EQ(zcclCommSplitNode(comm_, &node), zcclSuccess) << zcclGetLastError(comm_);
  ASSERT_EQ(zcclCommSplitCrossNode(comm_, &cross), zcclSuccess) << zcclGetLastError(comm_);
  ASSERT_EQ(zcclCommSplitNode(comm_, &again), zcclSuccess);
  EXPECT_EQ(again, node) << "created once and cached";
  int size = 0, rank = 0;
  ASSERT_EQ(zcclCommCount(node, &size), zcclSuccess);
  ASSERT_EQ(zcclCommUserRank(node, &rank), zcclSuccess);
  const int nodeSize =
      std::min(layout_.perNode, layout_.n - layout_.node(layout_.me) * layout_.perNode);
  EXPECT_EQ(size, nodeSize);
  EXPECT_EQ(rank, layout_.local(layout_.me));
  ASSERT_EQ(zcclCommCount(cross, &size), zcclSuccess);
  ASSERT_EQ(zcclCommUserRank(cross, &rank), zcclSuccess);
  EXPECT_EQ(rank, layout_.node(layout_.me));
  int sameLocal = 0;
  for (int r = 0; r < layout_.n; ++r) sameLocal += layout_.local(r) == layout_.local(layout_.me);
  EXPECT_EQ(size, sameLocal);

  // hpZ: the secondary partition is gathered inside the node only.
  const size_t count = 4097;
  std::vector<float> shard(count, float(layout_.me)), full(count * nodeSize);
  ASSERT_EQ(zcclCommResetStats(node), zcclSuccess);
  ASSERT_EQ(zcclAllGather(shard.data(), full.data(), count, zcclFloat32, node, nullptr),
            zcclSuccess);
  for (int r = 0; r < nodeSize; ++r)
    EXPECT_EQ(full[r * count], float(layout_.rankAt(layout_.node(layout_.me), r)));
  zcclStats stats;
  ASSERT_EQ(zcclCommGetStats(node, &stats), zcclSuccess);
  EXPECT_EQ(stats.bytesSent[zcclLinkInterNode], 0u);
  EXPECT_EQ(stats.bytesSent[zcclLinkIntraNode], uint64_t(nodeSize - 1) * count * 4);

  EXPECT_EQ(zcclCommDestroy(node), zcclInvalidUsage);
  EXPECT_NE(std::string(zcclGetLastError(nullptr)).find("destroyed with its parent"),
            std::string::npos);
}

// hpZ's node copy read in place: memory every rank of a node maps, each rank's stores seen by
// the others after a collective, nothing counted as traffic, nothing left in /dev/shm; and
// the same refusal on every rank for a size of 0, sizes that differ, or ranks of several nodes.
TEST_F(ZeroPlusPlus, SharedMemoryInsideANode) {
  zcclComm_t node = nullptr;
  ASSERT_EQ(zcclCommSplitNode(comm_, &node), zcclSuccess) << zcclGetLastError(comm_);
  int size = 0, rank = 0;
  ASSERT_EQ(zcclCommCount(node, &size), zcclSuccess);
  ASSERT_EQ(zcclCommUserRank(node, &rank), zcclSuccess);
  const size_t part = 4099;
  void* base = nullptr;
  zcclSharedMemory_t shared = nullptr;
  ASSERT_EQ(zcclCommResetStats(node), zcclSuccess);
  ASSERT_EQ(zcclSharedMemoryCreate(node, size * part * sizeof(double), &base, &shared), zcclSuccess)
      << zcclGetLastError(node);
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(zccl_harness::sharedSegmentsLeft(), 0) << "unlinked once every rank mapped it";
  zcclStats stats;
  ASSERT_EQ(zcclCommGetStats(node, &stats), zcclSuccess);
  EXPECT_EQ(stats.bytesSent[zcclLinkIntraNode] + stats.bytesSent[zcclLinkInterNode], 0u);
  auto* values = static_cast<double*>(base);
  EXPECT_EQ(*std::max_element(values, values + size * part), 0.0) << "zero-filled";
  int32_t token = 0;
  ASSERT_EQ(zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, node, nullptr), zcclSuccess);
  for (size_t i = 0; i < part; ++i) values[rank * part + i] = layout_.me * 1e6 + double(i);
  ASSERT_EQ(zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, node, nullptr), zcclSuccess);
  const int myNode = layout_.node(layout_.me);
  for (int r = 0; r < size; ++r) {
    for (size_t i = 0; i < part; i += 97) {
      ASSERT_EQ(values[r * part + i], layout_.rankAt(myNode, r) * 1e6 + double(i))
          << "node rank " << r << " element " << i;
    }
  }
  EXPECT_EQ(zcclSharedMemoryDestroy(shared), zcclSuccess);
  EXPECT_EQ(zcclSharedMemoryDestroy(nullptr), zcclSuccess);

  const auto refused = [&](zcclComm_t comm, size_t bytes, zcclResult_t expected, const char* says) {
    void* none = &token;
    zcclSharedMemory_t handle = nullptr;
    EXPECT_EQ(zcclSharedMemoryCreate(comm, bytes, &none, &handle), expected) << says;
    EXPECT_EQ(none, nullptr);
    EXPECT_EQ(handle, nullptr);
    EXPECT_NE(std::string(zcclGetLastError(comm)).find(says), std::string::npos)
        << zcclGetLastError(comm);
    EXPECT_EQ(zccl_harness::sharedSegmentsLeft(), 0);
  };
  refused(node, 0, zcclInvalidArgument, "bytes=0 on rank(s) 0");
  if (size > 1) {
    refused(node, rank == size - 1 ? 4096 : 8192, zcclInvalidArgument,
            "different sizes: rank 0 bytes=8192");
  }
  if (layout_.nodes() > 1) refused(comm_, 64, zcclInvalidUsage, "spans");
  EXPECT_EQ(zcclSharedMemoryCreate(node, 64, nullptr, &shared), zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(node)).find("base=(nil)"), std::string::npos)
      << zcclGetLastError(node);
}

TEST_F(ZeroPlusPlus, LossyFormatsOnlyWhereTheyApply) {
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.wireFormat = zcclWireInt4;
  std::vector<int32_t> ints(8 * layout_.n), out(8);
  EXPECT_EQ(
      zcclReduceScatterEx(ints.data(), out.data(), 8, zcclInt32, zcclSum, comm_, nullptr, &options),
      zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(comm_)).find("options.wireFormat=int4"), std::string::npos)
      << zcclGetLastError(comm_);
  std::vector<float> floats(8 * layout_.n, 1.0f), result(8);
  EXPECT_EQ(zcclReduceScatterEx(floats.data(), result.data(), 8, zcclFloat32, zcclMax, comm_,
                                nullptr, &options),
            zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(comm_)).find("op=max"), std::string::npos);

  // A communicator-wide default applies where it can and leaves the rest exact.
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.wireFormat = zcclWireInt4;
  config.timeoutSeconds = 120;
  zcclComm_t quantized = nullptr;
  ASSERT_EQ(initWorldComm(&config, &quantized), zcclSuccess);
  for (int32_t& v : ints) v = 3;
  ASSERT_EQ(zcclReduceScatter(ints.data(), out.data(), 8, zcclInt32, zcclMax, quantized, nullptr),
            zcclSuccess);
  EXPECT_EQ(out[0], 3);
  ASSERT_EQ(zcclCommResetStats(quantized), zcclSuccess);
  std::vector<float> big(4096 * layout_.n, 1.0f), mine(4096);
  ASSERT_EQ(
      zcclReduceScatter(big.data(), mine.data(), 4096, zcclFloat32, zcclSum, quantized, nullptr),
      zcclSuccess);
  zcclStats stats;
  ASSERT_EQ(zcclCommGetStats(quantized, &stats), zcclSuccess);
  const uint64_t sent = stats.bytesSent[zcclLinkIntraNode] + stats.bytesSent[zcclLinkInterNode];
  EXPECT_LT(sent, uint64_t(layout_.n - 1) * 4096 * 4 / 6) << "INT4 is 1/8 of float32 plus scales";
  EXPECT_EQ(zcclCommDestroy(quantized), zcclSuccess);
}

TEST_F(ZeroPlusPlus, TwoLevelNeedsNodesOfEqualSize) {
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.hierarchy = zcclHierarchyTwoLevel;
  std::vector<float> mine(16, 1.0f), all(16 * layout_.n);
  const zcclResult_t result =
      zcclAllGatherEx(mine.data(), all.data(), 16, zcclFloat32, comm_, nullptr, &options);
  if (layout_.uniform()) {
    EXPECT_EQ(result, zcclSuccess);
  } else {
    EXPECT_EQ(result, zcclInvalidUsage);
    EXPECT_NE(std::string(zcclGetLastError(comm_)).find("same number of ranks"), std::string::npos);
    // Auto falls back to the flat algorithm and stays exact.
    options.hierarchy = zcclHierarchyAuto;
    ASSERT_EQ(zcclAllGatherEx(mine.data(), all.data(), 16, zcclFloat32, comm_, nullptr, &options),
              zcclSuccess);
    EXPECT_EQ(all.back(), 1.0f);
    // Configured for every call, it is refused when the communicator is made.
    zcclConfig config = ZCCL_CONFIG_INITIALIZER;
    config.hierarchy = zcclHierarchyTwoLevel;
    config.timeoutSeconds = 60;
    zcclComm_t twoLevel = nullptr;
    EXPECT_EQ(initWorldComm(&config, &twoLevel), zcclInvalidUsage);
    EXPECT_NE(std::string(zcclGetLastError(nullptr)).find("need the same number of ranks"),
              std::string::npos)
        << zcclGetLastError(nullptr);
  }
}

}  // namespace
}  // namespace zccl_harness
