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
    c->seconds.assign(c->candidates.size(), 0.0);
    if (c->candidates.size() < 2) c->kept = 0;
  }
  if (c->candidates.empty()) return Choice{};
  if (c->kept >= 0) return Choice{c->candidates[static_cast<size_t>(c->kept)], -1};
  const int trial = c->done / kRounds;
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
  if (c->done % kRounds > 0)
    c->seconds[static_cast<size_t>(c->done / kRounds)] += seconds / (kRounds - 1);
  if (++c->done < count * kRounds) return Status::kSuccess;
  ZCCL_CHECK(agree(&c->seconds));
  c->kept =
      static_cast<int>(std::min_element(c->seconds.begin(), c->seconds.end()) - c->seconds.begin());
  const Plan& kept = c->candidates[static_cast<size_t>(c->kept)];
  if (logEnabled(LogLevel::kInfo)) {
    std::string times;
    for (int i = 0; i < count; ++i) {
      const Plan& p = c->candidates[static_cast<size_t>(i)];
      char one[96];
      std::snprintf(one, sizeof(one), "%s%s/%s %.3f ms", i > 0 ? ", " : "",
                    algorithmName(p.algorithm), wireFormatName(p.wire),
                    c->seconds[static_cast<size_t>(i)] * 1e3);
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
