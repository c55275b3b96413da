// Beyond ZeRO++ for a torch group: the references of all-gathers of weight differences and the
// residuals of error-feedback reductions (zccl.h's zcclReference_t, zcclFeedback_t), which
// zccl keeps per buffer from one call to the next. torch hands the backend fresh tensors at
// every call, so a call's state is found by its place in the training step: the k-th all-gather
// since the last reduction (a forward pass gathers its modules in the same order every step),
// the k-th reduce-scatter or all-reduce since the last all-gather (a backward pass reduces
// them in the same order), and the call's element count and type. Every rank makes the same
// calls in the same order, so that every rank picks the same state. A call whose place holds
// another tensor's state (a step that gathers in another order) still gets a right result, with
// the error of that other tensor's difference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

#include "zccl/zccl.h"

namespace zccl_torch {

struct CallStatePolicy {
  bool allGatherDifferences = false;  // allgather="int4-diff" / "int8-diff" / "int2-diff"
  // int2-diff: asymmetric codes, whose four levels fit differences better than the symmetric
  // three, and smoothed, whatever `smoothing` says of the other calls (what the ZeRO
  // optimizer's INT2 differences take too: docs/beyond-zeropp.md).
  bool twoBitDifferences = false;
  bool reduceScatterFeedback = false;         // reduce_scatter="int4-ef" / "int8-ef"
  bool allReduceFeedback = false;             // allreduce="int4-ef" / "int8-ef"
  bool smoothing = false;                     // Hadamard smoothing of every quantized call
  int resyncEvery = 0;                        // exact all-gathers of weights (0: the first only)
  zcclDataType_t residualType = zcclFloat32;  // -ef's residuals: float32, bfloat16 or int8
};

class CallStates {
 public:
  explicit CallStates(zcclComm_t comm) : comm_(comm) {}
  ~CallStates() { clear(); }
  CallStates(const CallStates&) = delete;
  CallStates& operator=(const CallStates&) = delete;

  // A new policy starts afresh: the state kept so far is dropped (a new run, a new model).
  void setPolicy(const CallStatePolicy& policy);
  const CallStatePolicy& policy() const { return policy_; }

  // Adds the state of the next host all-gather (of `count` elements per rank) or reduction (of
  // `count` input elements) of a float `type` to `options`, where the policy asks for it.
  void forAllGather(size_t count, zcclDataType_t type, zcclCollOptions* options);
  void forReduction(bool allReduce, size_t count, zcclDataType_t type, zcclCollOptions* options);
  // The bytes all the state holds.
  size_t bytes() const;

 private:
  void clear();

  using Key = std::tuple<int, size_t, size_t, int>;  // kind, place in the step, count, type

  zcclComm_t comm_;
  CallStatePolicy policy_;
  std::map<Key, zcclReference_t> references_;
  std::map<Key, zcclFeedback_t> feedbacks_;
  size_t gathers_ = 0;             // all-gathers since the last reduction
  size_t reductions_[2] = {0, 0};  // reduce-scatters, all-reduces since the last all-gather
};

}  // namespace zccl_torch
