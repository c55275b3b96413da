// The c10d backend "zccl" (backend.h): torch's operations as zccl calls.
#include "backend.h"

#include <ATen/core/ivalue.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <utility>

namespace zccl_torch {

// One check for every zccl call: a failure becomes a Python RuntimeError carrying zccl's own
// message (which names the argument, or the peers a timeout waited for).
#define ZCCL_TORCH_CHECK(call, operation)                                             \
  do {                                                                                \
    const zcclResult_t zcclTorchResult = (call);                                      \
    TORCH_CHECK(zcclTorchResult == zcclSuccess,                                       \
                failureMessage(zcclTorchResult, operation, zcclGetLastError(comm_))); \
  } while (0)

namespace {

std::mutex registryMutex;
std::map<std::string, ZcclBackend*>& registry() {
  static auto* backends = new std::map<std::string, ZcclBackend*>();
  return *backends;
}

bool isFloat(const at::Tensor& tensor) {
  const auto type = tensor.scalar_type();
  return type == at::kFloat || type == at::kHalf || type == at::kBFloat16;
}

// The zccl type of a tensor that is reduced: every type zccl reduces, else an error naming it.
zcclDataType_t reducedType(const at::Tensor& tensor, const char* operation) {
  switch (tensor.scalar_type()) {
    case at::kFloat:
      return zcclFloat32;
    case at::kDouble:
      return zcclFloat64;
    case at::kHalf:
      return zcclFloat16;
    case at::kBFloat16:
      return zcclBfloat16;
    case at::kChar:
      return zcclInt8;
    case at::kByte:
      return zcclUint8;
    case at::kInt:
      return zcclInt32;
    case at::kLong:
      return zcclInt64;
    default:
      TORCH_CHECK(false, "zccl backend: ", operation, " cannot reduce tensors of dtype ",
                  tensor.scalar_type(),
                  " (float32/64, float16, bfloat16, int8, uint8, int32, int64 and bool can be "
                  "reduced)");
  }
}

// Tensors that are only moved travel as their bytes, whatever their type.
size_t byteCount(const at::Tensor& tensor) { return tensor.numel() * tensor.element_size(); }

zcclRedOp_t zcclOpOf(const c10d::ReduceOp& op, const char* operation) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return zcclSum;
    case c10d::ReduceOp::PREMUL_SUM:
      return zcclSum;  // the factor is applied first
    case c10d::ReduceOp::AVG:
      return zcclAvg;
    case c10d::ReduceOp::PRODUCT:
      return zcclProd;
    case c10d::ReduceOp::MIN:
      return zcclMin;
    case c10d::ReduceOp::MAX:
      return zcclMax;
    default:
      TORCH_CHECK(false, "zccl backend: ", operation, " with ReduceOp ", static_cast<int>(op.op_),
                  " (BAND, BOR or BXOR) is not supported: zccl reduces with SUM, AVG, PRODUCT, "
                  "MIN, MAX and PREMUL_SUM");
  }
}

// PREMUL_SUM: the input scaled by its factor (a copy: the caller's input stays as it was).
at::Tensor premultiplied(const at::Tensor& input, const c10d::ReduceOp& op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return input;
  // NCCLPreMulSumSupplement: torch 2.11's name, which later versions keep beside their own.
  const auto* supplement = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(supplement != nullptr, "zccl backend: PREMUL_SUM without its factor");
  if (supplement->tensor_factor.defined()) {
    return input.mul(supplement->tensor_factor.to(input.device()));
  }
  return input.mul(supplement->double_factor);
}

// What zccl reduces a tensor with. Bool tensors as NCCL's backend reduces them: their bytes (0
// or 1) by MAX for SUM and MAX (logical or), by MIN for MIN and PRODUCT (logical and).
struct Reduction {
  zcclDataType_t type;
  zcclRedOp_t op;
};

Reduction reductionOf(const at::Tensor& tensor, const c10d::ReduceOp& op, const char* operation) {
  if (tensor.scalar_type() != at::kBool) {
    return {reducedType(tensor, operation), zcclOpOf(op, operation)};
  }
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
    case c10d::ReduceOp::MAX:
      return {zcclUint8, zcclMax};
    case c10d::ReduceOp::MIN:
    case c10d::ReduceOp::PRODUCT:
      return {zcclUint8, zcclMin};
    default:
      TORCH_CHECK(false, "zccl backend: ", operation, " of bool tensors with ReduceOp ",
                  static_cast<int>(op.op_),
                  ": bool reduces with SUM and MAX (logical or), MIN and PRODUCT (logical and)");
  }
}

// Rows (one per rank) reduced into one, as zccl's operation `op` would.
at::Tensor combineRows(const at::Tensor& rows, zcclRedOp_t op) {
  switch (op) {
    case zcclMax:
      return std::get<0>(rows.max(0));
    case zcclMin:
      return std::get<0>(rows.min(0));
    case zcclProd:
      return rows.prod(0, false, rows.scalar_type());
    case zcclAvg: {
      const at::Tensor sum = rows.sum(0, false, rows.scalar_type());
      return rows.is_floating_point() ? sum.div(rows.size(0)) : sum.div(rows.size(0), "trunc");
    }
    default:
      return rows.sum(0, false, rows.scalar_type());
  }
}

