// The ZeRO optimizer: per-module partitions of the working weights, gradients, float32 master
// weights and Adam moments, and the collectives of each stage (see zccl/zero.hpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "common/half.h"
#include "zccl/zero.hpp"

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

// A buffer of model state whose allocation the tracker sees.
class StateBuffer {
 public:
  explicit StateBuffer(MemoryTracker* tracker) : tracker_(tracker) {}
  ~StateBuffer() { release(); }
  StateBuffer(const StateBuffer&) = delete;
  StateBuffer& operator=(const StateBuffer&) = delete;

  void allocate(size_t bytes) {
    release();
    data_.reset(new unsigned char[bytes > 0 ? bytes : 1]());
    bytes_ = bytes;
    tracker_->add(bytes);
  }
  void release() {
    if (!data_) return;
    data_.reset();
    tracker_->remove(bytes_);
    bytes_ = 0;
  }
  template <typename T = unsigned char>
  T* as() const {
    return reinterpret_cast<T*>(data_.get());
  }
  size_t bytes() const { return bytes_; }

 private:
  MemoryTracker* tracker_;
  std::unique_ptr<unsigned char[]> data_;
  size_t bytes_ = 0;
};

size_t elementSize(Precision p) { return p == Precision::kFloat32 ? 4 : 2; }
zcclDataType_t dataType(Precision p) {
  return p == Precision::kFloat32    ? zcclFloat32
         : p == Precision::kBfloat16 ? zcclBfloat16
                                     : zcclFloat16;
}

// The conversions and the Adam update below run over every parameter of every step: the
// precision is chosen once per call, not per element, so that the loops vectorize.
void toWorking(Precision p, const float* in, size_t n, void* out) {
  auto* bits = static_cast<uint16_t*>(out);
  switch (p) {
    case Precision::kFloat32:
      std::memcpy(out, in, n * sizeof(float));
      return;
    case Precision::kBfloat16:
      for (size_t i = 0; i < n; ++i) bits[i] = toBfloat16(in[i]).bits;
      return;
    case Precision::kFloat16:
      for (size_t i = 0; i < n; ++i) bits[i] = toFloat16(in[i]).bits;
      return;
  }
}

void fromWorking(Precision p, const void* in, size_t n, float* out) {
  const auto* bits = static_cast<const uint16_t*>(in);
  switch (p) {
    case Precision::kFloat32:
      std::memcpy(out, in, n * sizeof(float));
      return;
    case Precision::kBfloat16:
      for (size_t i = 0; i < n; ++i) out[i] = toFloat(bfloat16_t{bits[i]});
      return;
    case Precision::kFloat16:
      for (size_t i = 0; i < n; ++i) out[i] = toFloat(float16_t{bits[i]});
      return;
  }
}

// One module's partitioned state. `padded` rounds the parameter count up to a multiple of the
// world size so that every rank owns an equal shard (the last shards hold the padding).
struct ModuleState {
  explicit ModuleState(MemoryTracker* t)
      : working(t), master(t), moment1(t), moment2(t), grads(t), secondary(t) {}
  size_t count = 0;
  size_t padded = 0;
  size_t shard = 0;
  StateBuffer working;    // full (stages 0-2) or my shard (stage 3), working precision
  StateBuffer master;     // float32: full (stage 0) or my shard
  StateBuffer moment1;    // as master
  StateBuffer moment2;    // as master
  StateBuffer grads;      // full (stages 0-1) or my shard (2-3), working precision
  StateBuffer secondary;  // hpZ: my node-local shard of the gathered weights
};

}  // namespace

class ZeroOptimizer::Impl {
 public:
  Impl(zcclComm_t comm, Model* model, const ZeroOptions& options)
      : comm_(comm), model_(model), options_(options) {}

  zcclResult_t init();
  zcclResult_t step(const Batch& batch, StepStats* stats);
  zcclResult_t gatherMaster(std::vector<float>* params);
  size_t numParams() const { return model_->numParams(); }
  const MemoryTracker& memory() const { return memory_; }
  const std::string& error() const { return error_; }

