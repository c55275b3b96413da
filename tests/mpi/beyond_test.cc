// Beyond ZeRO++ through the public API, against references computed here in fp64: all-gathers
// of weight differences keep every rank's reference equal to the bit over hundreds of steps,
// with each result within the quantizer's bound on one step's change (not the weights'), exact
// resyncs, and the bytes of the format on the steps between; error feedback makes the
// quantization errors of a reduce-scatter telescope, so that their sum over steps stays within
// one step's residuals where without it the sum grows with the steps; smoothing keeps every
// group within the rotated bound; and misused state is refused with the argument named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/gtest.h"
#include "harness/quantized_bounds.h"
#include "harness/values.h"

namespace zccl_harness {
namespace {

// A weight trajectory: w(r, i, 0) of magnitudes that vary between groups, then a small step
// (about 1% of the magnitude) per call.
double magnitude(size_t i) { return std::ldexp(1.0, static_cast<int>((i / 700) % 7) - 3); }
double uniform(uint64_t seed, int rank, size_t i) {
  return static_cast<double>(mix(seed, static_cast<uint64_t>(rank), i) >> 11) * 0x1p-53 * 2 - 1;
}

class BeyondZeroPlusPlus : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = makeComm(zcclAlgoAuto);
    ASSERT_NE(comm_, nullptr);
  }
  void TearDown() override { EXPECT_EQ(zcclCommDestroy(comm_), zcclSuccess); }

  uint64_t bytesSent() const { return zccl_harness::bytesSent(comm_); }

  // Every rank's weights (rank-major, as gathered) advanced by one step, rounded to `type`.
  void advance(zcclDataType_t type, int step, size_t count, std::vector<double>* weights) const {
    if (weights->empty()) weights->resize(count * layout_.n);
    for (int r = 0; r < layout_.n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        double& w = (*weights)[r * count + i];
        w = step == 0 ? uniform(3, r, i) * magnitude(i)
                      : w + 0.01 * uniform(100 + step, r, i) * magnitude(i);
        char cell[8];
        store(type, cell, 0, w);
        w = load(type, cell, 0);
      }
    }
  }

  // Checks a differences step: block r's element j is within the bound on quantizing its
  // change from the previous result.
  size_t wrongAfterDifferences(zcclDataType_t type, const Wire& wire, size_t count,
                               const std::vector<double>& weights,
                               const std::vector<char>& previous,
                               const std::vector<char>& result) const {
    size_t wrong = 0;
    for (int r = 0; r < layout_.n; ++r) {
      for (size_t g0 = 0; g0 < count; g0 += wire.group) {
        const size_t g1 = std::min(count, g0 + wire.group);
        Range change;
        for (size_t j = g0; j < g1; ++j) {
          change.add(weights[r * count + j] - load(type, previous.data(), r * count + j));
        }
        // The change is formed in float32 (one rounding), quantized, added in float32, then
        // rounded to the type.
        const double err = wire.groupError(change.lo, change.hi) +
                           0x1p-23 * std::max(std::fabs(change.lo), std::fabs(change.hi));
        for (size_t j = g0; j < g1; ++j) {
          const double want = weights[r * count + j];
          const double got = load(type, result.data(), r * count + j);
          const double allowed = err + 0x1p-23 * std::fabs(want) + ulp(type, std::fabs(want) + err);
          if (!(std::fabs(got - want) <= allowed) && wrong++ == 0) {
            ADD_FAILURE() << "block " << r << " element " << j << ": got " << got << ", weight "
                          << want << ", allowed " << allowed;
          }
        }
      }
    }
    return wrong;
  }

  // Runs `steps` all-gathers of weight differences; returns the bytes sent per step.
  std::vector<uint64_t> gatherDifferences(zcclDataType_t type, const Wire& wire, size_t count,
                                          int steps, int resyncEvery,
                                          zcclHierarchy_t hierarchy = zcclHierarchyFlat) {
    const size_t es = sizeOf(type);
    zcclReference_t reference = nullptr;
    EXPECT_EQ(zcclReferenceCreate(comm_, count, type, resyncEvery, &reference), zcclSuccess)
        << zcclGetLastError(comm_);
    size_t held = 0;
    EXPECT_EQ(zcclReferenceBytes(reference, &held), zcclSuccess);
    EXPECT_EQ(held, count * layout_.n * es) << "the reference holds every rank's block";
    zcclCollOptions options = wire.options(hierarchy);
    options.reference = reference;
    std::vector<double> weights;
    std::vector<char> mine(count * es), result(count * layout_.n * es), previous;
    std::vector<uint64_t> bytes;
    for (int step = 0; step < steps; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      advance(type, step, count, &weights);
      for (size_t i = 0; i < count; ++i)
        store(type, mine.data(), i, weights[layout_.me * count + i]);
      EXPECT_EQ(zcclCommResetStats(comm_), zcclSuccess);
      EXPECT_EQ(zcclAllGatherEx(mine.data(), result.data(), count, type, comm_, nullptr, &options),
                zcclSuccess)
          << zcclGetLastError(comm_);
      bytes.push_back(bytesSent());
      std::vector<char> root(result);
      broadcastBytes(root.data(), root.size(), 0);
      EXPECT_TRUE(root == result) << "rank " << layout_.me << "'s reference left rank 0's";
      const bool exact = step == 0 || (resyncEvery > 0 && step % resyncEvery == 0);
      if (exact) {
        for (size_t i = 0; i < count * layout_.n; ++i) {
          EXPECT_EQ(load(type, result.data(), i), weights[i]) << "resync, element " << i;
        }
      } else {
        EXPECT_EQ(wrongAfterDifferences(type, wire, count, weights, previous, result), 0u);
      }
      if (::testing::Test::HasFailure()) break;
      previous = result;
    }
    EXPECT_EQ(zcclReferenceDestroy(reference), zcclSuccess);
    return bytes;
  }

  Layout layout_;
  zcclComm_t comm_ = nullptr;
};