void checkTensor(const at::Tensor& tensor, const char* operation, const char* argument) {
  TORCH_CHECK(tensor.device().is_cpu() || tensor.device().is_cuda(), "zccl backend: ", operation,
              ": ", argument, " is on device ", tensor.device(),
              "; zccl serves CPU and CUDA tensors");
  TORCH_CHECK(tensor.layout() == at::kStrided, "zccl backend: ", operation, ": ", argument,
              " is sparse (layout ", tensor.layout(), "); zccl serves dense tensors");
  TORCH_CHECK(tensor.is_contiguous(), "zccl backend: ", operation, ": ", argument,
              " is not contiguous");
}

// Where a zccl call on `tensor` runs: for a CPU tensor host memory (stream NULL); for a CUDA
// tensor its device, made current for the call, and that device's current stream. zccl reads
// NULL as host memory, so CUDA's legacy default stream (whose handle is NULL) goes as
// ZCCL_STREAM_LEGACY.
class OnDeviceOf {
 public:
  explicit OnDeviceOf(const at::Tensor& tensor) : guard_(tensor.device()) {
    if (!tensor.is_cuda()) return;
    const c10::Stream current =
        c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(tensor.device());
    void* handle = current.native_handle();
    stream_ = handle != nullptr ? handle : ZCCL_STREAM_LEGACY;
  }
  zcclStream_t stream() const { return stream_; }

 private:
  c10::DeviceGuard guard_;
  zcclStream_t stream_ = nullptr;
};

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* operation,
                         const char* argument) {
  TORCH_CHECK(tensors.size() == 1, "zccl backend: ", operation, " takes one tensor in ", argument,
              " per process, got ", tensors.size());
  checkTensor(tensors[0], operation, argument);
  return tensors[0];
}

// The root's list of one tensor per rank for gather or scatter, each of `mine`'s size; empty
// on the other ranks, which pass none.
std::vector<at::Tensor> rootList(const std::vector<std::vector<at::Tensor>>& lists, bool isRoot,
                                 int ranks, const at::Tensor& mine, const char* operation,
                                 const char* argument) {
  if (!isRoot) return {};
  TORCH_CHECK(lists.size() == 1 && static_cast<int>(lists[0].size()) == ranks,
              "zccl backend: ", operation, ": ", argument, " must hold one tensor per rank (",
              ranks, ") at the root");
  for (const auto& tensor : lists[0]) {
    checkTensor(tensor, operation, argument);
    TORCH_CHECK(byteCount(tensor) == byteCount(mine), "zccl backend: ", operation, ": every ",
                argument, " tensor must have this rank's tensor's ", byteCount(mine),
                " bytes, one has ", byteCount(tensor));
  }
  return lists[0];
}

at::Tensor flatCat(const std::vector<at::Tensor>& tensors) {
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& tensor : tensors) flat.push_back(tensor.reshape({-1}));
  return at::cat(flat);
}

void copyOut(const at::Tensor& flat, const std::vector<at::Tensor>& outputs) {
  int64_t offset = 0;
  for (const auto& output : outputs) {
    output.copy_(flat.narrow(0, offset, output.numel()).view(output.sizes()));
    offset += output.numel();
  }
}

}  // namespace

struct ZcclBackend::Deferred {
  c10::intrusive_ptr<ZcclWork> work;
  bool pointToPoint;
  const char* operation;
  Launch launch;
  std::vector<c10::intrusive_ptr<ZcclWork>> after;  // joined(): the works it stands for
};

ZcclBackend::ZcclBackend(const c10::intrusive_ptr<c10d::Store>& store,
                         const BackendOptions& options)
    : c10d::Backend(options.rank, options.size),
      groupName_(options.groupName),
      options_(c10::make_intrusive<Options>("zccl", options.timeout)),
      store_(store) {
  options_->group_name = options.groupName;
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  // Nodes come from host identities: zccl_torch maps ZCCL_RANKS_PER_NODE to them by global
  // rank, which zccl's emulation (consecutive ranks of each communicator) cannot see.
  config.ranksPerNode = 0;
  // The group's timeout bounds a silent peer unless ZCCL_TIMEOUT_S says otherwise.
  if (std::getenv("ZCCL_TIMEOUT_S") == nullptr && options.timeout.count() > 0) {
    config.timeoutSeconds = static_cast<double>(options.timeout.count()) / 1000.0;
  }
  const zcclStore bridge = storeOf(store.get());
  ZCCL_TORCH_CHECK(zcclCommInitStore(&comm_, options.size, options.rank, &bridge, "zccl", &config),
                   "creating the communicator");
  states_ = std::make_unique<CallStates>(comm_);
  setPolicy(options.policy, options.states);
  completer_ = std::make_unique<Completer>();
  std::lock_guard<std::mutex> lock(registryMutex);
  registry()[groupName_] = this;
}

ZcclBackend::~ZcclBackend() {
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    auto found = registry().find(groupName_);
    if (found != registry().end() && found->second == this) registry().erase(found);
  }
  shutdown();
}

// Every request in flight then ends with an error, and every work with it.
void ZcclBackend::abort() {
  if (comm_ != nullptr) zcclCommAbort(comm_);
  comm_ = nullptr;
  if (completer_ != nullptr) completer_->drain();
}

