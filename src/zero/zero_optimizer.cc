// The ZeRO optimizer: per-module partitions of the working weights, gradients, float32 master
// weights and Adam moments, and the collectives of each stage (see zccl/zero.hpp), in host
// memory or a GPU's (StateMemory).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "zero/working_math.h"

namespace zccl::zero {
namespace {

#define ZERO_CHECK(call)                                  \
  do {                                                    \
    const zcclResult_t zero_result_ = (call);             \
    if (zero_result_ != zcclSuccess) return zero_result_; \
  } while (0)

// Counts the bytes of model state held now and at most.
class MemoryTracker {
 public:
  void add(size_t bytes) {
    current_ += bytes;
    peak_ = std::max(peak_, current_);
  }
  void remove(size_t bytes) { current_ -= bytes; }
  size_t current() const { return current_; }
  size_t peak() const { return peak_; }

 private:
  size_t current_ = 0;
  size_t peak_ = 0;
};

// Where the model state lives, and what it is allocated from.
struct StateSpace {
  StateMemory* memory;
  MemoryTracker tracker;
};

// A buffer of model state (zero-filled) whose allocation the tracker sees.
class StateBuffer {
 public:
  explicit StateBuffer(StateSpace* space) : space_(space) {}
  ~StateBuffer() { release(); }
  StateBuffer(const StateBuffer&) = delete;
  StateBuffer& operator=(const StateBuffer&) = delete;

  zcclResult_t allocate(size_t bytes) {
    release();
    void* data = nullptr;
    const zcclResult_t result = space_->memory->allocate(bytes, &data);
    if (result != zcclSuccess) return result;
    data_ = static_cast<unsigned char*>(data);
    bytes_ = bytes;
    space_->tracker.add(bytes);
    return zcclSuccess;
  }
  void release() {
    if (data_ == nullptr) return;
    space_->memory->release(data_);
    data_ = nullptr;
    space_->tracker.remove(bytes_);
    bytes_ = 0;
  }
  template <typename T = unsigned char>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  StateSpace* space_;
  unsigned char* data_ = nullptr;
  size_t bytes_ = 0;
};

// A transient buffer of the step (a module's gathered weights, its full gradients): the
// tracker counts it while it is held, as a StateBuffer, but its memory stays for the next
// module and step (a caching allocator's reuse), so that a step does not map, fault in and
// zero fresh pages for every module: a tenth of the CPU time of a ZeRO++ step on the host.
// Not zero-filled: every use overwrites what it reads.
class ScratchBuffer {
 public:
  explicit ScratchBuffer(StateSpace* space)
      : space_(space), untracked_{space->memory, {}}, storage_(&untracked_) {}
  ~ScratchBuffer() { release(); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  zcclResult_t hold(size_t bytes) {
    release();
    if (bytes > storage_.bytes()) {
      storage_.release();  // before the larger one: the peak of the memory stays one buffer
      const zcclResult_t result = storage_.allocate(bytes);
      if (result != zcclSuccess) return result;
    }
    held_ = bytes;
    space_->tracker.add(bytes);
    return zcclSuccess;
  }
  void release() {
    space_->tracker.remove(held_);
    held_ = 0;
  }
  unsigned char* as() const { return storage_.as(); }

 private:
  StateSpace* space_;
  StateSpace untracked_;
  StateBuffer storage_;
  size_t held_ = 0;
};

// hpZ's secondary copy of every module in one segment that the ranks of a node share
// (zcclSharedMemoryCreate): each rank stores its part of a module's gathered weights in its
// forward, and every rank's backward reads the module whole, in place. The tracker counts this
// rank's part, as it counts a secondary copy of its own.
class NodeSharedBuffer {
 public:
  explicit NodeSharedBuffer(StateSpace* space) : space_(space) {}
  ~NodeSharedBuffer() {
    if (shared_ == nullptr) return;
    zcclSharedMemoryDestroy(shared_);
    space_->tracker.remove(counted_);
  }
  NodeSharedBuffer(const NodeSharedBuffer&) = delete;
  NodeSharedBuffer& operator=(const NodeSharedBuffer&) = delete;

  zcclResult_t create(zcclComm_t nodeComm, size_t bytes, size_t counted) {
    void* base = nullptr;
    const zcclResult_t result = zcclSharedMemoryCreate(nodeComm, bytes, &base, &shared_);
    if (result != zcclSuccess) return result;
    data_ = static_cast<unsigned char*>(base);
    counted_ = counted;
    space_->tracker.add(counted);
    return zcclSuccess;
  }
  bool held() const { return shared_ != nullptr; }
  unsigned char* as() const { return data_; }

 private:
  StateSpace* space_;
  zcclSharedMemory_t shared_ = nullptr;
  unsigned char* data_ = nullptr;
  size_t counted_ = 0;
};

// The state a Beyond-ZeRO++ collective keeps for one module (a reference of weight
// differences, a gradient's error feedback), counted by the tracker while it lives.
template <typename Handle, zcclResult_t (*Bytes)(Handle, size_t*), zcclResult_t (*Destroy)(Handle)>
class CallState {
 public:
  explicit CallState(StateSpace* space) : space_(space) {}
  ~CallState() {
    if (handle_ == nullptr) return;
    Destroy(handle_);
    space_->tracker.remove(bytes_);
  }
  CallState(const CallState&) = delete;
  CallState& operator=(const CallState&) = delete;

  // Takes a created handle.
  zcclResult_t adopt(Handle handle) {
    handle_ = handle;
    const zcclResult_t result = Bytes(handle, &bytes_);
    if (result == zcclSuccess) space_->tracker.add(bytes_);
    return result;
  }
  Handle get() const { return handle_; }
  size_t bytes() const { return bytes_; }