TEST_F(BeyondZeroPlusPlus, DifferencesKeepReferencesEqualOverManySteps) {
  const size_t count = 3001;
  for (zcclDataType_t type : {zcclFloat32, zcclBfloat16}) {
    for (const Wire& wire : {Wire{zcclWireInt4, zcclQuantSymmetric, 256, false},
                             Wire{zcclWireInt8, zcclQuantAsymmetric, 512, false},
                             Wire{zcclWireInt2, zcclQuantSymmetric, 512, false},
                             Wire{zcclWireInt2, zcclQuantAsymmetric, 128, false}}) {
      SCOPED_TRACE(std::string(type == zcclFloat32 ? "float32" : "bfloat16") + " INT" +
                   std::to_string(wire.bits()));
      gatherDifferences(type, wire, count, 200, 0);
    }
  }
  // The two-level quantized all-gather decodes onto the reference as the ring does.
  SCOPED_TRACE("two levels");
  gatherDifferences(zcclBfloat16, Wire{zcclWireInt4, zcclQuantSymmetric, 256, false}, count, 50, 0,
                    zcclHierarchyTwoLevel);
}

TEST_F(BeyondZeroPlusPlus, ResyncsAreExactAndTheStepsBetweenSendTheFormatsBytes) {
  const size_t count = 5000;
  for (zcclWireFormat_t format : {zcclWireInt4, zcclWireInt2}) {
    const Wire wire{format, zcclQuantSymmetric, 512, false};
    SCOPED_TRACE("INT" + std::to_string(wire.bits()));
    const std::vector<uint64_t> bytes = gatherDifferences(zcclFloat32, wire, count, 9, 4);
    ASSERT_EQ(bytes.size(), 9u);
    // Flat: every rank's block reaches the n - 1 others once, whole or as one message.
    const uint64_t plain = (layout_.n - 1) * count * 4;
    const uint64_t quantized = (layout_.n - 1) * wire.messageBytes(count);
    for (int step = 0; step < 9; ++step) {
      EXPECT_EQ(bytes[step], step % 4 == 0 ? plain : quantized) << "step " << step;
    }
  }
}

// Error feedback: with a constant gradient g each step, the sum of T results of a quantized
// reduce-scatter telescopes to T * sum(g) minus the residuals left after the last step, each
// below half a step of its group; without it the same error repeats T times.
class ErrorFeedback : public BeyondZeroPlusPlus {
 protected:
  static double gradient(int rank, size_t i) { return uniform(9, rank, i) * magnitude(i); }

  // Bound on the residuals left in the owner's block: per quantization of a group, half a
  // step of its compensated values (whose absmax grows by at most 1/(2L - 1) over the
  // gradient's), over hop 1's contributions and hop 2's partial sums of perNode of them.
  double residualBound(const Wire& wire, bool twoLevel, double absmax) const {
    const double levels = wire.levels();
    const double grown = absmax * 2 * levels / (2 * levels - 1);
    const double perGroup = (wire.scheme == zcclQuantSymmetric ? grown : 2 * grown) / levels / 2;
    if (!twoLevel) return (layout_.n - 1) * perGroup * (1 + 0x1p-20);
    const double hop1 = layout_.n - layout_.nodes();
    const double hop2 = (layout_.nodes() - 1) * layout_.perNode * 2 * levels / (2 * levels - 1);
    return (hop1 + hop2) * perGroup * (1 + 0x1p-20);
  }