void ZcclBackend::shutdown() {
  if (completer_ != nullptr) completer_->drain();
  states_.reset();
  if (comm_ != nullptr) zcclCommDestroy(comm_);
  comm_ = nullptr;
}

c10::intrusive_ptr<c10d::Backend> ZcclBackend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                     const std::vector<int>& ranks,
                                                     const c10::intrusive_ptr<Options>& opts) {
  const auto mine = std::find(ranks.begin(), ranks.end(), getRank());
  if (mine == ranks.end()) return nullptr;
  BackendOptions options;
  options.rank = static_cast<int>(mine - ranks.begin());
  options.size = static_cast<int>(ranks.size());
  options.groupName = opts->group_name;
  options.timeout = opts->timeout;
  options.policy = policy();
  options.states = states_->policy();
  // The child's rendezvous waits on the store: on a connection of its own (Backend::split).
  return c10::make_intrusive<ZcclBackend>(store->clone(), options);
}

ZcclBackend* backendNamed(const std::string& groupName) {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto found = registry().find(groupName);
  return found == registry().end() ? nullptr : found->second;
}

std::vector<std::pair<std::string, zcclComm_t>> liveCommsByName() {
  std::lock_guard<std::mutex> lock(registryMutex);
  std::vector<std::pair<std::string, zcclComm_t>> comms;
  for (const auto& [name, backend] : registry()) {
    if (backend->comm() != nullptr) comms.emplace_back(name, backend->comm());
  }
  return comms;
}

namespace {
// Whether the collective this thread is in has reached run(), where zccl's calls start: an
// error before that is this rank's own checks rejecting its arguments. Collectives made of
// others (coalesced forms) count once, as the outermost.
thread_local bool collectiveReachedZccl = false;
thread_local int collectiveDepth = 0;

struct CollectiveLevel {
  CollectiveLevel() : outermost(collectiveDepth++ == 0) {
    if (outermost) collectiveReachedZccl = false;
  }
  ~CollectiveLevel() { --collectiveDepth; }
  const bool outermost;
};
}  // namespace

template <typename Body>
c10::intrusive_ptr<c10d::Work> ZcclBackend::collective(const Body& body) {
  const CollectiveLevel level;
  try {
    return body();
  } catch (const c10::Error& error) {
    if (level.outermost && !collectiveReachedZccl && comm_ != nullptr) {
      zcclCommRejectCollective(comm_, error.what_without_backtrace());
    }
    throw;
  }
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::run(c10d::OpType type, const char* operation,
                                                std::vector<at::Tensor> outputs, bool pointToPoint,
                                                Launch launch) {
  collectiveReachedZccl = true;
  TORCH_CHECK(comm_ != nullptr, "zccl backend: ", operation,
              " on a process group that was shut down or aborted");
  ++sequence_;
  auto work = c10::make_intrusive<ZcclWork>(type, std::move(outputs));
  if (coalesced_ != nullptr) {
    coalesced_->push_back(Deferred{work, pointToPoint, operation, std::move(launch), {}});
    return work;
  }
  completer_->add(work, start(launch, *work), operation);
  return work;
}

namespace {

bool onCuda(ZcclWork& work) {
  const std::vector<at::Tensor> outputs = work.result();
  return !outputs.empty() && outputs.front().is_cuda();
}

// A work on CUDA tensors marks where the current stream of its outputs' device stands.
void markEnd(ZcclWork& work) {
  if (!onCuda(work)) return;
  const c10::Device device = work.result().front().device();
  work.recordEnd(c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device));
}

}  // namespace

// An error while starting the calls propagates to the caller as it is, once the requests of
// the calls already queued have ended (they may still use the tensors). On CUDA tensors what
// follows the calls (copying results out) is queued at once on the current stream, behind the
// calls' gate there, as torch's NCCL backend orders its copies; the work marks where the stream
// then stands, for wait() to order the waiting stream after it. On CPU tensors it runs on the
// completer's thread once the calls are done.
Launched ZcclBackend::start(const Launch& launch, ZcclWork& work) {
  Launched launched;
  try {
    launch(&launched);
    if (onCuda(work)) {
      if (launched.finish) std::exchange(launched.finish, nullptr)();
      markEnd(work);
    }
  } catch (...) {
    for (zcclRequest_t request : launched.requests) {
      if (request != nullptr) zcclWait(request);
    }
    throw;
  }
  return launched;
}

void ZcclBackend::startCoalescing() {
  TORCH_CHECK(coalesced_ == nullptr, "zccl backend: startCoalescing inside a coalescing block");
  coalesced_ = new std::vector<Deferred>();
}

