// torch.distributed's c10d::Backend over zccl's public C API: every operation maps to a zccl
// collective (or to zccl's grouped sends and receives where zccl has no collective of that
// shape). A collective is queued on the communicator's own thread and its work returned at
// once; the backend's completer marks it done when its calls have finished (work.h), so
// async_op=True overlaps it with what the caller computes. Sends and receives complete
// before they return.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <vector>

#include "call_states.h"
#include "store.h"
#include "work.h"
#include "zccl/zccl.h"

namespace zccl_torch {

struct BackendOptions {
  int rank = 0;
  int size = 1;
  std::string groupName;
  std::chrono::milliseconds timeout{0};
  // What the group sends on the wire, lossless unless set (zccl_torch.set_policy or
  // ZCCL_TORCH_QUANT_*): the communicator's wire policy.
  zcclWirePolicy policy = ZCCL_WIRE_POLICY_INITIALIZER;
  // Weight differences, error feedback and smoothing (int4-diff, int4-ef; call_states.h).
  CallStatePolicy states;
};

class ZcclBackend : public c10d::Backend {
 public:
  // Collective over the group's ranks: the rendezvous goes through the group's c10d store.
  ZcclBackend(const c10::intrusive_ptr<c10d::Store>& store, const BackendOptions& options);
  ~ZcclBackend() override;

  const std::string getBackendName() const override { return "zccl"; }
  zcclComm_t comm() const { return comm_; }
  void setPolicy(const zcclWirePolicy& policy, const CallStatePolicy& states);
  zcclWirePolicy policy() const;
  // The bytes of the references and residuals the group keeps.
  size_t callStateBytes() const { return states_ == nullptr ? 0 : states_->bytes(); }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  // recv(src=None): CPU tensors, as gloo's; the work's sourceRank() names the sender.
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // batch_isend_irecv and torch's coalescing manager: what is issued between these runs at
  // endCoalescing, the sends and receives as one zccl group (so rings cannot deadlock), then
  // the collectives in order.
  bool supportsCoalescing() const override { return true; }
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // torch's split_group: a child over `ranks` (this group's ranks) through the child's store,
  // with this group's wire policy; nullptr on a rank outside it.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<Options> getBackendOptions() override { return options_; }
  // Like gloo's: rank 0 waits for every rank's arrival, noted in the group's store, for the
  // timeout, and names the ranks that did not arrive (the first, or all with waitAllRanks);
  // every other rank that arrived gets gloo's words for it, with rank 0's error.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  // The operations this group has started, alike on every rank that made the same calls (a
  // rank whose number differs has fallen out of step).
  uint64_t getSequenceNumberForGroup() override { return sequence_.load(); }
  void abort() override;
  void shutdown() override;

 private:
  // Starts an operation's zccl calls, its queued ones' requests in `launched`.
  using Launch = std::function<void(Launched* launched)>;
  // Starts `launch` now, or at endCoalescing; the returned work completes when its calls have.
  c10::intrusive_ptr<c10d::Work> run(c10d::OpType type, const char* operation,
                                     std::vector<at::Tensor> outputs, bool pointToPoint,
                                     Launch launch);
  Launched start(const Launch& launch, ZcclWork& work);
  // A collective's checks and start (`body`): where this rank's own checks reject its
  // arguments, its peers are told (zcclCommRejectCollective) and their calls fail at once
  // instead of waiting for it until the timeout.
  template <typename Body>
  c10::intrusive_ptr<c10d::Work> collective(const Body& body);
  c10::intrusive_ptr<c10d::Work> joined(c10d::OpType type, std::vector<at::Tensor> outputs,
                                        std::vector<c10::intrusive_ptr<c10d::Work>> works);
  void startAllReduce(Launched* l, const at::Tensor& tensor, const c10d::ReduceOp& reduceOp,
                      const char* operation);
  void startAllGather(Launched* l, const at::Tensor& output, const at::Tensor& input);
  void checkAllGather(const at::Tensor& output, const at::Tensor& input, const char* operation);
  void exchange(const std::vector<at::Tensor>& sends, const std::vector<at::Tensor>& receives,
                const char* operation);
  c10::intrusive_ptr<c10d::Work> unevenReduceScatter(const at::Tensor& output,
                                                     const std::vector<at::Tensor>& inputs,
                                                     const c10d::ReduceOp& op);

  zcclComm_t comm_ = nullptr;
  std::string groupName_;
  struct Deferred;
  std::vector<Deferred>* coalesced_ = nullptr;
  std::unique_ptr<CallStates> states_;
  std::unique_ptr<Completer> completer_;
  std::atomic<uint64_t> sequence_{0};
  c10::intrusive_ptr<Options> options_;    // the group's name and timeout, for split_group
  c10::intrusive_ptr<c10d::Store> store_;  // the group's, for monitoredBarrier
  uint64_t monitoredBarriers_ = 0;
};

// The live backends by group name, for zccl_torch.stats(group) and set_policy(group).
ZcclBackend* backendNamed(const std::string& groupName);
// The communicators of every live backend of this process, by group name.
std::vector<std::pair<std::string, zcclComm_t>> liveCommsByName();

}  // namespace zccl_torch