 private:
  StateSpace* space_;
  Handle handle_ = nullptr;
  size_t bytes_ = 0;
};
using WeightReference = CallState<zcclReference_t, zcclReferenceBytes, zcclReferenceDestroy>;
using GradientFeedback = CallState<zcclFeedback_t, zcclFeedbackBytes, zcclFeedbackDestroy>;

zcclDataType_t dataType(Precision p) {
  return p == Precision::kFloat32    ? zcclFloat32
         : p == Precision::kBfloat16 ? zcclBfloat16
                                     : zcclFloat16;
}

// What a module's Beyond-ZeRO++ collectives keep between calls.
struct CompressionState {
  explicit CompressionState(StateSpace* t) : reference(t), feedback(t) {}
  size_t bytes() const { return reference.bytes() + feedback.bytes(); }
  WeightReference reference;  // weightDifferences: the weights gathered last
  GradientFeedback feedback;  // errorFeedback: what quantizing my full gradients lost
};

zcclDataType_t residualType(FeedbackPrecision p) {
  return p == FeedbackPrecision::kFloat32    ? zcclFloat32
         : p == FeedbackPrecision::kBfloat16 ? zcclBfloat16
                                             : zcclInt8;
}

// One module's partitioned state. `padded` rounds the parameter count up to a multiple of the
// world size so that every rank owns an equal shard (the last shards hold the padding).
struct ModuleState {
  explicit ModuleState(StateSpace* t)
      : working(t), master(t), moment1(t), moment2(t), grads(t), secondary(t), compression(t) {}
  size_t count = 0;
  size_t padded = 0;
  size_t shard = 0;
  StateBuffer working;        // full (stages 0-2) or my shard (stage 3), working precision
  StateBuffer master;         // float32: full (stage 0) or my shard
  StateBuffer moment1;        // as master
  StateBuffer moment2;        // as master
  StateBuffer grads;          // full (stages 0-1) or my shard (2-3), working precision
  StateBuffer secondary;      // hpZ: my node-local shard of the gathered weights (not shared)
  size_t nodeCopyOffset = 0;  // hpZ, shared: where the module starts in the node's copy
  CompressionState compression;
};

}  // namespace

class ZeroOptimizer::Impl {
 public:
  Impl(zcclComm_t comm, Model* model, const ZeroOptions& options)
      : comm_(comm),
        model_(model),
        options_(options),
        space_{options.memory != nullptr ? options.memory : &hostStateMemory(), {}},
        memory_(*space_.memory) {}

  zcclResult_t init();
  zcclResult_t step(const Batch& batch, StepStats* stats);
  zcclResult_t gatherMaster(std::vector<float>* params);
  size_t numParams() const { return model_->numParams(); }
  const MemoryTracker& tracker() const { return space_.tracker; }
  size_t compressionBytes() const {
    size_t bytes = 0;
    for (const auto& m : modules_) bytes += m->compression.bytes();
    return bytes;
  }
  const std::string& error() const { return error_; }

 private:
  zcclResult_t fail(zcclResult_t result, const std::string& message) {
    error_ = message;
    return result;
  }
  // A failure of the state's memory, with its reason.
  zcclResult_t memoryFailure(zcclResult_t result, const char* what) {
    if (result == zcclSuccess) return result;
    return fail(result,
                std::string(what) + " (" + memory_.name() + " memory): " + memory_.lastError());
  }
  bool partitionedOptimizer() const { return options_.stage >= 1; }
  bool partitionedGradients() const { return options_.stage >= 2; }
  bool partitionedWeights() const { return options_.stage >= 3; }
  size_t es() const { return elementSize(options_.precision); }
  zcclDataType_t type() const { return dataType(options_.precision); }
  size_t optimizerElements(const ModuleState& m) const {
    return partitionedOptimizer() ? m.shard : m.padded;
  }
  size_t myOffset(const ModuleState& m) const {
    return partitionedOptimizer() ? static_cast<size_t>(rank_) * m.shard : 0;
  }

  zcclResult_t checkCompression();
  // The state the options' Beyond-ZeRO++ collectives keep for module `m`, into `*state`.
  zcclResult_t createCompressionState(const ModuleState& m, CompressionState* state);
  zcclResult_t allocate(StateBuffer* buffer, size_t bytes, const char* what) {
    return memoryFailure(buffer->allocate(bytes), what);
  }
  zcclResult_t hold(ScratchBuffer* buffer, size_t bytes, const char* what) {
    return memoryFailure(buffer->hold(bytes), what);
  }
  // `count` working-precision values of `state` on the host: `state` itself on host memory,
  // else their copy in staging_ (in the working precision, which halves the bytes of bfloat16
  // and float16).
  zcclResult_t onHost(const unsigned char* state, size_t count, const unsigned char** values);
  // The same as float32.
  zcclResult_t readFloats(const unsigned char* state, size_t count, std::vector<float>* out);
  // `count` float32 values from the host into `state` in the working precision.
  zcclResult_t writeWorking(const float* values, size_t count, unsigned char* state);