// The block's sends and receives as one group, then its collectives in order, each work
// completing with its own calls; the block's work completes after all of them.
c10::intrusive_ptr<c10d::Work> ZcclBackend::endCoalescing() {
  TORCH_CHECK(coalesced_ != nullptr, "zccl backend: endCoalescing without startCoalescing");
  std::unique_ptr<std::vector<Deferred>> deferred(coalesced_);
  coalesced_ = nullptr;
  std::vector<at::Tensor> outputs;
  std::vector<c10::intrusive_ptr<ZcclWork>> parts;
  for (const auto& item : *deferred) {
    for (const auto& tensor : item.work->result()) outputs.push_back(tensor);
    parts.push_back(item.work);
  }
  std::vector<Launched> started(deferred->size());
  size_t launchedItems = 0;
  try {
    ZCCL_TORCH_CHECK(zcclGroupStart(), "the sends and receives of a coalescing block");
    for (size_t i = 0; i < deferred->size(); ++i) {
      if ((*deferred)[i].pointToPoint) {
        started[i] = start((*deferred)[i].launch, *(*deferred)[i].work);
      }
    }
    ZCCL_TORCH_CHECK(zcclGroupEnd(), "the sends and receives of a coalescing block");
    for (; launchedItems < deferred->size(); ++launchedItems) {
      Deferred& item = (*deferred)[launchedItems];
      if (!item.pointToPoint) started[launchedItems] = start(item.launch, *item.work);
    }
  } catch (...) {
    // What started completes through its requests; the rest fails with the block's error.
    const std::exception_ptr error = std::current_exception();
    for (size_t i = 0; i < deferred->size(); ++i) {
      if (i < launchedItems) {
        completer_->add((*deferred)[i].work, std::move(started[i]), (*deferred)[i].operation,
                        (*deferred)[i].after);
      } else {
        (*deferred)[i].work->complete(error);
      }
    }
    throw;
  }
  for (size_t i = 0; i < deferred->size(); ++i) {
    completer_->add((*deferred)[i].work, std::move(started[i]), (*deferred)[i].operation,
                    (*deferred)[i].after);
  }
  auto work = c10::make_intrusive<ZcclWork>(c10d::OpType::COALESCED, std::move(outputs));
  markEnd(*work);
  completer_->add(work, Launched{}, "a coalescing block", std::move(parts));
  return work;
}

// One work for several operations started one by one: it completes after all of them.
c10::intrusive_ptr<c10d::Work> ZcclBackend::joined(
    c10d::OpType type, std::vector<at::Tensor> outputs,
    std::vector<c10::intrusive_ptr<c10d::Work>> works) {
  std::vector<c10::intrusive_ptr<ZcclWork>> parts;
  for (auto& work : works) parts.push_back(c10::static_intrusive_pointer_cast<ZcclWork>(work));
  auto work = c10::make_intrusive<ZcclWork>(type, std::move(outputs));
  if (coalesced_ != nullptr) {  // after its parts, which are deferred too
    coalesced_->push_back(
        Deferred{work, false, "coalesced operations", [](Launched*) {}, std::move(parts)});
    return work;
  }
  markEnd(*work);
  completer_->add(work, Launched{}, "coalesced operations", std::move(parts));
  return work;
}

void ZcclBackend::setPolicy(const zcclWirePolicy& policy, const CallStatePolicy& states) {
  ZCCL_TORCH_CHECK(zcclCommSetWirePolicy(comm_, &policy), "set_policy");
  // The calls in flight may use the state a new policy drops.
  if (completer_ != nullptr) completer_->drain();
  states_->setPolicy(states);
}

zcclWirePolicy ZcclBackend::policy() const {
  zcclWirePolicy policy = ZCCL_WIRE_POLICY_INITIALIZER;
  ZCCL_TORCH_CHECK(zcclCommGetWirePolicy(comm_, &policy), "policy");
  return policy;
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    at::Tensor tensor = single(tensors, "broadcast", "tensors");
    const int root = static_cast<int>(opts.rootRank);
    return run(
        c10d::OpType::BROADCAST, "broadcast", {tensor}, false, [this, tensor, root](Launched* l) {
          const OnDeviceOf on(tensor);
          const zcclCollOptions queued = l->queued();
          ZCCL_TORCH_CHECK(zcclBroadcastEx(tensor.data_ptr(), tensor.data_ptr(), byteCount(tensor),
                                           zcclUint8, root, comm_, on.stream(), &queued),
                           "broadcast");
        });
  });
}

void ZcclBackend::startAllReduce(Launched* l, const at::Tensor& tensor,
                                 const c10d::ReduceOp& reduceOp, const char* operation) {
  const Reduction reduction = reductionOf(tensor, reduceOp, operation);
  const OnDeviceOf on(tensor);
  const at::Tensor input = premultiplied(tensor, reduceOp);
  l->keep.push_back(input);
  zcclCollOptions queued = l->queued();
  if (on.stream() == nullptr) {
    states_->forReduction(true, tensor.numel(), reduction.type, &queued);
  }
  ZCCL_TORCH_CHECK(zcclAllReduceEx(input.data_ptr(), tensor.data_ptr(), tensor.numel(),
                                   reduction.type, reduction.op, comm_, on.stream(), &queued),
                   operation);
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                      const c10d::AllreduceOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    at::Tensor tensor = single(tensors, "allreduce", "tensors");
    reductionOf(tensor, opts.reduceOp, "allreduce");
    const c10d::ReduceOp reduceOp = opts.reduceOp;
    return run(c10d::OpType::ALLREDUCE, "allreduce", {tensor}, false,
               [this, tensor, reduceOp](Launched* l) {
                 startAllReduce(l, tensor, reduceOp, "allreduce");
               });
  });
}