 private:
  zcclResult_t fail(zcclResult_t result, const std::string& message) {
    error_ = message;
    return result;
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

  zcclResult_t weightsForForward(size_t index, std::vector<float>* weights);
  zcclResult_t weightsForBackward(size_t index, std::vector<float>* weights);
  zcclResult_t gatherWeights(ModuleState& m, zcclComm_t comm, const void* shard,
                             const zcclCollOptions* options, std::vector<float>* weights);
  zcclResult_t reduceGradients(ModuleState& m, const std::vector<float>& grads);
  zcclResult_t anyOverflow(bool* overflow);
  void adamUpdate(ModuleState& m);
  zcclResult_t publishWeights(ModuleState& m);
  zcclResult_t traffic(uint64_t* inter, uint64_t* intra);

  zcclComm_t comm_;
  zcclComm_t nodeComm_ = nullptr;
  Model* model_;
  ZeroOptions options_;
  int rank_ = 0, ranks_ = 1, nodeRank_ = 0, nodeSize_ = 1;
  MemoryTracker memory_;
  std::vector<std::unique_ptr<ModuleState>> modules_;
  StateBuffer gathered_{&memory_};   // a stage-3 module's full weights while in use
  StateBuffer fullGrads_{&memory_};  // a stage-2/3 module's full gradients until reduced
  float lossScale_ = 1;
  int goodSteps_ = 0;
  int64_t updates_ = 0;
  std::string error_;
};

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
    auto m = std::make_unique<ModuleState>(&memory_);
    m->count = module->numParams();
    m->shard = (m->count + ranks_ - 1) / ranks_;
    m->padded = m->shard * static_cast<size_t>(ranks_);
    init.assign(m->padded, 0.0f);
    module->initParams(init.data(), seed++);
    const size_t optimizer = optimizerElements(*m);
    m->master.allocate(optimizer * sizeof(float));
    m->moment1.allocate(optimizer * sizeof(float));
    m->moment2.allocate(optimizer * sizeof(float));
    std::memcpy(m->master.as<float>(), init.data() + myOffset(*m), optimizer * sizeof(float));
    const size_t workingElements = partitionedWeights() ? m->shard : m->padded;
    m->working.allocate(workingElements * es());
    toWorking(options_.precision, init.data() + (partitionedWeights() ? myOffset(*m) : 0),
              workingElements, m->working.as());
    m->grads.allocate((partitionedGradients() ? m->shard : m->padded) * es());
    if (options_.hierarchicalPartition) m->secondary.allocate(m->padded / nodeSize_ * es());
    modules_.push_back(std::move(m));
  }
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::gatherWeights(ModuleState& m, zcclComm_t comm, const void* shard,
                                                const zcclCollOptions* options,
                                                std::vector<float>* weights) {
  int parts = 1;
  ZERO_CHECK(zcclCommCount(comm, &parts));
  gathered_.allocate(m.padded * es());
  ZERO_CHECK(
      zcclAllGatherEx(shard, gathered_.as(), m.padded / parts, type(), comm, nullptr, options));
  weights->resize(m.padded);
  fromWorking(options_.precision, gathered_.as(), m.padded, weights->data());
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::weightsForForward(size_t index, std::vector<float>* weights) {
  ModuleState& m = *modules_[index];
  if (!partitionedWeights()) {
    weights->resize(m.padded);
    fromWorking(options_.precision, m.working.as(), m.padded, weights->data());
    return zcclSuccess;
  }
  zcclCollOptions qwz = ZCCL_COLL_OPTIONS_INITIALIZER;
  if (options_.quantizedWeights) qwz.wireFormat = zcclWireInt8;
  ZERO_CHECK(gatherWeights(m, comm_, m.working.as(), &qwz, weights));
  if (options_.hierarchicalPartition) {
    // Keep my node-local shard of what was gathered, for the backward gather.
    const size_t part = m.padded / nodeSize_;
    std::memcpy(m.secondary.as(), gathered_.as() + nodeRank_ * part * es(), part * es());
  }
  gathered_.release();
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::weightsForBackward(size_t index, std::vector<float>* weights) {
  ModuleState& m = *modules_[index];
  if (!partitionedWeights()) return weightsForForward(index, weights);
  if (options_.hierarchicalPartition) {
    ZERO_CHECK(gatherWeights(m, nodeComm_, m.secondary.as(), nullptr, weights));
  } else {
    ZERO_CHECK(gatherWeights(m, comm_, m.working.as(), nullptr, weights));
  }
  gathered_.release();
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::reduceGradients(ModuleState& m, const std::vector<float>& grads) {
  if (!partitionedGradients()) {
    toWorking(options_.precision, grads.data(), m.padded, m.grads.as());
    return zcclAllReduce(m.grads.as(), m.grads.as(), m.padded, type(), zcclAvg, comm_, nullptr);
  }
  fullGrads_.allocate(m.padded * es());
  toWorking(options_.precision, grads.data(), m.padded, fullGrads_.as());
  zcclCollOptions qgz = ZCCL_COLL_OPTIONS_INITIALIZER;
  if (options_.quantizedGradients) qgz.wireFormat = zcclWireInt4;
  const zcclResult_t result = zcclReduceScatterEx(fullGrads_.as(), m.grads.as(), m.shard, type(),
                                                  zcclAvg, comm_, nullptr, &qgz);
  fullGrads_.release();
  return result;
}

zcclResult_t ZeroOptimizer::Impl::anyOverflow(bool* overflow) {
  float local = 0;
  std::vector<float> values;
  for (const auto& m : modules_) {
    const size_t n = m->grads.bytes() / es();
    values.resize(n);
    fromWorking(options_.precision, m->grads.as(), n, values.data());
    for (float v : values) local = std::isfinite(v) ? local : 1.0f;
  }
  ZERO_CHECK(zcclAllReduce(&local, &local, 1, zcclFloat32, zcclMax, comm_, nullptr));
  *overflow = local != 0;
  return zcclSuccess;
}

void ZeroOptimizer::Impl::adamUpdate(ModuleState& m) {
  const size_t n = optimizerElements(m);
  // Stage 1 keeps full gradients: my shard of them starts at my offset.
  const size_t gradOffset = !partitionedGradients() ? myOffset(m) : 0;
  std::vector<float> g(n);
  fromWorking(options_.precision, m.grads.as() + gradOffset * es(), n, g.data());
  // float32 arithmetic with the bias corrections folded into constants, as PyTorch's Adam.
  const float b1 = options_.beta1, b2 = options_.beta2;
  const auto t = static_cast<double>(updates_);
  const auto stepSize = static_cast<float>(options_.learningRate / (1 - std::pow(b1, t)));
  const auto rootCorrection2 = static_cast<float>(1 / std::sqrt(1 - std::pow(b2, t)));
  const float coupledDecay = options_.optimizer == Optimizer::kAdamW ? 0 : options_.weightDecay;
  const float decoupledDecay =
      options_.optimizer == Optimizer::kAdamW ? options_.learningRate * options_.weightDecay : 0;
  const float lossScale = lossScale_;
  const float epsilon = options_.epsilon;
  float* p = m.master.as<float>();
  float* m1 = m.moment1.as<float>();
  float* m2 = m.moment2.as<float>();
  const size_t first = myOffset(m);
  const size_t live = first < m.count ? std::min(n, m.count - first) : 0;  // padding stays zero
  for (size_t i = 0; i < live; ++i) {
    const float grad = g[i] / lossScale + coupledDecay * p[i];
    m1[i] = b1 * m1[i] + (1 - b1) * grad;
    m2[i] = b2 * m2[i] + (1 - b2) * grad * grad;
    p[i] -=
        stepSize * m1[i] / (std::sqrt(m2[i]) * rootCorrection2 + epsilon) + decoupledDecay * p[i];
  }
}

zcclResult_t ZeroOptimizer::Impl::publishWeights(ModuleState& m) {
  const size_t n = optimizerElements(m);
  if (!partitionedOptimizer() || partitionedWeights()) {
    toWorking(options_.precision, m.master.as<float>(), n, m.working.as());
    return zcclSuccess;
  }
  // Stages 1-2: my shard of the new weights, then everyone's (in place).
  unsigned char* mine = m.working.as() + myOffset(m) * es();
  toWorking(options_.precision, m.master.as<float>(), n, mine);
  return zcclAllGather(mine, m.working.as(), m.shard, type(), comm_, nullptr);
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

zcclResult_t ZeroOptimizer::Impl::step(const Batch& batch, StepStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  ZERO_CHECK(zcclCommResetStats(comm_));
  if (nodeComm_ != nullptr) ZERO_CHECK(zcclCommResetStats(nodeComm_));
  std::vector<float> weights;
  Tensor x, y;
  for (size_t i = 0; i < modules_.size(); ++i) {
    ZERO_CHECK(weightsForForward(i, &weights));
    model_->modules[i]->forward(weights.data(), batch, x, &y);
    std::swap(x, y);
  }
  Tensor dy, dx;
  stats->loss = crossEntropy(x, batch.targets, lossScale_, &dy);
  std::vector<float> grads;
  for (size_t i = modules_.size(); i-- > 0;) {
    ModuleState& m = *modules_[i];
    ZERO_CHECK(weightsForBackward(i, &weights));
    grads.assign(m.padded, 0.0f);
    model_->modules[i]->backward(weights.data(), batch, dy, &dx, grads.data());
    std::swap(dy, dx);
    ZERO_CHECK(reduceGradients(m, grads));
  }
  bool overflow = false;
  if (options_.precision == Precision::kFloat16) ZERO_CHECK(anyOverflow(&overflow));
  stats->skipped = overflow;
  stats->lossScale = lossScale_;
  if (overflow) {
    lossScale_ = std::max(lossScale_ / 2, 1.0f);
    goodSteps_ = 0;
  } else {
    ++updates_;
    for (auto& m : modules_) {
      adamUpdate(*m);
      ZERO_CHECK(publishWeights(*m));
    }
    if (options_.precision == Precision::kFloat16 && ++goodSteps_ >= options_.lossScaleWindow) {
      lossScale_ *= 2;
      goodSteps_ = 0;
    }
  }
  ZERO_CHECK(traffic(&stats->interNodeBytes, &stats->intraNodeBytes));
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return zcclSuccess;
}

zcclResult_t ZeroOptimizer::Impl::gatherMaster(std::vector<float>* params) {
  params->clear();
  std::vector<float> full;
  for (auto& m : modules_) {
    if (partitionedOptimizer()) {
      full.resize(m->padded);
      ZERO_CHECK(
          zcclAllGather(m->master.as<float>(), full.data(), m->shard, zcclFloat32, comm_, nullptr));
    } else {
      full.assign(m->master.as<float>(), m->master.as<float>() + m->padded);
    }
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
size_t ZeroOptimizer::numParams() const { return impl_->numParams(); }
size_t ZeroOptimizer::modelStateBytes() const { return impl_->memory().current(); }
size_t ZeroOptimizer::peakModelStateBytes() const { return impl_->memory().peak(); }
const char* ZeroOptimizer::lastError() const { return impl_->error().c_str(); }

}  // namespace zccl::zero