  // The modules gathered ahead of the one computing (stage 3), and the gradient collectives
  // left running behind it (stages 2-3 and, all-reduces, 0-1).
  size_t depth() const { return static_cast<size_t>(std::max(options_.prefetchDepth, 0)); }
  // Scratch of module `index` while its collective is in flight, one of `count` slots.
  ScratchBuffer& slot(std::vector<std::unique_ptr<ScratchBuffer>>* slots, size_t count,
                      size_t index);
  // Gathered weights: a gather starts once the module depth() + 1 ahead of it has computed.
  ScratchBuffer& gatheredSlot(size_t index) { return slot(&gathered_, depth() + 1, index); }
  // Full gradients: a module's backward writes them while the gradient collectives of the
  // depth() + 1 modules after it may still run.
  ScratchBuffer& gradientSlot(size_t index) { return slot(&fullGrads_, depth() + 2, index); }
  // Waits for `*request` (none: nothing to wait for), counting the wait.
  zcclResult_t finish(zcclRequest_t* request);
  // A collective that completes through `*request`; `options` may be null.
  zcclCollOptions withRequest(const zcclCollOptions* options, zcclRequest_t* request) const;
  // qgZ's format (with smoothing where asked) on a gradient reduce-scatter's options.
  void gradientWire(zcclCollOptions* options) const {
    if (!options_.quantizedGradients) return;
    options->wireFormat = zcclWireInt4;
    if (options_.smoothing) options->smoothing = 1;  // else the communicator's default
  }

  // Starts the all-gather of module `index`'s weights for its forward (backward) pass into its
  // slot of gathered_.
  zcclResult_t startForwardGather(size_t index, zcclRequest_t* request) {
    return startForwardGather(index, modules_[index]->compression.reference.get(), request);
  }
  // The same, its differences taken against `reference`.
  zcclResult_t startForwardGather(size_t index, zcclReference_t reference, zcclRequest_t* request);
  zcclResult_t startBackwardGather(size_t index, zcclRequest_t* request);
  zcclResult_t startGather(ModuleState& m, zcclComm_t comm, const void* shard,
                           const zcclCollOptions* options, ScratchBuffer& into,
                           zcclRequest_t* request);
  // Module `index`'s weights on the host, in the working precision, once `*request` finished:
  // for its forward (keeping hpZ's secondary copy) or its backward pass.
  zcclResult_t moduleWeights(size_t index, zcclRequest_t* request, bool forward,
                             const unsigned char** values);
  void releaseWeights(size_t index) {
    if (partitionedWeights()) gatheredSlot(index).release();
  }
  // Where module `index`'s backward writes its full gradient: its slot of fullGrads_ (stages
  // 2-3) or its gradients (0-1), through host staging on a GPU's memory; the padding zeroed.
  zcclResult_t gradientTarget(size_t index, unsigned char** values);
  // Starts module `index`'s gradient collective over what its backward wrote: all-reduced
  // (stages 0-1) or reduce-scattered to their owners (2-3).
  zcclResult_t startGradients(size_t index, zcclRequest_t* request);
  zcclResult_t finishGradients(size_t index);
  // A span a module read or wrote past its parameters, as the step's error.
  zcclResult_t checkSpans(size_t index, const Weights& weights, const Gradients* grads);
  zcclResult_t forwardPass(const Batch& batch, Tensor* logits);
  zcclResult_t backwardPass(const Batch& batch, Tensor* dlogits);
  zcclResult_t update();

 public:
  zcclResult_t timeCommunication(double* seconds);

 private:
  zcclResult_t anyOverflow(bool* overflow);
  // The constants of the update that the step's gradients make.
  AdamStep adamStep() const;
  zcclResult_t adamUpdate(ModuleState& m, const AdamStep& step);
  // Stage 3 gathers every module in the next forward pass, which applies each module's update
  // just before it starts that module's gather: the update's work is done while earlier
  // modules' weights cross the link, which would otherwise stand idle between the steps. The
  // modules whose gathers that pass starts at once are updated at the end of the step.
  bool deferredUpdate(size_t index) const { return partitionedWeights() && index > depth(); }
  // Module `index`'s deferred update, if it has one; all of them, before the weights are read
  // other than by the forward pass.
  zcclResult_t applyDeferredUpdate(size_t index);
  zcclResult_t applyDeferredUpdates();
  // Stages 1-2: every rank's new shard of the working weights, to every rank (in place).
  zcclResult_t gatherNewWeights(ModuleState& m);
  zcclResult_t traffic(uint64_t* inter, uint64_t* intra);
  // hpZ: whether the node's ranks are to share their secondary copies, and whether they do.
  bool wantsSharedNodeCopy() const {
    return options_.hierarchicalPartition && options_.sharedNodeCopy && memory_.host();
  }
  bool nodeCopyShared() const { return nodeCopy_.held(); }
  // hpZ: the modules' secondary copies in one segment of the node's (their offsets into it)
  // where it is wanted and the node's ranks can map one, else in each rank's own memory.
  zcclResult_t keepNodeCopies();
  // Where my part of module `m`'s secondary copy lives.
  unsigned char* secondaryPart(ModuleState& m) {
    if (!nodeCopyShared()) return m.secondary.as();
    return nodeCopy_.as() + m.nodeCopyOffset +
           static_cast<size_t>(nodeRank_) * m.padded / nodeSize_ * es();
  }
  // Shared copies: every rank of the node has stored its parts (in the forward) before any
  // reads a module whole.
  zcclResult_t nodeCopyStored();