// Tensors of one type travel as one buffer, one zccl all-reduce for the lot.
c10::intrusive_ptr<c10d::Work> ZcclBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    TORCH_CHECK(!tensors.empty(), "zccl backend: allreduce_coalesced of no tensors");
    for (const auto& tensor : tensors) {
      checkTensor(tensor, "allreduce_coalesced", "tensors");
      TORCH_CHECK(tensor.scalar_type() == tensors[0].scalar_type(),
                  "zccl backend: allreduce_coalesced: tensors of dtypes ", tensors[0].scalar_type(),
                  " and ", tensor.scalar_type(), " (one dtype per call)");
    }
    reductionOf(tensors[0], opts.reduceOp, "allreduce_coalesced");
    const c10d::ReduceOp reduceOp = opts.reduceOp;
    std::vector<at::Tensor> outputs = tensors;
    return run(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", outputs, false,
               [this, outputs, reduceOp](Launched* l) {
                 at::Tensor flat = flatCat(outputs);
                 startAllReduce(l, flat, reduceOp, "allreduce_coalesced");
                 l->finish = [flat, outputs] { copyOut(flat, outputs); };
               });
  });
}

// In place at the root; the other ranks' tensors are left as they were.
c10::intrusive_ptr<c10d::Work> ZcclBackend::reduce(std::vector<at::Tensor>& tensors,
                                                   const c10d::ReduceOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    at::Tensor tensor = single(tensors, "reduce", "tensors");
    const Reduction reduction = reductionOf(tensor, opts.reduceOp, "reduce");
    const int root = static_cast<int>(opts.rootRank);
    const c10d::ReduceOp reduceOp = opts.reduceOp;
    return run(c10d::OpType::REDUCE, "reduce", {tensor}, false,
               [this, tensor, reduction, root, reduceOp](Launched* l) {
                 const OnDeviceOf on(tensor);
                 const at::Tensor input = premultiplied(tensor, reduceOp);
                 l->keep.push_back(input);
                 const zcclCollOptions queued = l->queued();
                 ZCCL_TORCH_CHECK(
                     zcclReduceEx(input.data_ptr(), tensor.data_ptr(), tensor.numel(),
                                  reduction.type, reduction.op, root, comm_, on.stream(), &queued),
                     "reduce");
               });
  });
}

// Float tensors travel typed, so that the wire policy can quantize them; others as bytes.
void ZcclBackend::startAllGather(Launched* l, const at::Tensor& output, const at::Tensor& input) {
  const bool typed = isFloat(input);
  const OnDeviceOf on(input);
  const zcclDataType_t type = typed ? reducedType(input, "all_gather") : zcclUint8;
  zcclCollOptions queued = l->queued();
  if (typed && on.stream() == nullptr) states_->forAllGather(input.numel(), type, &queued);
  ZCCL_TORCH_CHECK(
      zcclAllGatherEx(input.data_ptr(), output.data_ptr(), typed ? input.numel() : byteCount(input),
                      type, comm_, on.stream(), &queued),
      "all_gather");
}

