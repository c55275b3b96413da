// The tuner's schedule and choice, with the times given: every candidate within reach is tried
// in rounds of one call of each, by turns (five rounds for large calls, more for small ones),
// the first round only warms up and the median of the others counts, the ranks'
// agreement (here the other ranks' times folded in by hand) decides, and the size class keeps
// the choice.
#include "collectives/tuner.h"

#include <gtest/gtest.h>

#include <vector>

#include "collectives/registry.h"

namespace zccl {
namespace {

Candidates candidates(std::vector<double> estimates) {
  Candidates all;
  for (double seconds : estimates) {
    Candidates::Entry& entry = all.entries[all.count];
    entry.plan.algorithm = static_cast<Algorithm>(all.count);  // tells them apart
    entry.plan.row = &*algorithmRows()[0];
    entry.seconds = seconds;
    ++all.count;
  }
  return all;
}

TEST(PlanTuner, TriesEachCandidateInReachInRoundsAndKeepsTheFastestOnTheSlowestRank) {
  PlanTuner tuner;
  const uint64_t key = PlanTuner::keyOf(Collective::kReduceScatter, DataType::kBfloat16,
                                        RedOp::kSum, size_t{16} << 20);
  // The third is out of reach of the model's best (more than kReach times its estimate).
  const Candidates all = candidates({1.0, 1.5, 1.0 * PlanTuner::kReach + 0.1});
  // This rank's times per call, five rounds of the two candidates by turns from 8 MiB up: the
  // first round warms up (not counted), candidate 0 fast here, candidate 1 slower here, but
  // the other rank is far slower on candidate 0.
  ASSERT_EQ(PlanTuner::roundsOf(key), 5);
  const double mine[] = {0.001, 0.300, 0.010, 0.030, 0.014, 0.010, 0.011, 0.020, 0.013, 0.020};
  const int expectedTrials[] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  for (int call = 0; call < 10; ++call) {
    const PlanTuner::Choice choice = tuner.choose(key, all);
    ASSERT_EQ(choice.trial, expectedTrials[call]) << "call " << call;
    EXPECT_EQ(choice.plan.algorithm, static_cast<Algorithm>(expectedTrials[call]));
    std::vector<double> seen;
    const Plan* decided = nullptr;
    ASSERT_EQ(tuner.finishTrial(
                  key, mine[call],
                  [&](std::vector<double>* seconds) {
                    seen = *seconds;
                    (*seconds)[0] = std::max((*seconds)[0], 0.050);  // rank 1
                    (*seconds)[1] = std::max((*seconds)[1], 0.021);
                    return Status::kSuccess;
                  },
                  &decided),
              Status::kSuccess);
    if (call < 9) {
      EXPECT_EQ(decided, nullptr) << "decided before every trial was in";
    } else {
      ASSERT_EQ(seen.size(), 2u);
      EXPECT_DOUBLE_EQ(seen[0], 0.012) << "the median of its four counted rounds";
      EXPECT_DOUBLE_EQ(seen[1], 0.020) << "the median of its four counted rounds";
      ASSERT_NE(decided, nullptr);
      EXPECT_EQ(decided->algorithm, static_cast<Algorithm>(1)) << "the slowest rank decides";
    }
  }
  for (int call = 0; call < 3; ++call) {
    const PlanTuner::Choice kept = tuner.choose(key, all);
    EXPECT_EQ(kept.trial, -1);
    EXPECT_EQ(kept.plan.algorithm, static_cast<Algorithm>(1));
  }
  // Another size class starts its own trials.
  const uint64_t other = PlanTuner::keyOf(Collective::kReduceScatter, DataType::kBfloat16,
                                          RedOp::kSum, size_t{64} << 20);
  EXPECT_NE(other, key);
  EXPECT_EQ(tuner.choose(other, all).trial, 0);
}

TEST(PlanTuner, SmallCallsTakeMoreRoundsFixedByTheirSizeClass) {
  const auto rounds = [](size_t bytes) {
    return PlanTuner::roundsOf(
        PlanTuner::keyOf(Collective::kAllGather, DataType::kBfloat16, RedOp::kSum, bytes));
  };
  EXPECT_EQ(rounds(size_t{64} << 20), PlanTuner::kMinRounds);
  EXPECT_EQ(rounds(size_t{16} << 20), PlanTuner::kMinRounds);
  EXPECT_EQ(rounds(size_t{8} << 20), PlanTuner::kMinRounds);
  EXPECT_EQ(rounds(size_t{2} << 20), 9);  // eight counted calls of 2 MiB
  EXPECT_EQ(rounds(size_t{3} << 20), 9) << "by the size class (2^21), not the call's bytes";
  EXPECT_EQ(rounds(size_t{1} << 20), PlanTuner::kMaxRounds);
  EXPECT_EQ(rounds(4096), PlanTuner::kMaxRounds);
  EXPECT_EQ(rounds(0), PlanTuner::kMaxRounds);
}

// One call of a candidate's trials that lost its time slice does not make it look slow.
TEST(PlanTuner, TheMedianLeavesOutAStalledCall) {
  PlanTuner tuner;
  const uint64_t key =
      PlanTuner::keyOf(Collective::kAllGather, DataType::kBfloat16, RedOp::kSum, size_t{1} << 20);
  const int rounds = PlanTuner::roundsOf(key);
  ASSERT_EQ(rounds, PlanTuner::kMaxRounds);
  const Candidates all = candidates({1.0, 1.2});
  // Candidate 0: 1 ms a call but one call of 40 ms (its mean would be 5.9 ms); candidate 1:
  // 2 ms every call; by turns.
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) {
    times.push_back(round == 3 ? 0.040 : 0.001);
    times.push_back(0.002);
  }
  const Plan* decided = nullptr;
  std::vector<double> seen;
  for (size_t call = 0; call < times.size(); ++call) {
    const PlanTuner::Choice choice = tuner.choose(key, all);
    ASSERT_EQ(choice.trial, static_cast<int>(call % 2)) << "call " << call;
    ASSERT_EQ(tuner.finishTrial(
                  key, times[call],
                  [&](std::vector<double>* seconds) {
                    seen = *seconds;
                    return Status::kSuccess;
                  },
                  &decided),
              Status::kSuccess);
    EXPECT_EQ(decided == nullptr, call + 1 < times.size()) << "call " << call;
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_DOUBLE_EQ(seen[0], 0.001);
  EXPECT_DOUBLE_EQ(seen[1], 0.002);
  ASSERT_NE(decided, nullptr);
  EXPECT_EQ(decided->algorithm, static_cast<Algorithm>(0));
}

TEST(PlanTuner, ASingleCandidateIsKeptWithoutTrials) {
  PlanTuner tuner;
  const uint64_t key =
      PlanTuner::keyOf(Collective::kAllGather, DataType::kFloat32, RedOp::kSum, 4096);
  const PlanTuner::Choice choice = tuner.choose(key, candidates({1.0, 9.0}));
  EXPECT_EQ(choice.trial, -1);
  EXPECT_EQ(choice.plan.algorithm, static_cast<Algorithm>(0));
  EXPECT_NE(tuner.finishTrial(key, 1.0, [](std::vector<double>*) { return Status::kSuccess; }),
            Status::kSuccess)
      << "no trial to finish";
}

}  // namespace
}  // namespace zccl
