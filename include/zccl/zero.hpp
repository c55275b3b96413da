// A thin ZeRO optimizer over zccl: stages 0-3, the ZeRO++ options (qwZ, hpZ, qgZ), Adam and
// AdamW with float32 master weights, and the module interface that models implement.
//
// Stage 0: plain data parallelism, gradients all-reduced, everything replicated.
// Stage 1: optimizer states (master weights, moments) partitioned; gradients all-reduced,
//          each rank updates its shard, the new working weights are all-gathered.
// Stage 2: + gradients reduce-scattered to their owner as each module's backward ends.
// Stage 3: + working weights partitioned; each module's weights are all-gathered before its
//          forward and again before its backward, and released after use.
// ZeRO++ (stage 3): qwZ all-gathers the forward weights as INT8; hpZ keeps, after the
// forward gather, a node-local secondary partition from which the backward all-gather runs on
// the node's ranks only; qgZ reduce-scatters gradients as INT4 in two hops.
//
// Every buffer of model state (working weights and gradients, master weights, moments, the
// gathered and secondary copies) is allocated through a tracker, so the peak bytes per rank
// reported are measured, not computed. The model state lives in host memory, or in a GPU's
// (ZeroOptions::memory, makeCudaStateMemory): every collective then takes zccl's device path
// on that memory's stream, and the conversions to the working precision and the Adam update
// run on the GPU. The modules compute on the CPU: each gets its gathered weights copied to
// the host (in the working precision) and hands its gradient back the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "zccl/zccl.h"

namespace zccl::zero {

// rows x cols float32 values, row-major.
struct Tensor {
  int rows = 0;
  int cols = 0;
  std::vector<float> data;

  void resize(int r, int c) {
    rows = r;
    cols = c;
    data.assign(static_cast<size_t>(r) * static_cast<size_t>(c), 0.0f);
  }
  float* row(int r) { return data.data() + static_cast<size_t>(r) * static_cast<size_t>(cols); }
  const float* row(int r) const {
    return data.data() + static_cast<size_t>(r) * static_cast<size_t>(cols);
  }
};

// A batch of sequences: `size` sequences of `length` positions, `fields` input ids per
// position, one target per position (-1: no loss there).
struct Batch {
  int size = 0;
  int length = 1;
  int fields = 1;
  std::vector<int> inputs;   // [size * length * fields]
  std::vector<int> targets;  // [size * length]
};

enum class Precision { kFloat32, kBfloat16, kFloat16 };  // working weights and gradients
// What error feedback keeps its residuals in (docs/beyond-zeropp.md): float32; bfloat16, half;
// int8 with a float32 scale per 32 (LoCo's compressed error), about 1.13 bytes a parameter.
enum class FeedbackPrecision { kFloat32, kBfloat16, kInt8 };

// A module's weights as the optimizer holds them: in the working precision, on the host. A
// module reads them a span at a time, widened to float32 where it uses them (in its caches), so
// that no float32 copy of a whole module is made: a separate widening pass over each gathered
// module cost more than a tenth of a ZeRO++ step (docs/zero-optimizer.md).
class Weights {
 public:
  Weights(const void* values, size_t count, Precision precision)
      : values_(values), count_(count), precision_(precision) {}
  explicit Weights(const std::vector<float>& values)
      : Weights(values.data(), values.size(), Precision::kFloat32) {}
  size_t size() const { return count_; }
  // [offset, offset + count) as float32: the values themselves where they are float32, else
  // their widened copy in *scratch. A span past size() reads as zeros and is reported
  // (error()), so that a module's mistake becomes the step's error rather than a wild read.
  const float* read(size_t offset, size_t count, std::vector<float>* scratch) const;
  // [offset, offset + count) as they are held, for a module's kernels that widen values as
  // they use them: float32 values, or the bits of bfloat16 or half ones (precision()). A span
  // past size() gives nullptr and is reported as for read().
  const void* span(size_t offset, size_t count) const;
  Precision precision() const { return precision_; }
  // The first span read past size(), or "".
  const std::string& error() const { return error_; }

 private:
  const void* values_;
  size_t count_;
  Precision precision_;
  mutable std::string error_;
};

// Where a module's backward writes its parameters' gradient, in the working precision: each
// element exactly once, as float32 values narrowed on the way (round to nearest even).
class Gradients {
 public:
  Gradients(void* values, size_t count, Precision precision)
      : values_(values), count_(count), precision_(precision) {}
  explicit Gradients(std::vector<float>* values)
      : Gradients(values->data(), values->size(), Precision::kFloat32) {}
  size_t size() const { return count_; }
  // A span past size() is not written, and is reported as for Weights::read.
  void write(size_t offset, size_t count, const float* values);
  // [offset, offset + count) as they are held, for a module's kernels that narrow values as
  // they store them (as toBfloat16 does); nullptr for a span past size(), as for write().
  void* span(size_t offset, size_t count);
  Precision precision() const { return precision_; }
  const std::string& error() const { return error_; }