void ZcclBackend::checkAllGather(const at::Tensor& output, const at::Tensor& input,
                                 const char* operation) {
  checkTensor(input, operation, "input");
  checkTensor(output, operation, "output");
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "zccl backend: ", operation,
              ": output has ", output.numel(), " elements, expected input's ", input.numel(), " x ",
              getSize(), " ranks");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "zccl backend: ", operation,
              ": input is ", input.scalar_type(), ", output ", output.scalar_type());
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions&) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    checkAllGather(output, input, "all_gather_into_tensor");
    return run(c10d::OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {output}, false,
               [this, output, input](Launched* l) { startAllGather(l, output, input); });
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllgatherOptions&) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    at::Tensor input = single(inputs, "allgather", "input_tensor");
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "zccl backend: allgather: tensor_list must hold one tensor per rank (", getSize(),
                ")");
    bool even = true;
    for (const auto& output : outputs[0]) {
      checkTensor(output, "allgather", "tensor_list");
      TORCH_CHECK(output.scalar_type() == input.scalar_type(),
                  "zccl backend: allgather: an output is ", output.scalar_type(), ", the input ",
                  input.scalar_type());
      even = even && output.numel() == input.numel();
    }
    std::vector<at::Tensor> targets = outputs[0];
    TORCH_CHECK(targets[getRank()].numel() == input.numel(),
                "zccl backend: allgather: this rank's ", "output holds ",
                targets[getRank()].numel(), " elements, its input ", input.numel());
    if (!even) {  // as torch's NCCL backend: each rank's tensor of its own size
      const std::vector<at::Tensor> sends(getSize(), input);
      return run(c10d::OpType::ALLGATHER, "allgather", targets, false,
                 [this, sends, targets](Launched*) { exchange(sends, targets, "allgather"); });
    }
    // Into one buffer, copied into the list once the gather has run.
    return run(c10d::OpType::ALLGATHER, "allgather", targets, false,
               [this, input, targets](Launched* l) {
                 at::Tensor flat = at::empty({input.numel() * getSize()}, input.options());
                 startAllGather(l, flat, input.reshape({-1}));
                 l->keep.push_back(input);
                 l->finish = [flat, targets] { copyOut(flat, targets); };
               });
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    TORCH_CHECK(outputLists.size() == static_cast<size_t>(getSize()),
                "zccl backend: allgather_coalesced: one output list per rank expected");
    std::vector<at::Tensor> outputs;
    for (const auto& list : outputLists) outputs.insert(outputs.end(), list.begin(), list.end());
    const std::vector<std::vector<at::Tensor>> lists = outputLists;
    return run(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", outputs, false,
               [this, inputs, lists](Launched* l) {
                 at::Tensor flatInput = flatCat(inputs);
                 at::Tensor flat = at::empty({flatInput.numel() * getSize()}, flatInput.options());
                 startAllGather(l, flat, flatInput);
                 l->keep.push_back(flatInput);
                 l->finish = [this, flat, flatInput, lists] {
                   for (int rank = 0; rank < getSize(); ++rank) {
                     copyOut(flat.narrow(0, rank * flatInput.numel(), flatInput.numel()),
                             lists[static_cast<size_t>(rank)]);
                   }
                 };
               });
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "zccl backend: allgather_into_tensor_coalesced: ", outputs.size(), " outputs for ",
                inputs.size(), " inputs");
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (size_t i = 0; i < inputs.size(); ++i) {
      works.push_back(_allgather_base(outputs[i], inputs[i], opts));
    }
    return joined(c10d::OpType::COALESCED, outputs, std::move(works));
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    checkTensor(input, "reduce_scatter_tensor", "input");
    checkTensor(output, "reduce_scatter_tensor", "output");
    TORCH_CHECK(input.numel() == output.numel() * getSize(),
                "zccl backend: reduce_scatter_tensor: input has ", input.numel(),
                " elements, expected output's ", output.numel(), " x ", getSize(), " ranks");
    TORCH_CHECK(output.scalar_type() == input.scalar_type(),
                "zccl backend: reduce_scatter_tensor: input is ", input.scalar_type(), ", output ",
                output.scalar_type());
    const Reduction reduction = reductionOf(input, opts.reduceOp, "reduce_scatter_tensor");
    const c10d::ReduceOp reduceOp = opts.reduceOp;
    return run(c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {output}, false,
               [this, output, input, reduction, reduceOp](Launched* l) {
                 const OnDeviceOf on(input);
                 const at::Tensor source = premultiplied(input, reduceOp);
                 l->keep.push_back(source);
                 zcclCollOptions queued = l->queued();
                 if (on.stream() == nullptr) {
                   states_->forReduction(false, source.numel(), reduction.type, &queued);
                 }
                 ZCCL_TORCH_CHECK(
                     zcclReduceScatterEx(source.data_ptr(), output.data_ptr(), output.numel(),
                                         reduction.type, reduction.op, comm_, on.stream(), &queued),
                     "reduce_scatter_tensor");
               });
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    at::Tensor output = single(outputs, "reduce_scatter", "output");
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "zccl backend: reduce_scatter: input_list must hold one tensor per rank (",
                getSize(), ")");
    bool even = true;
    for (const auto& input : inputs[0]) {
      checkTensor(input, "reduce_scatter", "input_list");
      TORCH_CHECK(input.scalar_type() == output.scalar_type(), "zccl backend: reduce_scatter: an ",
                  "input is ", input.scalar_type(), ", the output ", output.scalar_type());
      even = even && input.numel() == output.numel();
    }
    TORCH_CHECK(inputs[0][getRank()].numel() == output.numel(),
                "zccl backend: reduce_scatter: ", "this rank's input holds ",
                inputs[0][getRank()].numel(), " elements, its output ", output.numel());
    if (!even) return unevenReduceScatter(output, inputs[0], opts.reduceOp);
    at::Tensor flat = flatCat(inputs[0]);
    at::Tensor result = output.view({-1});  // contiguous: the same storage
    return _reduce_scatter_base(result, flat, opts);
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "zccl backend: reduce_scatter_tensor_coalesced: ", outputs.size(), " outputs for ",
                inputs.size(), " inputs");
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (size_t i = 0; i < inputs.size(); ++i) {
      works.push_back(_reduce_scatter_base(outputs[i], inputs[i], opts));
    }
    return joined(c10d::OpType::COALESCED, outputs, std::move(works));
  });
}