  // The share of a residual's bound that keeping it in `type` may drop at each call: bfloat16
  // rounds it by at most 2^-8 of itself; int8 by half its block's scale, 1/254 of the block's
  // largest (the block lies in one group, whose bound holds for all of it), with float32's
  // roundings of the division and the product.
  static double keptRounding(zcclDataType_t type) {
    return type == zcclBfloat16 ? 0x1p-8 : type == zcclInt8 ? (1 + 1e-4) / 254 : 0.0;
  }
  static size_t keptBytes(zcclDataType_t type, size_t count, int ranks) {
    if (type != zcclInt8) return count * (type == zcclBfloat16 ? 2 : sizeof(float));
    const size_t scales = count / 32 + 1 + static_cast<size_t>(ranks);
    return (count + 3) / 4 * 4 + scales * sizeof(float);  // codes, then scales from 4 bytes on
  }

  // The largest |sum over steps of (result - exact)| in this rank's block, over `steps` calls,
  // with error feedback as `feedback` keeps it (nullptr: none). Residuals kept in bfloat16 or
  // int8 are each rounded once a step: the bound grows by keptRounding() a step.
  double cumulativeError(zcclHierarchy_t hierarchy, const Wire& wire, size_t recvcount, int steps,
                         const zcclFeedbackOptions* feedback, std::vector<double>* bound) {
    const Blocks blocks{recvcount * layout_.n, layout_.n};
    std::vector<float> send(recvcount * layout_.n), recv(recvcount);
    for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(gradient(layout_.me, i));
    zcclFeedback_t state = nullptr;
    zcclCollOptions options = wire.options(hierarchy);
    const zcclDataType_t kept = feedback != nullptr ? feedback->residualType : zcclFloat32;
    if (feedback != nullptr) {
      EXPECT_EQ(zcclFeedbackCreateEx(comm_, send.size(), zcclFloat32, feedback, &state),
                zcclSuccess);
      size_t held = 0;
      EXPECT_EQ(zcclFeedbackBytes(state, &held), zcclSuccess);
      EXPECT_EQ(held, keptBytes(kept, send.size(), layout_.n)) << "one residual per element";
      options.feedback = state;
    }
    std::vector<double> sum(recvcount, 0.0);
    for (int step = 0; step < steps; ++step) {
      EXPECT_EQ(zcclReduceScatterEx(send.data(), recv.data(), recvcount, zcclFloat32, zcclSum,
                                    comm_, nullptr, &options),
                zcclSuccess)
          << zcclGetLastError(comm_);
      for (size_t j = 0; j < recvcount; ++j) sum[j] += recv[j];
    }
    if (state != nullptr) {
      EXPECT_EQ(zcclFeedbackDestroy(state), zcclSuccess);
    }
    double worst = 0;
    bound->assign(recvcount, 0.0);
    const size_t first = blocks.offset(layout_.me);
    for (size_t g0 = 0; g0 < recvcount; g0 += wire.group) {
      const size_t g1 = std::min(recvcount, g0 + wire.group);
      double absmax = 0;
      for (int r = 0; r < layout_.n; ++r) {
        for (size_t j = g0; j < g1; ++j)
          absmax = std::max(absmax, std::fabs(gradient(r, first + j)));
      }
      const double residuals = residualBound(wire, hierarchy == zcclHierarchyTwoLevel, absmax) *
                               (1 + (steps + 1) * keptRounding(kept));
      for (size_t j = g0; j < g1; ++j) {
        double exact = 0, scale = 0;
        for (int r = 0; r < layout_.n; ++r) {
          exact += gradient(r, first + j);
          scale += std::fabs(gradient(r, first + j));
        }
        // Each step's float32 sums and conversions round, at most n + 2 times.
        (*bound)[j] = residuals + steps * (layout_.n + 2) * 0x1p-24 * (scale + residuals);
        worst = std::max(worst, std::fabs(sum[j] - steps * exact) / (*bound)[j]);
      }
    }
    return worst;  // relative to the bound with feedback
  }
};

