// The state of Beyond-ZeRO++ calls of a torch group, found by place in the step
// (call_states.h).
#include "call_states.h"

#include <c10/util/Exception.h>

namespace zccl_torch {

void CallStates::clear() {
  for (auto& [key, reference] : references_) zcclReferenceDestroy(reference);
  for (auto& [key, feedback] : feedbacks_) zcclFeedbackDestroy(feedback);
  references_.clear();
  feedbacks_.clear();
  gathers_ = 0;
  reductions_[0] = reductions_[1] = 0;
}

void CallStates::setPolicy(const CallStatePolicy& policy) {
  clear();
  policy_ = policy;
}

void CallStates::forAllGather(size_t count, zcclDataType_t type, zcclCollOptions* options) {
  reductions_[0] = reductions_[1] = 0;
  const size_t place = gathers_++;
  if (policy_.smoothing) options->smoothing = 1;
  if (!policy_.allGatherDifferences) return;
  if (policy_.twoBitDifferences) {
    options->quantScheme = zcclQuantAsymmetric;
    options->smoothing = 1;
  }
  const Key key{0, place, count, type};
  auto found = references_.find(key);
  if (found == references_.end()) {
    zcclReference_t reference = nullptr;
    TORCH_CHECK(
        zcclReferenceCreate(comm_, count, type, policy_.resyncEvery, &reference) == zcclSuccess,
        "zccl backend: keeping the reference of weight differences: ", zcclGetLastError(comm_));
    found = references_.emplace(key, reference).first;
  }
  options->reference = found->second;
}

void CallStates::forReduction(bool allReduce, size_t count, zcclDataType_t type,
                              zcclCollOptions* options) {
  // An all-reduce ends a forward pass only where all-reduces carry gradients (a loss logged
  // with one mid-forward must not move the gathers' places).
  if (!allReduce || policy_.allReduceFeedback) gathers_ = 0;
  const size_t place = reductions_[allReduce ? 1 : 0]++;
  if (policy_.smoothing) options->smoothing = 1;
  if (!(allReduce ? policy_.allReduceFeedback : policy_.reduceScatterFeedback)) return;
  const Key key{allReduce ? 2 : 1, place, count, type};
  auto found = feedbacks_.find(key);
  if (found == feedbacks_.end()) {
    zcclFeedback_t feedback = nullptr;
    zcclFeedbackOptions kept = ZCCL_FEEDBACK_OPTIONS_INITIALIZER;
    kept.residualType = policy_.residualType;
    TORCH_CHECK(zcclFeedbackCreateEx(comm_, count, type, &kept, &feedback) == zcclSuccess,
                "zccl backend: keeping the error feedback: ", zcclGetLastError(comm_));
    found = feedbacks_.emplace(key, feedback).first;
  }
  options->feedback = found->second;
}

size_t CallStates::bytes() const {
  size_t total = 0, bytes = 0;
  for (const auto& [key, reference] : references_) {
    if (zcclReferenceBytes(reference, &bytes) == zcclSuccess) total += bytes;
  }
  for (const auto& [key, feedback] : feedbacks_) {
    if (zcclFeedbackBytes(feedback, &bytes) == zcclSuccess) total += bytes;
  }
  return total;
}

}  // namespace zccl_torch