// Equal splits are zccl's all-to-all; uneven ones are one group of sends and receives.
c10::intrusive_ptr<c10d::Work> ZcclBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplitSizes,
                                                          std::vector<int64_t>& inputSplitSizes,
                                                          const c10d::AllToAllOptions&) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    checkTensor(input, "all_to_all_single", "input");
    checkTensor(output, "all_to_all_single", "output");
    const int ranks = getSize();
    const int64_t rowBytes = input.dim() == 0
                                 ? input.element_size()
                                 : byteCount(input) / std::max<int64_t>(1, input.size(0));
    auto offsets = [&](const std::vector<int64_t>& splits, const at::Tensor& tensor,
                       const char* argument) {
      std::vector<int64_t> sizes = splits;
      if (sizes.empty()) {
        TORCH_CHECK(tensor.dim() > 0 && tensor.size(0) % ranks == 0,
                    "zccl backend: all_to_all_single: ", argument, " of ",
                    tensor.dim() > 0 ? tensor.size(0) : 0, " rows does not divide by ", ranks,
                    " ranks (pass split sizes)");
        sizes.assign(ranks, tensor.size(0) / ranks);
      }
      TORCH_CHECK(static_cast<int>(sizes.size()) == ranks,
                  "zccl backend: all_to_all_single: ", argument, " split sizes has ", sizes.size(),
                  " entries for ", ranks, " ranks");
      TORCH_CHECK(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) == tensor.size(0),
                  "zccl backend: all_to_all_single: ", argument, " split sizes do not sum to its ",
                  tensor.size(0), " rows");
      return sizes;
    };
    const std::vector<int64_t> sendRows = offsets(inputSplitSizes, input, "input");
    const std::vector<int64_t> recvRows = offsets(outputSplitSizes, output, "output");
    const bool equal = inputSplitSizes.empty() && outputSplitSizes.empty();
    return run(c10d::OpType::ALLTOALL_BASE, "all_to_all_single", {output}, false,
               [this, output, input, sendRows, recvRows, rowBytes, equal](Launched* l) {
                 if (equal) {
                   const OnDeviceOf on(input);
                   const zcclCollOptions queued = l->queued();
                   ZCCL_TORCH_CHECK(
                       zcclAllToAllEx(input.data_ptr(), output.data_ptr(), sendRows[0] * rowBytes,
                                      zcclUint8, comm_, on.stream(), &queued),
                       "all_to_all_single");
                   return;
                 }
                 // Uneven: each peer's rows, as views of the two tensors, in one group.
                 exchange(input.split_with_sizes(sendRows), output.split_with_sizes(recvRows),
                          "all_to_all_single");
               });
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions&) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    TORCH_CHECK(static_cast<int>(outputs.size()) == getSize() &&
                    static_cast<int>(inputs.size()) == getSize(),
                "zccl backend: all_to_all: one input and one output tensor per rank (", getSize(),
                ")");
    for (const auto& tensor : inputs) checkTensor(tensor, "all_to_all", "input_tensor_list");
    for (const auto& tensor : outputs) checkTensor(tensor, "all_to_all", "output_tensor_list");
    return run(c10d::OpType::ALLTOALL, "all_to_all", outputs, false,
               [this, outputs, inputs](Launched*) { exchange(inputs, outputs, "all_to_all"); });
  });
}

// As torch's NCCL backend, each rank's output of its own size: every rank sends each peer its
// input for that peer and reduces what it receives here, in rank order.
c10::intrusive_ptr<c10d::Work> ZcclBackend::unevenReduceScatter(
    const at::Tensor& output, const std::vector<at::Tensor>& inputs, const c10d::ReduceOp& op) {
  const Reduction reduction = reductionOf(output, op, "reduce_scatter");
  std::vector<at::Tensor> sends;
  for (const auto& input : inputs) sends.push_back(premultiplied(input, op).contiguous());
  return run(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", {output}, false,
             [this, output, sends, reduction](Launched*) {
               const at::Tensor rows = at::empty({getSize(), output.numel()}, output.options());
               std::vector<at::Tensor> receives;
               for (int peer = 0; peer < getSize(); ++peer)
                 receives.push_back(rows.select(0, peer));
               exchange(sends, receives, "reduce_scatter");
               output.copy_(combineRows(rows, reduction.op).view(output.sizes()));
             });
}

// One group of sends and receives: sends[peer] to each peer and receives[peer] from it, as
// bytes (so sizes may differ between peers; rings of any direction complete).
void ZcclBackend::exchange(const std::vector<at::Tensor>& sends,
                           const std::vector<at::Tensor>& receives, const char* operation) {
  const OnDeviceOf on(sends[0]);
  ZCCL_TORCH_CHECK(zcclGroupStart(), operation);
  for (int peer = 0; peer < getSize(); ++peer) {
    ZCCL_TORCH_CHECK(zcclSend(sends[peer].data_ptr(), byteCount(sends[peer]), zcclUint8, peer,
                              comm_, on.stream()),
                     operation);
    ZCCL_TORCH_CHECK(zcclRecv(receives[peer].data_ptr(), byteCount(receives[peer]), zcclUint8, peer,
                              comm_, on.stream()),
                     operation);
  }
  ZCCL_TORCH_CHECK(zcclGroupEnd(), operation);
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::GatherOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    at::Tensor input = single(inputs, "gather", "tensor");
    const int root = static_cast<int>(opts.rootRank);
    std::vector<at::Tensor> targets =
        rootList(outputs, getRank() == root, getSize(), input, "gather", "gather_list");
    // zccl gathers into one buffer at the root, split into gather_list afterwards.
    return run(
        c10d::OpType::GATHER, "gather", targets, true, [this, input, targets, root](Launched* l) {
          const OnDeviceOf on(input);
          const bool isRoot = getRank() == root;
          at::Tensor flat =
              isRoot ? at::empty({input.numel() * getSize()}, input.options()) : at::Tensor();
          const zcclCollOptions queued = l->queued();
          ZCCL_TORCH_CHECK(
              zcclGatherEx(input.data_ptr(), isRoot ? flat.data_ptr() : nullptr, byteCount(input),
                           zcclUint8, root, comm_, on.stream(), &queued),
              "gather");
          if (isRoot) l->finish = [flat, targets] { copyOut(flat, targets); };
        });
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::scatter(std::vector<at::Tensor>& outputs,
                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                    const c10d::ScatterOptions& opts) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    at::Tensor output = single(outputs, "scatter", "tensor");
    const int root = static_cast<int>(opts.rootRank);
    const std::vector<at::Tensor> sources =
        rootList(inputs, getRank() == root, getSize(), output, "scatter", "scatter_list");
    // zccl scatters from one buffer: the root's scatter_list joined.
    return run(c10d::OpType::SCATTER, "scatter", {output}, true,
               [this, output, sources, root](Launched* l) {
                 const OnDeviceOf on(output);
                 const at::Tensor flat = getRank() == root ? flatCat(sources) : at::Tensor();
                 l->keep.push_back(flat);
                 const zcclCollOptions queued = l->queued();
                 ZCCL_TORCH_CHECK(
                     zcclScatterEx(flat.defined() ? flat.data_ptr() : nullptr, output.data_ptr(),
                                   byteCount(output), zcclUint8, root, comm_, on.stream(), &queued),
                     "scatter");
               });
  });
}

