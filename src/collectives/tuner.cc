// The tuner's trials and choices (tuner.h).
#include "collectives/tuner.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "collectives/registry.h"
#include "common/log.h"

namespace zccl {

uint64_t PlanTuner::keyOf(Collective collective, DataType type, RedOp op, size_t bytes) {
  uint64_t sizeClass = 0;
  while ((bytes >> sizeClass) > 1) ++sizeClass;  // log2 of the size
  return (static_cast<uint64_t>(collective) << 24) | (static_cast<uint64_t>(type) << 16) |
         (static_cast<uint64_t>(op) << 8) | sizeClass;
}

int PlanTuner::roundsOf(uint64_t key) {
  const uint64_t sizeClass = key & 0xff;  // the call's bytes are at least 2^sizeClass
  const uint64_t perCall = sizeClass < 63 ? uint64_t{1} << sizeClass : ~uint64_t{0};
  const uint64_t calls = (kTrialBytes + perCall - 1) / perCall;
  const uint64_t countedRounds = (calls + kCallsPerTurn - 2) / (kCallsPerTurn - 1);
  return static_cast<int>(std::clamp<uint64_t>(countedRounds + 1, kMinRounds, kMaxRounds));
}

int PlanTuner::trialCallsOf(uint64_t key, int candidates) {
  return roundsOf(key) * candidates * kCallsPerTurn;
}

int PlanTuner::candidateOf(int call, int count) { return call / kCallsPerTurn % count; }

bool PlanTuner::counted(int call, int count) {
  return call >= count * kCallsPerTurn && call % kCallsPerTurn != 0;
}

PlanTuner::SizeClass* PlanTuner::find(uint64_t key) {
  for (SizeClass& c : classes_) {
    if (c.key == key) return &c;
  }
  return nullptr;
}

PlanTuner::Choice PlanTuner::choose(uint64_t key, const Candidates& candidates) {
  SizeClass* c = find(key);
  if (c == nullptr) {
    classes_.push_back(SizeClass{key, {}, {}, 0, -1});
    c = &classes_.back();
    for (int i = 0; i < candidates.count; ++i) {
      if (candidates.entries[i].seconds > kReach * candidates.entries[0].seconds) break;
      c->candidates.push_back(candidates.entries[i].plan);
    }
    c->seconds.resize(c->candidates.size());
    if (c->candidates.size() < 2) c->kept = 0;
  }
  if (c->candidates.empty()) return Choice{};
  if (c->kept >= 0) return Choice{c->candidates[static_cast<size_t>(c->kept)], -1};
  const int trial = candidateOf(c->done, static_cast<int>(c->candidates.size()));
  return Choice{c->candidates[static_cast<size_t>(trial)], trial};
}

Status PlanTuner::finishTrial(uint64_t key, double seconds, const Agreement& agree,
                              const Plan** decided) {
  SizeClass* c = find(key);
  if (c == nullptr || c->kept >= 0) {
    return fail(Status::kInternalError, "a trial of size class %llx that is not under trial",
                static_cast<unsigned long long>(key));
  }
  const int count = static_cast<int>(c->candidates.size());
  if (counted(c->done, count)) {
    c->seconds[static_cast<size_t>(candidateOf(c->done, count))].push_back(seconds);
  }
  if (++c->done < trialCallsOf(key, count)) return Status::kSuccess;
  std::vector<double> medians;
  for (std::vector<double>& trials : c->seconds) {
    const auto middle = trials.begin() + static_cast<ptrdiff_t>(trials.size() / 2);
    std::nth_element(trials.begin(), middle, trials.end());
    // An even count: the mean of the two middle ones.
    const double upper = *middle;
    const double lower = trials.size() % 2 == 0 ? *std::max_element(trials.begin(), middle) : upper;
    medians.push_back((lower + upper) / 2);
  }
  ZCCL_CHECK(agree(&medians));
  const int fastest =
      static_cast<int>(std::min_element(medians.begin(), medians.end()) - medians.begin());
  c->kept = medians[static_cast<size_t>(fastest)] < (1 - kModelMargin) * medians[0] ? fastest : 0;
  const Plan& kept = c->candidates[static_cast<size_t>(c->kept)];
  if (logEnabled(LogLevel::kInfo)) {
    std::string times;
    for (int i = 0; i < count; ++i) {
      const Plan& p = c->candidates[static_cast<size_t>(i)];
      char one[96];
      std::snprintf(one, sizeof(one), "%s%s/%s %.3f ms", i > 0 ? ", " : "",
                    algorithmName(p.algorithm), wireFormatName(p.wire),
                    medians[static_cast<size_t>(i)] * 1e3);
      times += one;
    }
    ZCCL_LOG(kInfo, "tuned %s ~2^%llu bytes: %s, wire %s (slowest rank's times: %s)",
             collectiveName(kept.row->collective), static_cast<unsigned long long>(key & 0xff),
             algorithmName(kept.algorithm), wireFormatName(kept.wire), times.c_str());
  }
  if (decided != nullptr) *decided = &kept;
  return Status::kSuccess;
}

}  // namespace zccl
