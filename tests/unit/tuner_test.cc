// The tuner's schedule and choice, with the times given: every candidate within reach is tried
// by turns, in rounds of a turn of kCallsPerTurn calls of each (four rounds for large calls,
// more for small ones); the first round only warms up, a turn's first call only settles, the
// median of the other calls counts, the ranks' agreement (here the other ranks'
// times folded in by hand) decides, and the size class keeps the choice.
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

uint64_t keyOf(size_t bytes) {
  return PlanTuner::keyOf(Collective::kReduceScatter, DataType::kBfloat16, RedOp::kSum, bytes);
}

// Every trial call's time, from each candidate's time per turn: `turnTimes(round, candidate)`
// gives the calls of that turn (kCallsPerTurn of them).
template <typename TurnTimes>
std::vector<double> trialTimes(int rounds, int count, TurnTimes&& turnTimes) {
  std::vector<double> times;
  for (int round = 0; round < rounds; ++round) {
    for (int candidate = 0; candidate < count; ++candidate) {
      const std::vector<double> turn = turnTimes(round, candidate);
      EXPECT_EQ(turn.size(), static_cast<size_t>(PlanTuner::kCallsPerTurn));
      times.insert(times.end(), turn.begin(), turn.end());
    }
  }
  return times;
}

// Runs the trials with these times, `inReach` candidates; `agree` plays the other ranks. Checks
// the schedule (each call's candidate, no decision before the last) and returns what was decided
// and what this rank's times per candidate were when the ranks agreed.
struct Outcome {
  const Plan* decided = nullptr;
  std::vector<double> mine;
};
Outcome runTrials(
    PlanTuner& tuner, uint64_t key, const Candidates& all, int inReach,
    const std::vector<double>& times,
    const PlanTuner::Agreement& agree = [](std::vector<double>*) { return Status::kSuccess; }) {
  Outcome outcome;
  for (size_t call = 0; call < times.size(); ++call) {
    const PlanTuner::Choice choice = tuner.choose(key, all);
    const int expected = static_cast<int>(call) / PlanTuner::kCallsPerTurn % inReach;
    EXPECT_EQ(choice.trial, expected) << "call " << call;
    EXPECT_EQ(choice.plan.algorithm, static_cast<Algorithm>(expected)) << "call " << call;
    const Status status = tuner.finishTrial(
        key, times[call],
        [&](std::vector<double>* seconds) {
          outcome.mine = *seconds;
          return agree(seconds);
        },
        &outcome.decided);
    EXPECT_EQ(status, Status::kSuccess) << "call " << call;
    EXPECT_EQ(outcome.decided == nullptr, call + 1 < times.size())
        << "call " << call << ": decided before every trial was in, or not after";
  }
  return outcome;
}

// The trials saw `mine` on this rank (per candidate) and kept candidate `kept`.
void expectOutcome(const Outcome& outcome, const std::vector<double>& mine, int kept) {
  ASSERT_EQ(outcome.mine.size(), mine.size());
  for (size_t i = 0; i < mine.size(); ++i) EXPECT_DOUBLE_EQ(outcome.mine[i], mine[i]) << i;
  ASSERT_NE(outcome.decided, nullptr);
  EXPECT_EQ(outcome.decided->algorithm, static_cast<Algorithm>(kept));
}

TEST(PlanTuner, TriesEachCandidateInReachInTurnsAndKeepsTheFastestOnTheSlowestRank) {
  PlanTuner tuner;
  const uint64_t key = keyOf(size_t{16} << 20);
  // The third is out of reach of the model's best (more than kReach times its estimate).
  const Candidates all = candidates({1.0, 1.5, 1.0 * PlanTuner::kReach + 0.1});
  ASSERT_EQ(PlanTuner::roundsOf(key), PlanTuner::kMinRounds);
  ASSERT_EQ(PlanTuner::trialCallsOf(key, 2), 4 * 2 * 3);
  // This rank: candidate 0 fast (turns around 12, 13, 10 ms a call after a slow first round),
  // candidate 1 slower (20, 21, 19 ms); but the other rank is far slower on candidate 0.
  const std::vector<double> perCall[2] = {{0.300, 0.012, 0.013, 0.010},
                                          {0.300, 0.020, 0.021, 0.019}};
  const std::vector<double> times = trialTimes(4, 2, [&](int round, int candidate) {
    const double t = perCall[candidate][static_cast<size_t>(round)];
    return std::vector<double>{t, t - 0.0005, t + 0.0005};
  });
  const Outcome outcome = runTrials(tuner, key, all, 2, times, [](std::vector<double>* seconds) {
    (*seconds)[0] = std::max((*seconds)[0], 0.050);  // rank 1
    (*seconds)[1] = std::max((*seconds)[1], 0.021);
    return Status::kSuccess;
  });
  // The medians of six counted calls each; the slowest rank decides.
  expectOutcome(outcome, {0.012, 0.020}, 1);
  for (int call = 0; call < 3; ++call) {
    const PlanTuner::Choice kept = tuner.choose(key, all);
    EXPECT_EQ(kept.trial, -1);
    EXPECT_EQ(kept.plan.algorithm, static_cast<Algorithm>(1));
  }
  // Another size class starts its own trials.
  const uint64_t other = keyOf(size_t{64} << 20);
  EXPECT_NE(other, key);
  EXPECT_EQ(tuner.choose(other, all).trial, 0);
}