// Tags are not matched: messages between two ranks arrive in the order they were posted.
c10::intrusive_ptr<c10d::Work> ZcclBackend::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                 int) {
  at::Tensor tensor = single(tensors, "send", "tensor");
  return run(c10d::OpType::SEND, "send", {tensor}, true, [this, tensor, dstRank](Launched*) {
    const OnDeviceOf on(tensor);
    ZCCL_TORCH_CHECK(
        zcclSend(tensor.data_ptr(), byteCount(tensor), zcclUint8, dstRank, comm_, on.stream()),
        "send");
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                 int) {
  at::Tensor tensor = single(tensors, "recv", "tensor");
  return run(c10d::OpType::RECV, "recv", {tensor}, true, [this, tensor, srcRank](Launched*) {
    const OnDeviceOf on(tensor);
    ZCCL_TORCH_CHECK(
        zcclRecv(tensor.data_ptr(), byteCount(tensor), zcclUint8, srcRank, comm_, on.stream()),
        "recv");
  });
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::recvAnysource(std::vector<at::Tensor>& tensors, int) {
  at::Tensor tensor = single(tensors, "recv from any source", "tensor");
  TORCH_CHECK(tensor.is_cpu(),
              "zccl backend: recv from any source (src=None) takes CPU tensors, as gloo's; "
              "the tensor is on ",
              tensor.device());
  auto source = std::make_shared<int>(-1);
  // Not grouped in a coalescing block: its sender is known only once it arrives.
  auto work = run(c10d::OpType::RECVANYSOURCE, "recv from any source", {tensor}, false,
                  [this, tensor, source](Launched*) {
                    ZCCL_TORCH_CHECK(zcclRecvFromAny(tensor.data_ptr(), byteCount(tensor),
                                                     zcclUint8, source.get(), comm_),
                                     "recv from any source");
                  });
  static_cast<ZcclWork*>(work.get())->reportSourceFrom(std::move(source));
  return work;
}

void ZcclBackend::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  using Clock = std::chrono::steady_clock;
  const std::chrono::milliseconds timeout =
      opts.timeout != c10d::kUnsetTimeout ? opts.timeout : options_->timeout;
  const std::string round = "zccl/monitored_barrier/" + std::to_string(monitoredBarriers_++);
  const std::string outcome = round + "/outcome";
  store_->set(round + "/arrived/" + std::to_string(getRank()), std::vector<uint8_t>{1});
  if (getRank() != 0) {
    // Rank 0 answers within its timeout; the margin covers its reporting.
    store_->wait({outcome}, timeout + std::chrono::seconds(5));
    const std::vector<uint8_t> failure = store_->get(outcome);
    TORCH_CHECK(failure.empty(), "Rank ", getRank(),
                " successfully reached monitoredBarrier, but received errors while waiting for "
                "send/recv from rank 0: ",
                std::string(failure.begin(), failure.end()));
    return;
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<int> missing;
  bool outOfTime = false;  // as gloo's: rank 0's time ran out before it could wait for a rank
  for (int rank = 1; rank < getSize() && (waitAllRanks || missing.empty()); ++rank) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (!waitAllRanks && left.count() <= 0) {
      outOfTime = true;
      break;
    }
    try {
      store_->wait({round + "/arrived/" + std::to_string(rank)},
                   std::max(left, std::chrono::milliseconds(1)));
    } catch (const std::exception&) {
      missing.push_back(rank);
    }
  }
  std::string failure;
  if (outOfTime) {
    failure = "Rank 0 timed out in monitoredBarrier after " + std::to_string(timeout.count()) +
              " ms (zccl backend, group " + groupName_ + ")";
  } else if (!missing.empty()) {
    std::string ranks;
    for (int rank : missing) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    failure = (missing.size() == 1 ? "Rank " : "Ranks ") + ranks +
              " failed to pass monitoredBarrier in " + std::to_string(timeout.count()) +
              " ms (zccl backend, group " + groupName_ + ")";
  }
  store_->set(outcome, std::vector<uint8_t>(failure.begin(), failure.end()));
  TORCH_CHECK(failure.empty(), failure);
}

c10::intrusive_ptr<c10d::Work> ZcclBackend::barrier(const c10d::BarrierOptions&) {
  return collective([&]() -> c10::intrusive_ptr<c10d::Work> {
    return run(c10d::OpType::BARRIER, "barrier", {}, false, [this](Launched* l) {
      at::Tensor token = at::zeros({1}, at::kInt);
      l->keep.push_back(token);
      const zcclCollOptions queued = l->queued();
      ZCCL_TORCH_CHECK(zcclAllReduceEx(token.data_ptr(), token.data_ptr(), 1, zcclInt32, zcclSum,
                                       comm_, nullptr, &queued),
                       "barrier");
    });
  });
}

}  // namespace zccl_torch
