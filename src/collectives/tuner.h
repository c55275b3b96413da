// Measured choice among the paths a call leaves open, where the caller allowed a lossy wire
// format (ZCCL_QUANT=allow-*): the cost model prices links and kernels one at a time, but
// how they share a node's cores and NIC (TCP's own CPU time, ranks that outnumber cores) only
// a run shows. So the first calls of each size class run every candidate the model keeps
// within reach of its best, in rounds of one call of each, by turns, so that what drifts
// during the trials (another process on the core, the first calls' costs that one warm-up
// does not cover) reaches every candidate alike: blocks of one candidate's calls let the
// first candidate's block carry them, and at 10 Gbit/s that chose the slower path. The
// first round warms up (scratch memory, connections, a rate limiter's idle credit, as a token
// bucket's, which back-to-back calls do not get), the median of the others counts. Small calls get
// more rounds (up to kMaxRounds), so that a candidate's trials last long enough for one slow call
// (a time slice lost to another process) not to decide; the median leaves such a call out.
// The ranks then agree on every candidate's time on its slowest rank, and the size class
// keeps the fastest. Every rank follows the same schedule, fixed by the size class alone
// (calls match across ranks), so all run the same path at every call. A communicator's host
// calls only: device calls follow the model with the device's measured rates.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "collectives/planner.h"

namespace zccl {

class PlanTuner {
 public:
  // What one call runs: the size class's kept plan, or a candidate under trial (`trial` is
  // then its index, else -1).
  struct Choice {
    Plan plan;
    int trial = -1;
  };
  // Candidates whose estimate is more than this times the best's are not tried.
  static constexpr double kReach = 4.0;
  // Rounds, a call of each candidate in each (the first round does not count): enough that the
  // counted ones carry about kTrialBytes, within these bounds. Four counted calls at least: with
  // two, one call slowed by another process on the core (at 10 Gbit/s the paths are within 20% of
  // each other) still decided too often.
  static constexpr int kMinRounds = 5;
  static constexpr int kMaxRounds = 9;
  static constexpr size_t kTrialBytes = size_t{16} << 20;
  static int roundsOf(uint64_t key);

  // `key` identifies the size class (collective, type, op, log2 of the bytes).
  Choice choose(uint64_t key, const Candidates& candidates);
  // After a trial: its time. Once the size class's last trial is in, `agree` turns this
  // rank's time of every candidate into the slowest rank's (collective: every rank calls it
  // at the same call), and the fastest candidate is kept; `decided` is set then.
  using Agreement = std::function<Status(std::vector<double>* seconds)>;
  Status finishTrial(uint64_t key, double seconds, const Agreement& agree,
                     const Plan** decided = nullptr);

  static uint64_t keyOf(Collective collective, DataType type, RedOp op, size_t bytes);

 private:
  struct SizeClass {
    uint64_t key;
    int rounds;
    std::vector<Plan> candidates;
    std::vector<std::vector<double>> seconds;  // per candidate, this rank's counted trials
    int done = 0;   // trials run: candidate done % count of round done / count is next
    int kept = -1;  // the chosen candidate, once decided
  };
  SizeClass* find(uint64_t key);

  std::vector<SizeClass> classes_;
};

}  // namespace zccl