 private:
  void* values_;
  size_t count_;
  Precision precision_;
  std::string error_;
};

// One unit of parameters that ZeRO gathers and releases as a whole (a layer or a block).
// forward keeps what backward needs; backward writes every element of the parameters'
// gradient once (it overwrites: the optimizer does not clear the buffer first).
class Module {
 public:
  virtual ~Module() = default;
  virtual const char* name() const = 0;
  virtual size_t numParams() const = 0;
  virtual void initParams(float* params, uint64_t seed) const = 0;
  // x is empty for a first module, which reads the batch's ids instead.
  virtual void forward(const Weights& params, const Batch& batch, const Tensor& x, Tensor* y) = 0;
  virtual void backward(const Weights& params, const Batch& batch, const Tensor& dy, Tensor* dx,
                        Gradients* dparams) = 0;
};

// Modules applied in order; the last produces logits, one row per position.
struct Model {
  std::vector<std::unique_ptr<Module>> modules;
  size_t numParams() const;
};

// Mean cross-entropy over positions with a target >= 0, and dLoss/dlogits times `scale`.
double crossEntropy(const Tensor& logits, const std::vector<int>& targets, float scale,
                    Tensor* dlogits);

enum class Optimizer { kAdam, kAdamW };

// One Adam (or AdamW) update's constants, the bias corrections folded in, as PyTorch's.
struct AdamStep {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float stepSize = 0;         // learning rate / (1 - beta1^t)
  float rootCorrection2 = 1;  // 1 / sqrt(1 - beta2^t)
  float coupledDecay = 0;     // Adam's weight decay, added to the gradient
  float decoupledDecay = 0;   // AdamW's, learning rate x weight decay
  float lossScale = 1;        // gradients are divided by it
  float epsilon = 1e-8f;
};

// Where the optimizer keeps the model state and runs its element-wise work over it. Every
// call is ordered after the work queued before it on stream() (the collectives on this
// memory); upload and download return once their copy is done.
class StateMemory {
 public:
  virtual ~StateMemory() = default;
  virtual const char* name() const = 0;
  // Host memory: its buffers may be read and written directly, and stream() is nullptr.
  virtual bool host() const = 0;
  virtual zcclStream_t stream() const = 0;
  // `bytes` zero bytes; zcclSystemError (lastError says why) when there is no room.
  virtual zcclResult_t allocate(size_t bytes, void** data) = 0;
  virtual void release(void* data) = 0;
  virtual zcclResult_t upload(void* to, const void* hostFrom, size_t bytes) = 0;
  virtual zcclResult_t download(void* hostTo, const void* from, size_t bytes) = 0;
  virtual zcclResult_t copy(void* to, const void* from, size_t bytes) = 0;
  // `count` float32 values to the working precision, rounded to nearest even.
  virtual zcclResult_t toWorking(Precision precision, const float* in, size_t count, void* out) = 0;
  // One update of `count` float32 parameters and moments from gradients in the working
  // precision: the same arithmetic, in the same order, on every memory.
  virtual zcclResult_t adam(const AdamStep& step, Precision precision, const void* grads,
                            size_t count, float* params, float* moment1, float* moment2) = 0;
  // adam, then the updated parameters in the working precision into `working` (toWorking).
  // A memory that can do both in one pass over the parameters overrides it (the host's does).
  virtual zcclResult_t adamAndPublish(const AdamStep& step, Precision precision, const void* grads,
                                      size_t count, float* params, float* moment1, float* moment2,
                                      void* working) {
    const zcclResult_t updated = adam(step, precision, grads, count, params, moment1, moment2);
    return updated != zcclSuccess ? updated : toWorking(precision, params, count, working);
  }
  virtual const char* lastError() const = 0;
};

// The host's memory (the default).
StateMemory& hostStateMemory();
// A GPU's memory, with a stream of its own: GPU `device` modulo the GPUs visible (so that the
// ranks of a node may pass their index on it), which becomes the calling thread's current
// device, or the current one for -1. nullptr and *error where no GPU is visible or zccl was
// built without CUDA.
std::unique_ptr<StateMemory> makeCudaStateMemory(int device, std::string* error);

struct ZeroOptions {
  int stage = 3;
  bool quantizedWeights = false;       // qwZ (stage 3)
  bool hierarchicalPartition = false;  // hpZ (stage 3)
  bool quantizedGradients = false;     // qgZ (stages 2 and 3)
  Precision precision = Precision::kBfloat16;
  Optimizer optimizer = Optimizer::kAdamW;
  float learningRate = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weightDecay = 0.0f;
  // float16 only: dynamic loss scaling, halved on overflow, doubled after `lossScaleWindow`
  // steps without one.
  float initialLossScale = 65536.0f;
  int lossScaleWindow = 100;
  uint64_t seed = 1;  // parameter initialization, the same on every rank
  // Overlap (stage 3; stages 2-3 for gradients): the all-gathers of the next `prefetchDepth`
  // modules' weights run while the current module computes (DeepSpeed's prefetch, FSDP2's
  // forward/backward prefetch), and each module's gradient collective runs beside the backward
  // of the `prefetchDepth` + 1 modules before it. Each module in flight holds its
  // gathered weights or full gradients: the peak state grows by that many modules' worth
  // (peakModelStateBytes counts it). 0: every collective completes before the compute that
  // follows. The same collectives run in the same order either way, so results are equal to
  // the bit.
  int prefetchDepth = 1;
  // hpZ on host memory: the node's ranks keep their secondary shards in one segment of memory
  // they share (zcclSharedMemoryCreate), which each rank's backward reads whole, in place,
  // where the node all-gather would copy it: the same weights and bytes held, no copies and
  // no intra-node traffic in the backward. false, a GPU's memory, or ranks that the node map
  // puts together but that cannot map one segment: the node all-gather.
  bool sharedNodeCopy = true;
  // Beyond ZeRO++. weightDifferences (stage 3): the forward all-gather sends each shard's INT4
  // difference from the weights gathered last time (SDP4Bit's qWD), which every rank keeps
  // alike: a copy of all the working weights per rank (counted), exact every resyncEvery-th
  // step (0: the first step only). errorFeedback (with qgZ): what quantizing a rank's gradients
  // lost is added to its next ones (LoCo, EF21): one residual per parameter per rank (counted).
  // smoothing: a random-sign Hadamard rotation of each quantization group of the gradients
  // and weight differences before INT4 (SDP4Bit). All three on host memory; error feedback
  // needs bfloat16 or float32 (a float16 overflow would poison the residuals).
  bool weightDifferences = false;
  // The differences' code width: 4 (SDP4Bit), 8, or 2 (a quarter of INT8's bytes, asymmetric
  // codes; each step's coding error is carried into the next difference, not added up, so the
  // gathered weights stay within one difference's error of the true ones).
  int weightDifferenceBits = 4;
  int resyncEvery = 0;
  bool errorFeedback = false;
  // What errorFeedback keeps its residuals in: kFloat32, kBfloat16 for half their memory, kInt8
  // for about a quarter (each residual rounded once as it is kept; docs/beyond-zeropp.md).
  FeedbackPrecision feedbackPrecision = FeedbackPrecision::kFloat32;
  bool smoothing = false;
  // The rotation for the weight differences alone (smoothing implies it): what INT2
  // differences need, at a fraction of the cost of rotating the gradients too.
  bool smoothWeightDifferences = false;
  // Where the model state lives (it must outlive the optimizer); nullptr: host memory.
  StateMemory* memory = nullptr;
};

struct StepStats {
  double loss = 0;       // this rank's mean loss over its batch
  bool skipped = false;  // float16 overflow: no update, loss scale halved
  float lossScale = 1;
  uint64_t interNodeBytes = 0;  // what this rank sent during the step, from zcclCommGetStats
  uint64_t intraNodeBytes = 0;
  double seconds = 0;
  // Of `seconds`: the time this thread waited for collectives that had not finished, and the
  // rest (the modules' compute, the loss, conversions, the update, starting collectives).
  double computeSeconds = 0;
  double waitSeconds = 0;
};

class ZeroOptimizer {
 public:
  // Collective over comm. The model's modules must be the same on every rank.
  static zcclResult_t create(zcclComm_t comm, Model* model, const ZeroOptions& options,
                             std::unique_ptr<ZeroOptimizer>* out);
  ~ZeroOptimizer();

  // One training step on this rank's share of the global batch (collective).
  zcclResult_t step(const Batch& batch, StepStats* stats);
  // Every parameter's float32 master value, module after module (collective).
  zcclResult_t gatherMasterParameters(std::vector<float>* params);
  // The collectives of one step alone, back to back with nothing to compute, in *seconds
  // (collective): the communication time the step's compute can hide. Weight differences and
  // error feedback run on state of their own, so training goes on as if it had not run.
  zcclResult_t timeCommunication(double* seconds);

  size_t numParams() const;
  size_t modelStateBytes() const;      // held now
  size_t peakModelStateBytes() const;  // the most held at any time
  // Of modelStateBytes: the references of weightDifferences and the residuals of errorFeedback.
  size_t compressionStateBytes() const;
  const char* lastError() const;

  class Impl;

 private:
  explicit ZeroOptimizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zccl::zero