TEST_F(ErrorFeedback, ErrorsTelescopeOverStepsInsteadOfGrowing) {
  const size_t recvcount = 3000;
  constexpr int kSteps = 40;
  for (zcclHierarchy_t hierarchy : hierarchies(layout_)) {
    for (const Wire& wire : {Wire{zcclWireInt4, zcclQuantSymmetric, 512, false},
                             Wire{zcclWireInt4, zcclQuantAsymmetric, 128, false},
                             Wire{zcclWireInt8, zcclQuantSymmetric, 256, false}}) {
      SCOPED_TRACE(std::string(hierarchy == zcclHierarchyFlat ? "flat" : "two-level") + " INT" +
                   std::to_string(wire.bits()));
      std::vector<double> bound;
      zcclFeedbackOptions exact = ZCCL_FEEDBACK_OPTIONS_INITIALIZER, half = exact, eight = exact;
      half.residualType = zcclBfloat16;
      eight.residualType = zcclInt8;
      const double with = cumulativeError(hierarchy, wire, recvcount, kSteps, &exact, &bound);
      const double kept16 = cumulativeError(hierarchy, wire, recvcount, kSteps, &half, &bound);
      const double kept8 = cumulativeError(hierarchy, wire, recvcount, kSteps, &eight, &bound);
      const double without = cumulativeError(hierarchy, wire, recvcount, kSteps, nullptr, &bound);
      EXPECT_LE(with, 1.0) << "the summed error exceeds the last step's residuals";
      EXPECT_LE(kept16, 1.0) << "bfloat16 residuals: beyond their roundings' share";
      EXPECT_LE(kept8, 1.0) << "int8 residuals: beyond their roundings' share";
      EXPECT_GT(without, 5.0) << "without feedback the same error should repeat every step";
      if (layout_.me == 0) {
        std::printf(
            "%s INT%d: summed error over %d steps / one step's residual bound: %.3f with "
            "error feedback (%.3f and %.3f of bounds %.2fx and %.2fx larger with bfloat16 and "
            "int8 residuals), %.3f without\n",
            hierarchy == zcclHierarchyFlat ? "flat" : "two-level", wire.bits(), kSteps, with,
            kept16, kept8, 1 + (kSteps + 1) * keptRounding(zcclBfloat16),
            1 + (kSteps + 1) * keptRounding(zcclInt8), without);
      }
    }
  }
}