TEST(PlanTuner, SmallCallsTakeMoreRoundsFixedByTheirSizeClass) {
  const auto rounds = [](size_t bytes) { return PlanTuner::roundsOf(keyOf(bytes)); };
  EXPECT_EQ(rounds(size_t{64} << 20), PlanTuner::kMinRounds);
  EXPECT_EQ(rounds(size_t{16} << 20), PlanTuner::kMinRounds);
  EXPECT_EQ(rounds(size_t{4} << 20), PlanTuner::kMinRounds);  // four counted calls of 4 MiB
  EXPECT_EQ(rounds(size_t{2} << 20), 5);  // four counted turns: eight calls of 2 MiB
  EXPECT_EQ(rounds(size_t{3} << 20), 5) << "by the size class (2^21), not the call's bytes";
  EXPECT_EQ(rounds(size_t{1} << 20), PlanTuner::kMaxRounds);
  EXPECT_EQ(rounds(4096), PlanTuner::kMaxRounds);
  EXPECT_EQ(rounds(0), PlanTuner::kMaxRounds);
}

// A turn's first call follows another candidate's call and pays what that one left (its ranks
// leave it at different times): it does not count against the candidate.
TEST(PlanTuner, ATurnsFirstCallSettlesAndIsNotCounted) {
  PlanTuner tuner;
  const uint64_t key = keyOf(size_t{64} << 20);
  const Candidates all = candidates({1.0, 1.2});
  // Candidate 0: 10 and 11 ms, after 50 ms for the first of each turn (its median 10.5 ms;
  // counted, the first calls would make it 11 ms); candidate 1: 12 ms every call.
  const std::vector<double> times = trialTimes(PlanTuner::roundsOf(key), 2, [](int, int c) {
    return c == 0 ? std::vector<double>{0.050, 0.010, 0.011} : std::vector<double>(3, 0.012);
  });
  expectOutcome(runTrials(tuner, key, all, 2, times), {0.0105, 0.012}, 0);
}

// Trials of paths this close rank them by noise: the model's choice (the first) stays unless
// another ran faster by more than kModelMargin.
TEST(PlanTuner, TheModelsChoiceStaysUnlessAnotherIsClearlyFaster) {
  const auto keptOf = [](double first, double second, double third) {
    PlanTuner tuner;
    const uint64_t key = keyOf(size_t{64} << 20);
    const double perCall[3] = {first, second, third};
    const std::vector<double> times = trialTimes(PlanTuner::roundsOf(key), 3, [&](int, int c) {
      return std::vector<double>(3, perCall[c]);
    });
    const Outcome outcome = runTrials(tuner, key, candidates({1.0, 1.1, 1.2}), 3, times);
    EXPECT_NE(outcome.decided, nullptr);
    return outcome.decided == nullptr ? -1 : static_cast<int>(outcome.decided->algorithm);
  };
  EXPECT_EQ(keptOf(0.0100, 0.0095, 0.0098), 0) << "5% faster: the model's choice stays";
  EXPECT_EQ(keptOf(0.0100, 0.0120, 0.0091), 0) << "9% faster: the model's choice stays";
  EXPECT_EQ(keptOf(0.0100, 0.0089, 0.0095), 1) << "11% faster replaces it";
  EXPECT_EQ(keptOf(0.0100, 0.0085, 0.0080), 2) << "the fastest of those clearly faster";
}

// One call of a candidate's trials that lost its time slice does not make it look slow.
TEST(PlanTuner, TheMedianLeavesOutAStalledCall) {
  PlanTuner tuner;
  const uint64_t key = keyOf(size_t{1} << 20);
  ASSERT_EQ(PlanTuner::roundsOf(key), PlanTuner::kMaxRounds);
  const Candidates all = candidates({1.0, 1.2});
  // Candidate 0: 1 ms a call but a call of 40 ms in one turn (its mean would be 5.9 ms);
  // candidate 1: 2 ms every call.
  const std::vector<double> times = trialTimes(PlanTuner::kMaxRounds, 2, [](int round, int c) {
    if (c == 1) return std::vector<double>(3, 0.002);
    return round == 3 ? std::vector<double>{0.001, 0.040, 0.001} : std::vector<double>(3, 0.001);
  });
  expectOutcome(runTrials(tuner, key, all, 2, times), {0.001, 0.002}, 0);
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
