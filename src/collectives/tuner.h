// Measured choice among the paths a call leaves open, where the caller allowed a lossy wire
// format (ZCCL_QUANT=allow-*): the cost model prices links and kernels one at a time, but
// how they share a node's cores and NIC (TCP's own CPU time, ranks that outnumber cores) only
// a run shows. So the first calls of each size class run every candidate the model keeps
// within reach of its best, by turns: in each round, every candidate runs a turn of
// kCallsPerTurn calls back to back, so that what drifts during the trials (another process on
// the core, the first calls' costs that one warm-up does not cover) reaches every candidate
// alike (blocks of all of one candidate's calls let the first block carry them, and chose the
// slower path). A turn's first call settles (it starts while the ranks still leave the other
// candidate's call at different times, and pays its skew) and is not counted: trials of one
// call each time how a path follows another, not the path itself. The first round warms up
// (scratch memory,
// connections, a rate limiter's idle credit, as a token bucket's, which back-to-back calls do
// not get); the median of the other calls counts. Small calls get more rounds, so that a
// candidate's counted calls last long enough for one slow call (a time slice lost to another
// process) not to decide; the median leaves such a call out. The ranks then agree on every
// candidate's time on its slowest rank, and the size class keeps the fastest where it is
// clearly faster than the model's choice (kModelMargin), else the model's choice. Every rank
// follows the same schedule, fixed by the size class alone (calls match across ranks), so all
// run the same path at every call. A communicator's host calls only: device calls follow the
// model with the device's measured rates.
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
  // Another candidate replaces the model's choice (the first) only when its trials ran faster
  // by more than this share: trials of paths closer than that rank them by noise
  // (docs/measurements.md, "The tuner").
  static constexpr double kModelMargin = 0.1;
  // Calls of one candidate in a row within a round; the first settles and is not counted.
  static constexpr int kCallsPerTurn = 3;
  // Rounds, a turn of each candidate in each (the first round does not count): enough that the
  // counted calls carry about kTrialBytes, within these bounds. Three counted turns at least, so
  // that the median leaves out one turn slowed by another process on the core (the median of
  // two is their mean).
  static constexpr int kMinRounds = 4;
  static constexpr int kMaxRounds = 5;
  static constexpr size_t kTrialBytes = size_t{16} << 20;
  static int roundsOf(uint64_t key);
  // Trial calls of a size class with `candidates` candidates in reach (two or more).
  static int trialCallsOf(uint64_t key, int candidates);

  // `key` identifies the size class (collective, type, op, log2 of the bytes).
  Choice choose(uint64_t key, const Candidates& candidates);
  // After a trial: its time. Once the size class's last trial is in, `agree` turns this
  // rank's time of every candidate into the slowest rank's (collective: every rank calls it
  // at the same call), and the choice is kept; `decided` is set then.
  using Agreement = std::function<Status(std::vector<double>* seconds)>;
  Status finishTrial(uint64_t key, double seconds, const Agreement& agree,
                     const Plan** decided = nullptr);

  static uint64_t keyOf(Collective collective, DataType type, RedOp op, size_t bytes);

 private:
  struct SizeClass {
    uint64_t key;
    std::vector<Plan> candidates;
    std::vector<std::vector<double>> seconds;  // per candidate, this rank's counted calls
    int done = 0;   // trial calls run; the schedule (candidateOf) tells what the next one is
    int kept = -1;  // the chosen candidate, once decided
  };
  SizeClass* find(uint64_t key);
  // The candidate a size class's `call`-th trial call runs, and whether its time counts.
  static int candidateOf(int call, int count);
  static bool counted(int call, int count);

  std::vector<SizeClass> classes_;
};

}  // namespace zccl