// Smoothing: a rotated group's L2 error is at most sqrt(g) ||x||_2 / (2L) per quantization
// (symmetric; asymmetric twice that, 2L levels), whatever its outliers.
TEST_F(BeyondZeroPlusPlus, SmoothedReduceScatterAndAllGatherStayWithinTheRotatedBound) {
  const size_t recvcount = 4096 + 100;
  for (const Wire& wire : {Wire{zcclWireInt4, zcclQuantSymmetric, 256, false, true},
                           Wire{zcclWireInt8, zcclQuantAsymmetric, 1024, false, true}}) {
    SCOPED_TRACE("INT" + std::to_string(wire.bits()));
    const auto value = [](int r, size_t i) {
      return i % 97 == 0 ? 40.0 * uniform(5, r, i) : uniform(6, r, i);  // outliers in each group
    };
    const zcclCollOptions options = wire.options(zcclHierarchyFlat);
    const double perNorm = (wire.scheme == zcclQuantSymmetric ? 1.0 : 2.0) / (2 * wire.levels());
    // Reduce-scatter: n - 1 quantized contributions per group.
    std::vector<float> send(recvcount * layout_.n), recv(recvcount);
    for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>(value(layout_.me, i));
    ASSERT_EQ(zcclReduceScatterEx(send.data(), recv.data(), recvcount, zcclFloat32, zcclSum, comm_,
                                  nullptr, &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    const size_t first = Blocks{send.size(), layout_.n}.offset(layout_.me);
    for (size_t g0 = 0; g0 + wire.group <= recvcount; g0 += wire.group) {
      double err = 0, allowed = 0;
      for (int r = 0; r < layout_.n; ++r) {
        double norm = 0;
        for (size_t j = g0; j < g0 + wire.group; ++j)
          norm += value(r, first + j) * value(r, first + j);
        if (r != layout_.me) allowed += std::sqrt(wire.group * norm) * perNorm * (1 + 0x1p-18);
      }
      for (size_t j = g0; j < g0 + wire.group; ++j) {
        double exact = 0;
        for (int r = 0; r < layout_.n; ++r) exact += static_cast<float>(value(r, first + j));
        err += (recv[j] - exact) * (recv[j] - exact);
      }
      EXPECT_LE(std::sqrt(err), allowed + 1e-4) << "group at " << g0;
    }
    // All-gather: one quantization of each block.
    std::vector<float> gathered(recvcount * layout_.n);
    ASSERT_EQ(zcclAllGatherEx(recv.data(), gathered.data(), recvcount, zcclFloat32, comm_, nullptr,
                              &options),
              zcclSuccess)
        << zcclGetLastError(comm_);
    std::vector<float> blocks(gathered.size());
    std::copy(recv.begin(), recv.end(), blocks.begin() + layout_.me * recvcount);
    for (int r = 0; r < layout_.n; ++r) {
      broadcastBytes(blocks.data() + r * recvcount, recvcount * sizeof(float), r);
      for (size_t g0 = 0; g0 + wire.group <= recvcount; g0 += wire.group) {
        double err = 0, norm = 0;
        for (size_t j = r * recvcount + g0; j < r * recvcount + g0 + wire.group; ++j) {
          err += double(gathered[j] - blocks[j]) * (gathered[j] - blocks[j]);
          norm += double(blocks[j]) * blocks[j];
        }
        EXPECT_LE(std::sqrt(err), std::sqrt(wire.group * norm) * perNorm * (1 + 0x1p-18) + 1e-4)
            << "block " << r << " group at " << g0;
      }
    }
  }
}

TEST_F(BeyondZeroPlusPlus, StateOfAnotherCallIsRefusedWithTheArgumentNamed) {
  std::vector<float> send(64 * layout_.n), recv(64 * layout_.n);
  zcclFeedback_t feedback = nullptr;
  ASSERT_EQ(zcclFeedbackCreate(comm_, 63 * layout_.n, zcclFloat32, &feedback), zcclSuccess);
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.wireFormat = zcclWireInt4;
  options.feedback = feedback;
  EXPECT_EQ(zcclReduceScatterEx(send.data(), recv.data(), 64, zcclFloat32, zcclSum, comm_, nullptr,
                                &options),
            zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(comm_)).find("options.feedback"), std::string::npos)
      << zcclGetLastError(comm_);
  EXPECT_EQ(zcclAllGatherEx(send.data(), recv.data(), 64, zcclFloat32, comm_, nullptr, &options),
            zcclInvalidArgument)
      << "error feedback serves reductions";
  EXPECT_EQ(zcclFeedbackDestroy(feedback), zcclSuccess);
  zcclFeedbackOptions kept = ZCCL_FEEDBACK_OPTIONS_INITIALIZER;
  for (int type : {static_cast<int>(zcclFloat16), static_cast<int>(zcclUint8), 99}) {
    kept.residualType = static_cast<zcclDataType_t>(type);
    EXPECT_EQ(zcclFeedbackCreateEx(comm_, 64, zcclFloat32, &kept, &feedback), zcclInvalidArgument);
    EXPECT_NE(std::string(zcclGetLastError(comm_)).find("options.residualType="), std::string::npos)
        << zcclGetLastError(comm_);
    EXPECT_EQ(feedback, nullptr);
  }
  kept = ZCCL_FEEDBACK_OPTIONS_INITIALIZER;
  kept.magic = 0;
  EXPECT_EQ(zcclFeedbackCreateEx(comm_, 64, zcclFloat32, &kept, &feedback), zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(comm_)).find("ZCCL_FEEDBACK_OPTIONS_INITIALIZER"),
            std::string::npos)
      << zcclGetLastError(comm_);

  zcclReference_t reference = nullptr;
  EXPECT_EQ(zcclReferenceCreate(comm_, 64, zcclFloat32, -1, &reference), zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(comm_)).find("resyncEvery=-1"), std::string::npos);
  EXPECT_EQ(zcclReferenceCreate(comm_, 64, zcclInt32, 0, &reference), zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(comm_)).find("datatype"), std::string::npos)
      << zcclGetLastError(comm_);
  ASSERT_EQ(zcclReferenceCreate(comm_, 64, zcclFloat32, 0, &reference), zcclSuccess);
  options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.reference = reference;
  EXPECT_EQ(zcclReduceScatterEx(send.data(), recv.data(), 64, zcclFloat32, zcclSum, comm_, nullptr,
                                &options),
            zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(comm_)).find("options.reference"), std::string::npos);
  EXPECT_EQ(zcclAllGatherEx(send.data(), recv.data(), 32, zcclFloat32, comm_, nullptr, &options),
            zcclInvalidArgument)
      << "a reference serves all-gathers of its own count";
  EXPECT_EQ(zcclReferenceDestroy(reference), zcclSuccess);
  // The communicator still works after refused calls.
  EXPECT_EQ(zcclAllGather(send.data(), recv.data(), 64, zcclFloat32, comm_, nullptr), zcclSuccess);
}

}  // namespace
}  // namespace zccl_harness