  zcclComm_t comm_;
  zcclComm_t nodeComm_ = nullptr;
  Model* model_;
  ZeroOptions options_;
  int rank_ = 0, ranks_ = 1, nodeRank_ = 0, nodeSize_ = 1;
  StateSpace space_;  // outlives every buffer below
  StateMemory& memory_;
  std::vector<std::unique_ptr<ModuleState>> modules_;
  NodeSharedBuffer nodeCopy_{&space_};  // hpZ's secondary copies, where the node shares them
  // Stage 3: the full weights of the modules being gathered or computed.
  std::vector<std::unique_ptr<ScratchBuffer>> gathered_;
  // Stages 2-3: the full gradients of the modules being reduced.
  std::vector<std::unique_ptr<ScratchBuffer>> fullGrads_;
  // Gradient collectives still running, by module.
  std::vector<zcclRequest_t> reductions_;
  double waitSeconds_ = 0;                      // of the step so far
  std::vector<unsigned char> staging_;          // working-precision values on their way to the host
  std::vector<unsigned char> gradientStaging_;  // and a module's gradient on its way back
  float lossScale_ = 1;
  int goodSteps_ = 0;
  int64_t updates_ = 0;
  AdamStep deferredStep_;       // the last update's constants
  std::vector<bool> deferred_;  // by module: whether that update is still to apply
  std::string error_;
};

zcclResult_t ZeroOptimizer::Impl::readFloats(const unsigned char* state, size_t count,
                                             std::vector<float>* out) {
  const unsigned char* values = nullptr;
  ZERO_CHECK(onHost(state, count, &values));
  out->resize(count);
  fromWorking(options_.precision, values, count, out->data());
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::onHost(const unsigned char* state, size_t count,
                                         const unsigned char** values) {
  *values = state;
  if (memory_.host()) return zcclSuccess;
  staging_.resize(count * es());
  *values = staging_.data();
  return memoryFailure(memory_.download(staging_.data(), state, count * es()),
                       "copying model state to the host");
}

zcclResult_t ZeroOptimizer::Impl::writeWorking(const float* values, size_t count,
                                               unsigned char* state) {
  if (memory_.host()) {
    toWorking(options_.precision, values, count, state);
    return zcclSuccess;
  }
  staging_.resize(count * es());
  toWorking(options_.precision, values, count, staging_.data());
  return memoryFailure(memory_.upload(state, staging_.data(), count * es()),
                       "copying model state from the host");
}

zcclResult_t ZeroOptimizer::Impl::init() {
  if (options_.stage < 0 || options_.stage > 3) {
    return fail(zcclInvalidArgument, "stage=" + std::to_string(options_.stage) + ": expected 0..3");
  }
  if ((options_.quantizedWeights || options_.hierarchicalPartition) && options_.stage != 3) {
    return fail(zcclInvalidArgument, "qwZ and hpZ partition weights: they need stage=3");
  }
  if (options_.quantizedGradients && options_.stage < 2) {
    return fail(zcclInvalidArgument, "qgZ reduce-scatters gradients: it needs stage>=2");
  }
  ZERO_CHECK(checkCompression());
  ZERO_CHECK(zcclCommCount(comm_, &ranks_));
  ZERO_CHECK(zcclCommUserRank(comm_, &rank_));
  if (options_.hierarchicalPartition) {
    ZERO_CHECK(zcclCommSplitNode(comm_, &nodeComm_));
    ZERO_CHECK(zcclCommCount(nodeComm_, &nodeSize_));
    ZERO_CHECK(zcclCommUserRank(nodeComm_, &nodeRank_));
    // Every node must hold the same number of ranks for node shards to tile the padding.
    int32_t smallest = nodeSize_, largest = nodeSize_;
    ZERO_CHECK(zcclAllReduce(&smallest, &smallest, 1, zcclInt32, zcclMin, comm_, nullptr));
    ZERO_CHECK(zcclAllReduce(&largest, &largest, 1, zcclInt32, zcclMax, comm_, nullptr));
    if (smallest != largest) {
      return fail(zcclInvalidUsage, "hpZ needs nodes with the same number of ranks");
    }
  }
  lossScale_ = options_.precision == Precision::kFloat16 ? options_.initialLossScale : 1.0f;
  std::vector<float> init;
  uint64_t seed = options_.seed;
  for (const auto& module : model_->modules) {
    auto m = std::make_unique<ModuleState>(&space_);
    m->count = module->numParams();
    m->shard = (m->count + ranks_ - 1) / ranks_;
    m->padded = m->shard * static_cast<size_t>(ranks_);
    init.assign(m->padded, 0.0f);
    module->initParams(init.data(), seed++);
    const size_t optimizer = optimizerElements(*m);
    ZERO_CHECK(allocate(&m->master, optimizer * sizeof(float), "master weights"));
    ZERO_CHECK(allocate(&m->moment1, optimizer * sizeof(float), "Adam's first moments"));
    ZERO_CHECK(allocate(&m->moment2, optimizer * sizeof(float), "Adam's second moments"));
    ZERO_CHECK(memoryFailure(
        memory_.upload(m->master.as(), init.data() + myOffset(*m), optimizer * sizeof(float)),
        "copying the initial weights"));
    const size_t workingElements = partitionedWeights() ? m->shard : m->padded;
    ZERO_CHECK(allocate(&m->working, workingElements * es(), "working weights"));
    ZERO_CHECK(writeWorking(init.data() + (partitionedWeights() ? myOffset(*m) : 0),
                            workingElements, m->working.as()));
    ZERO_CHECK(
        allocate(&m->grads, (partitionedGradients() ? m->shard : m->padded) * es(), "gradients"));
    ZERO_CHECK(createCompressionState(*m, &m->compression));
    modules_.push_back(std::move(m));
  }
  if (options_.hierarchicalPartition) ZERO_CHECK(keepNodeCopies());
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::keepNodeCopies() {
  size_t bytes = 0;
  for (auto& m : modules_) {
    m->nodeCopyOffset = bytes;
    bytes += m->padded * es();
  }
  if (wantsSharedNodeCopy() && bytes > 0) {
    const zcclResult_t shared = nodeCopy_.create(nodeComm_, bytes, bytes / nodeSize_);
    if (shared == zcclSuccess) return zcclSuccess;
    // Ranks that cannot map one segment (separate hosts taken for one node) keep copies of
    // their own, which the backward gathers inside the node.
    if (shared != zcclSystemError) return fail(shared, zcclGetLastError(nodeComm_));
  }
  for (auto& m : modules_) {
    ZERO_CHECK(allocate(&m->secondary, m->padded / nodeSize_ * es(), "hpZ's secondary copy"));
  }
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::nodeCopyStored() {
  if (!nodeCopyShared()) return zcclSuccess;
  int32_t token = 0;
  return zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, nodeComm_, nullptr);
}

zcclResult_t ZeroOptimizer::Impl::checkCompression() {
  if (options_.weightDifferences && options_.stage != 3) {
    return fail(zcclInvalidArgument, "weightDifferences gathers weights: it needs stage=3");
  }
  const int bits = options_.weightDifferenceBits;
  if (bits != 8 && bits != 4 && bits != 2) {
    return fail(zcclInvalidArgument,
                "weightDifferenceBits=" + std::to_string(bits) + ": expected 8, 4 or 2");
  }
  if (options_.resyncEvery < 0) {
    return fail(zcclInvalidArgument,
                "resyncEvery=" + std::to_string(options_.resyncEvery) + ": expected >= 0");
  }
  if (options_.errorFeedback && !options_.quantizedGradients) {
    return fail(zcclInvalidArgument,
                "errorFeedback compensates qgZ's quantization: it needs quantizedGradients");
  }
  if (options_.errorFeedback && options_.precision == Precision::kFloat16) {
    return fail(zcclInvalidArgument,
                "errorFeedback with float16: a loss-scale overflow would poison the residuals; "
                "use bfloat16 or float32");
  }
  if ((options_.weightDifferences || options_.errorFeedback) && !memory_.host()) {
    return fail(zcclInvalidUsage, std::string("weightDifferences and errorFeedback keep their "
                                              "state on host memory, not ") +
                                      memory_.name());
  }
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::createCompressionState(const ModuleState& m,
                                                         CompressionState* state) {
  if (options_.weightDifferences) {
    zcclReference_t reference = nullptr;
    ZERO_CHECK(zcclReferenceCreate(comm_, m.shard, type(), options_.resyncEvery, &reference));
    ZERO_CHECK(state->reference.adopt(reference));
  }
  if (options_.errorFeedback) {
    zcclFeedback_t feedback = nullptr;
    zcclFeedbackOptions kept = ZCCL_FEEDBACK_OPTIONS_INITIALIZER;
    kept.residualType = residualType(options_.feedbackPrecision);
    ZERO_CHECK(zcclFeedbackCreateEx(comm_, m.padded, type(), &kept, &feedback));
    ZERO_CHECK(state->feedback.adopt(feedback));
  }
  return zcclSuccess;
}

ScratchBuffer& ZeroOptimizer::Impl::slot(std::vector<std::unique_ptr<ScratchBuffer>>* slots,
                                         size_t count, size_t index) {
  if (slots->size() < count) slots->resize(count);
  std::unique_ptr<ScratchBuffer>& buffer = (*slots)[index % slots->size()];
  if (buffer == nullptr) buffer = std::make_unique<ScratchBuffer>(&space_);
  return *buffer;
}

zcclResult_t ZeroOptimizer::Impl::finish(zcclRequest_t* request) {
  if (*request == nullptr) return zcclSuccess;
  const auto start = std::chrono::steady_clock::now();
  const zcclResult_t result = zcclWait(*request);
  waitSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  *request = nullptr;
  if (result != zcclSuccess) return fail(result, zcclGetLastError(nullptr));
  return zcclSuccess;
}

zcclCollOptions ZeroOptimizer::Impl::withRequest(const zcclCollOptions* options,
                                                 zcclRequest_t* request) const {
  zcclCollOptions with = ZCCL_COLL_OPTIONS_INITIALIZER;
  if (options != nullptr) with = *options;
  with.request = request;
  return with;
}

zcclResult_t ZeroOptimizer::Impl::startGather(ModuleState& m, zcclComm_t comm, const void* shard,
                                              const zcclCollOptions* options, ScratchBuffer& into,
                                              zcclRequest_t* request) {
  int parts = 1;
  ZERO_CHECK(zcclCommCount(comm, &parts));
  ZERO_CHECK(hold(&into, m.padded * es(), "gathered weights"));
  const zcclCollOptions queued = withRequest(options, request);
  return zcclAllGatherEx(shard, into.as(), m.padded / parts, type(), comm, memory_.stream(),
                         &queued);
}

zcclResult_t ZeroOptimizer::Impl::startForwardGather(size_t index, zcclReference_t reference,
                                                     zcclRequest_t* request) {
  ModuleState& m = *modules_[index];
  zcclCollOptions qwz = ZCCL_COLL_OPTIONS_INITIALIZER;
  if (options_.quantizedWeights) qwz.wireFormat = zcclWireInt8;
  if (options_.weightDifferences) {
    const int bits = options_.weightDifferenceBits;
    qwz.wireFormat = bits == 2 ? zcclWireInt2 : bits == 4 ? zcclWireInt4 : zcclWireInt8;
    // INT2's symmetric codes are three levels, which round most of a group to zero: the
    // asymmetric four fit the differences better (docs/beyond-zeropp.md).
    if (bits == 2) qwz.quantScheme = zcclQuantAsymmetric;
    qwz.reference = reference;
    if (options_.smoothing || options_.smoothWeightDifferences) qwz.smoothing = 1;
  }
  return startGather(m, comm_, m.working.as(), &qwz, gatheredSlot(index), request);
}

zcclResult_t ZeroOptimizer::Impl::startBackwardGather(size_t index, zcclRequest_t* request) {
  if (nodeCopyShared()) return zcclSuccess;  // read in place (moduleWeights)
  ModuleState& m = *modules_[index];
  ScratchBuffer& into = gatheredSlot(index);
  if (options_.hierarchicalPartition) {
    return startGather(m, nodeComm_, m.secondary.as(), nullptr, into, request);
  }
  return startGather(m, comm_, m.working.as(), nullptr, into, request);
}

zcclResult_t ZeroOptimizer::Impl::moduleWeights(size_t index, zcclRequest_t* request, bool forward,
                                                const unsigned char** values) {
  ModuleState& m = *modules_[index];
  const unsigned char* state = m.working.as();
  if (partitionedWeights() && !forward && nodeCopyShared()) {
    state = nodeCopy_.as() + m.nodeCopyOffset;
  } else if (partitionedWeights()) {
    ZERO_CHECK(finish(request));
    state = gatheredSlot(index).as();
    if (forward && options_.hierarchicalPartition) {
      // Keep my node-local shard of what was gathered, for the backward. In a shared copy,
      // this overwrites what the node's other ranks read in the last backward: they are done,
      // as the gather just finished needed their part, which they send only in this step.
      const size_t part = m.padded / nodeSize_;
      ZERO_CHECK(memoryFailure(
          memory_.copy(secondaryPart(m), state + nodeRank_ * part * es(), part * es()),
          "keeping hpZ's secondary copy"));
    }
  }
  return onHost(state, m.count, values);
}

zcclResult_t ZeroOptimizer::Impl::gradientTarget(size_t index, unsigned char** values) {
  ModuleState& m = *modules_[index];
  unsigned char* state = m.grads.as();
  if (partitionedGradients()) {
    ScratchBuffer& full = gradientSlot(index);
    ZERO_CHECK(hold(&full, m.padded * es(), "full gradients"));
    state = full.as();
  }
  if (!memory_.host()) {
    gradientStaging_.resize(m.padded * es());
    state = gradientStaging_.data();
  }
  std::memset(state + m.count * es(), 0, (m.padded - m.count) * es());
  *values = state;
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::startGradients(size_t index, zcclRequest_t* request) {
  ModuleState& m = *modules_[index];
  unsigned char* full = partitionedGradients() ? gradientSlot(index).as() : m.grads.as();
  if (!memory_.host()) {
    ZERO_CHECK(memoryFailure(memory_.upload(full, gradientStaging_.data(), m.padded * es()),
                             "copying a module's gradient from the host"));
  }
  zcclCollOptions queued = withRequest(nullptr, request);
  if (!partitionedGradients()) {
    return zcclAllReduceEx(full, full, m.padded, type(), zcclAvg, comm_, memory_.stream(), &queued);
  }
  gradientWire(&queued);
  queued.feedback = m.compression.feedback.get();
  return zcclReduceScatterEx(full, m.grads.as(), m.shard, type(), zcclAvg, comm_, memory_.stream(),
                             &queued);
}

zcclResult_t ZeroOptimizer::Impl::checkSpans(size_t index, const Weights& weights,
                                             const Gradients* grads) {
  const std::string& error =
      grads != nullptr && !grads->error().empty() ? grads->error() : weights.error();
  if (error.empty()) return zcclSuccess;
  return fail(zcclInvalidUsage, "module " + std::to_string(index) + " (" +
                                    model_->modules[index]->name() + ") " + error);
}

zcclResult_t ZeroOptimizer::Impl::anyOverflow(bool* overflow) {
  float local = 0;
  std::vector<float> values;
  for (const auto& m : modules_) {
    ZERO_CHECK(readFloats(m->grads.as(), m->grads.bytes() / es(), &values));
    for (float v : values) local = std::isfinite(v) ? local : 1.0f;
  }
  ZERO_CHECK(zcclAllReduce(&local, &local, 1, zcclFloat32, zcclMax, comm_, nullptr));
  *overflow = local != 0;
  return zcclSuccess;
}

AdamStep ZeroOptimizer::Impl::adamStep() const {
  AdamStep step;
  step.beta1 = options_.beta1;
  step.beta2 = options_.beta2;
  const auto t = static_cast<double>(updates_);
  step.stepSize = static_cast<float>(options_.learningRate / (1 - std::pow(step.beta1, t)));
  step.rootCorrection2 = static_cast<float>(1 / std::sqrt(1 - std::pow(step.beta2, t)));
  step.coupledDecay = options_.optimizer == Optimizer::kAdamW ? 0 : options_.weightDecay;
  step.decoupledDecay =
      options_.optimizer == Optimizer::kAdamW ? options_.learningRate * options_.weightDecay : 0;
  step.lossScale = lossScale_;
  step.epsilon = options_.epsilon;
  return step;
}

zcclResult_t ZeroOptimizer::Impl::adamUpdate(ModuleState& m, const AdamStep& step) {
  const size_t n = optimizerElements(m);
  // Stage 1 keeps full gradients: my shard of them starts at my offset.
  const size_t gradOffset = !partitionedGradients() ? myOffset(m) : 0;
  const size_t first = myOffset(m);
  const size_t live = first < m.count ? std::min(n, m.count - first) : 0;  // padding stays zero
  // The new weights go, in the working precision, to my shard of them (stage 3) or to its
  // place among all of them (stages 0-2).
  unsigned char* working = m.working.as() + (partitionedWeights() ? 0 : first * es());
  return memoryFailure(
      memory_.adamAndPublish(step, options_.precision, m.grads.as() + gradOffset * es(), live,
                             m.master.as<float>(), m.moment1.as<float>(), m.moment2.as<float>(),
                             working),
      "the Adam update");
}

zcclResult_t ZeroOptimizer::Impl::applyDeferredUpdate(size_t index) {
  if (index >= deferred_.size() || !deferred_[index]) return zcclSuccess;
  deferred_[index] = false;
  return adamUpdate(*modules_[index], deferredStep_);
}

zcclResult_t ZeroOptimizer::Impl::applyDeferredUpdates() {
  for (size_t i = 0; i < modules_.size(); ++i) ZERO_CHECK(applyDeferredUpdate(i));
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::gatherNewWeights(ModuleState& m) {
  if (!partitionedOptimizer() || partitionedWeights()) return zcclSuccess;
  unsigned char* mine = m.working.as() + myOffset(m) * es();
  return zcclAllGather(mine, m.working.as(), m.shard, type(), comm_, memory_.stream());
}

zcclResult_t ZeroOptimizer::Impl::traffic(uint64_t* inter, uint64_t* intra) {
  zcclStats stats;
  ZERO_CHECK(zcclCommGetStats(comm_, &stats));
  *inter = stats.bytesSent[zcclLinkInterNode];
  *intra = stats.bytesSent[zcclLinkIntraNode];
  if (nodeComm_ != nullptr) {
    ZERO_CHECK(zcclCommGetStats(nodeComm_, &stats));
    *inter += stats.bytesSent[zcclLinkInterNode];
    *intra += stats.bytesSent[zcclLinkIntraNode];
  }
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::finishGradients(size_t index) {
  ZERO_CHECK(finish(&reductions_[index]));
  if (partitionedGradients()) gradientSlot(index).release();
  return zcclSuccess;
}

// Each module's weights gathered depth() modules ahead of its compute.
zcclResult_t ZeroOptimizer::Impl::forwardPass(const Batch& batch, Tensor* logits) {
  const size_t n = modules_.size();
  std::vector<zcclRequest_t> gathers(n, nullptr);
  size_t issued = 0;
  Tensor x, y;
  for (size_t i = 0; i < n; ++i) {
    for (; partitionedWeights() && issued < n && issued <= i + depth(); ++issued) {
      ZERO_CHECK(applyDeferredUpdate(issued));
      ZERO_CHECK(startForwardGather(issued, &gathers[issued]));
    }
    const unsigned char* values = nullptr;
    ZERO_CHECK(moduleWeights(i, &gathers[i], true, &values));
    const Weights weights(values, modules_[i]->count, options_.precision);
    model_->modules[i]->forward(weights, batch, x, &y);
    releaseWeights(i);
    ZERO_CHECK(checkSpans(i, weights, nullptr));
    std::swap(x, y);
  }
  *logits = std::move(x);
  return zcclSuccess;
}

// From the last module to the first: weights gathered depth() modules ahead, each module's
// gradient collective left running beside the backward of the depth() + 1 modules before it
// (none with depth 0).
zcclResult_t ZeroOptimizer::Impl::backwardPass(const Batch& batch, Tensor* dlogits) {
  const size_t n = modules_.size();
  std::vector<zcclRequest_t> gathers(n, nullptr);
  reductions_.assign(n, nullptr);
  size_t next = n;  // the next module whose backward gather starts, plus one
  Tensor dy = std::move(*dlogits), dx;
  ZERO_CHECK(nodeCopyStored());
  for (size_t i = n; i-- > 0;) {
    for (; partitionedWeights() && next > 0 && next - 1 + depth() >= i; --next) {
      ZERO_CHECK(startBackwardGather(next - 1, &gathers[next - 1]));
    }
    const unsigned char* values = nullptr;
    ZERO_CHECK(moduleWeights(i, &gathers[i], false, &values));
    // The full-gradient slot this module writes held module i + depth() + 2's.
    if (i + depth() + 2 < n) ZERO_CHECK(finishGradients(i + depth() + 2));
    unsigned char* target = nullptr;
    ZERO_CHECK(gradientTarget(i, &target));
    const Weights weights(values, modules_[i]->count, options_.precision);
    Gradients grads(target, modules_[i]->count, options_.precision);
    model_->modules[i]->backward(weights, batch, dy, &dx, &grads);
    releaseWeights(i);
    ZERO_CHECK(checkSpans(i, weights, &grads));
    std::swap(dy, dx);
    ZERO_CHECK(startGradients(i, &reductions_[i]));
    if (depth() == 0) ZERO_CHECK(finishGradients(i));
  }
  for (size_t i = 0; i < n; ++i) ZERO_CHECK(finishGradients(i));
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::update() {
  bool overflow = false;
  if (options_.precision == Precision::kFloat16) ZERO_CHECK(anyOverflow(&overflow));
  if (overflow) {
    lossScale_ = std::max(lossScale_ / 2, 1.0f);
    goodSteps_ = 0;
    return zcclSuccess;
  }
  ++updates_;
  deferredStep_ = adamStep();
  deferred_.assign(modules_.size(), false);
  for (size_t i = 0; i < modules_.size(); ++i) {
    deferred_[i] = deferredUpdate(i);
    if (deferred_[i]) continue;
    ZERO_CHECK(adamUpdate(*modules_[i], deferredStep_));
    ZERO_CHECK(gatherNewWeights(*modules_[i]));
  }
  if (options_.precision == Precision::kFloat16 && ++goodSteps_ >= options_.lossScaleWindow) {
    lossScale_ *= 2;
    goodSteps_ = 0;
  }
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::step(const Batch& batch, StepStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  waitSeconds_ = 0;
  ZERO_CHECK(zcclCommResetStats(comm_));
  if (nodeComm_ != nullptr) ZERO_CHECK(zcclCommResetStats(nodeComm_));
  Tensor logits, dlogits;
  ZERO_CHECK(forwardPass(batch, &logits));
  stats->loss = crossEntropy(logits, batch.targets, lossScale_, &dlogits);
  ZERO_CHECK(backwardPass(batch, &dlogits));
  stats->lossScale = lossScale_;
  const int64_t updatesBefore = updates_;
  ZERO_CHECK(update());
  stats->skipped = updates_ == updatesBefore;
  // The statistics wait for the collectives queued on a GPU's stream.
  ZERO_CHECK(traffic(&stats->interNodeBytes, &stats->intraNodeBytes));
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats->waitSeconds = waitSeconds_;
  stats->computeSeconds = stats->seconds - waitSeconds_;
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::timeCommunication(double* seconds) {
  const size_t n = modules_.size();
  std::vector<zcclRequest_t> requests(n, nullptr);
  const auto wait = [&](size_t i) {
    ZERO_CHECK(finish(&requests[i]));
    gatheredSlot(i).release();
    return zcclSuccess;
  };
  // The Beyond-ZeRO++ collectives run as in a step, on state of their own, which leaves the
  // modules' for training. A reference's first call gathers exact weights: made and primed
  // before the clock starts, so the timed gathers send differences, as a step's do between
  // resyncs. Outside the model state.
  StateSpace outside{&memory_, {}};
  std::vector<std::unique_ptr<CompressionState>> compression(n);
  for (size_t i = 0; i < n; ++i) {
    compression[i] = std::make_unique<CompressionState>(&outside);
    ZERO_CHECK(createCompressionState(*modules_[i], compression[i].get()));
    if (options_.weightDifferences) {
      ZERO_CHECK(startForwardGather(i, compression[i]->reference.get(), &requests[i]));
      ZERO_CHECK(wait(i));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  if (partitionedWeights()) {
    for (size_t i = 0; i < n; ++i) {
      if (i > depth()) ZERO_CHECK(wait(i - depth() - 1));
      ZERO_CHECK(startForwardGather(i, compression[i]->reference.get(), &requests[i]));
    }
    for (size_t i = n > depth() ? n - depth() - 1 : 0; i < n; ++i) ZERO_CHECK(wait(i));
    ZERO_CHECK(nodeCopyStored());
    for (size_t i = n; i-- > 0;) {
      if (i + depth() + 1 < n) ZERO_CHECK(wait(i + depth() + 1));
      ZERO_CHECK(startBackwardGather(i, &requests[i]));
    }
    for (size_t i = 0; i < n && i <= depth(); ++i) ZERO_CHECK(wait(i));
  }
  // The gradient collectives, of what the full-gradient scratch holds (their values do not
  // matter here) into a shard nobody reads.
  StateBuffer discard(&outside);
  for (size_t i = n; i-- > 0;) {
    ModuleState& m = *modules_[i];
    ScratchBuffer& full = gradientSlot(0);
    ZERO_CHECK(hold(&full, m.padded * es(), "full gradients"));
    ZERO_CHECK(allocate(&discard, (partitionedGradients() ? m.shard : m.padded) * es(),
                        "a discarded gradient shard"));
    zcclCollOptions qgz = withRequest(nullptr, &requests[i]);
    if (partitionedGradients()) {
      gradientWire(&qgz);
      qgz.feedback = compression[i]->feedback.get();
      ZERO_CHECK(zcclReduceScatterEx(full.as(), discard.as(), m.shard, type(), zcclAvg, comm_,
                                     memory_.stream(), &qgz));
    } else {
      ZERO_CHECK(zcclAllReduceEx(full.as(), discard.as(), m.padded, type(), zcclAvg, comm_,
                                 memory_.stream(), &qgz));
    }
    ZERO_CHECK(finish(&requests[i]));
    full.release();
  }
  *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::gatherMaster(std::vector<float>* params) {
  ZERO_CHECK(applyDeferredUpdates());
  params->clear();
  std::vector<float> full;
  StateSpace outside{&memory_, {}};  // not model state: the peak counts none of it
  StateBuffer gathered(&outside);
  for (auto& m : modules_) {
    full.resize(m->padded);
    const float* master = m->master.as<float>();
    if (partitionedOptimizer()) {
      ZERO_CHECK(allocate(&gathered, m->padded * sizeof(float), "the gathered master weights"));
      ZERO_CHECK(
          zcclAllGather(master, gathered.as(), m->shard, zcclFloat32, comm_, memory_.stream()));
      master = gathered.as<float>();
    }
    ZERO_CHECK(memoryFailure(memory_.download(full.data(), master, m->padded * sizeof(float)),
                             "copying the master weights to the host"));
    params->insert(params->end(), full.begin(), full.begin() + static_cast<ptrdiff_t>(m->count));
  }
  return zcclSuccess;
}

ZeroOptimizer::ZeroOptimizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ZeroOptimizer::~ZeroOptimizer() = default;

zcclResult_t ZeroOptimizer::create(zcclComm_t comm, Model* model, const ZeroOptions& options,
                                   std::unique_ptr<ZeroOptimizer>* out) {
  if (comm == nullptr || model == nullptr || out == nullptr) return zcclInvalidArgument;
  auto impl = std::make_unique<Impl>(comm, model, options);
  const zcclResult_t result = impl->init();
  if (result != zcclSuccess) {
    std::fprintf(stderr, "zccl zero: %s\n", impl->error().c_str());
    return result;
  }
  out->reset(new ZeroOptimizer(std::move(impl)));
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::step(const Batch& batch, StepStats* stats) {
  return impl_->step(batch, stats);
}
zcclResult_t ZeroOptimizer::gatherMasterParameters(std::vector<float>* params) {
  return impl_->gatherMaster(params);
}
zcclResult_t ZeroOptimizer::timeCommunication(double* seconds) {
  return impl_->timeCommunication(seconds);
}
size_t ZeroOptimizer::numParams() const { return impl_->numParams(); }
size_t ZeroOptimizer::modelStateBytes() const { return impl_->tracker().current(); }
size_t ZeroOptimizer::peakModelStateBytes() const { return impl_->tracker().peak(); }
size_t ZeroOptimizer::compressionStateBytes() const { return impl_->compressionBytes(); }
const char* ZeroOptimizer::lastError() const { return impl_->error().c_str(); }

}  // namespace zccl::zero
