// The device engine (device_engine.h).
#include "device/device_engine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/log.h"

namespace zccl {

// What the communicator thread's device work runs on: zccl's own stream, with its scratch, and the
// staged transports over the communicator's (levels included).
struct DeviceEngine::OwnStream {
  explicit OwnStream(std::unique_ptr<DeviceStreamResources> made)
      : resources(std::move(made)), scratch(resources->scratchAllocator()) {}

  std::vector<Transport*> transports() const {
    std::vector<Transport*> all;
    for (Transport* t : {transport.get(), node.get(), cross.get()}) {
      if (t != nullptr) all.push_back(t);
    }
    return all;
  }

  std::unique_ptr<DeviceStreamResources> resources;
  ScratchPool scratch;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Transport> node;
  std::unique_ptr<Transport> cross;
  NodeLevels levels;
};

DeviceEngine::DeviceEngine(DeviceHost host, DeviceRuntime& runtime)
    : host_(std::move(host)), runtime_(runtime) {}

DeviceEngine::~DeviceEngine() { releaseGates(); }

Status DeviceEngine::start() {
  ZCCL_CHECK(runtime_.currentDevice(&device_));
  ZCCL_CHECK(runtime_.loadKernels());
  ZCCL_CHECK(runtime_.streamGates(&gates_));
  // Work on another thread would use the host transports while the program makes its own calls
  // to the engine (MPI below MPI_THREAD_MULTIPLE forbids it): then each call runs its work itself.
  onCallersThread_ = host_.options.blocking;
  return Status::kSuccess;
}

Status DeviceEngine::checkDevice() const {
  int current = -1;
  ZCCL_CHECK(runtime_.currentDevice(&current));
  if (current == device_) return Status::kSuccess;
  return fail(Status::kInvalidUsage,
              "the current device is %d, but this communicator's device work is on device %d "
              "(the device current at its first call with a stream)",
              current, device_);
}

Status DeviceEngine::submit(void* stream, std::function<Status()> work,
                            std::function<void(const JobOutcome&)> done) {
  std::lock_guard<std::mutex> lock(submitMutex_);  // tickets in the queue's order
  ZCCL_CHECK(checkDevice());
  const uint64_t ticket = tickets_ + 1;
  std::unique_ptr<StreamInputs> inputs;
  ZCCL_CHECK(gates_->close(stream, ticket, &inputs));
  tickets_ = ticket;
  std::shared_ptr<StreamInputs> after(std::move(inputs));
  WorkQueue::Job job{[this, after, work = std::move(work)] {
                       ZCCL_CHECK(prepare());
                       ZCCL_CHECK(after->precede(*own_->resources));
                       return work();
                     },
                     [this, ticket, done = std::move(done)](const JobOutcome& outcome) {
                       gates_->release(ticket);
                       if (done) done(outcome);
                     }};
  if (!onCallersThread_) return host_.queue->submit(std::move(job));
  return host_.queue->runHere(std::move(job));
}

Status DeviceEngine::enqueueCollective(void* stream, const std::string& call, Collective collective,
                                       const CollectiveArgs& args, const CollectiveOptions& options,
                                       CollectiveObserver observer,
                                       std::function<void(const JobOutcome&)> done) {
  return submit(
      stream,
      [this, call, collective, args, options, observer = std::move(observer)] {
        if (observer.started) observer.started();
        Plan ran;
        const Status status = runCollective(collective, args, options, &ran);
        if (observer.ended) observer.ended(status, ran);
        if (status != Status::kSuccess) failed(call);
        return status;
      },
      std::move(done));
}

Status DeviceEngine::enqueueMessages(void* stream, std::vector<PeerMessage> messages) {
  char call[96];
  std::snprintf(call, sizeof(call), "zcclSend/zcclRecv on stream=%p (%zu message%s)", stream,
                messages.size(), messages.size() == 1 ? "" : "s");
  return submit(stream, [this, call = std::string(call), messages = std::move(messages)] {
    const Status status = runMessages(messages);
    if (status != Status::kSuccess) failed(call);
    return status;
  });
}

void DeviceEngine::requestAbort() {
  std::lock_guard<std::mutex> lock(transportsMutex_);
  stopping_ = true;
  for (Transport* t : transportsLocked()) t->requestAbort();
}

void DeviceEngine::releaseGates() {
  std::lock_guard<std::mutex> lock(submitMutex_);
  if (gates_ != nullptr) gates_->release(tickets_);
}

// The first device job on the communicator's thread makes what the work runs on: the stream on the
// device the path was made on, and the staged transports.
Status DeviceEngine::prepare() {
  if (own_ != nullptr) return Status::kSuccess;
  ZCCL_CHECK(runtime_.setCurrentDevice(device_));
  std::unique_ptr<DeviceStreamResources> resources;
  ZCCL_CHECK(runtime_.ownStream(&resources));
  auto own = std::make_unique<OwnStream>(std::move(resources));
  const StagedOptions options{host_.options.stagedChunkBytes};
  DeviceCopier& copier = own->resources->copier();
  own->transport = makeStagedTransport(*host_.transport, copier, options);
  if (host_.levels != nullptr) {
    own->node = makeStagedTransport(*host_.levels->node, copier, options);
    own->cross = makeStagedTransport(*host_.levels->cross, copier, options);
    own->levels = *host_.levels;
    own->levels.node = own->node.get();
    own->levels.cross = own->cross.get();
  }
  return publish([&] { own_ = std::move(own); });
}

// Transports become the communicator's (for abort and statistics) under the lock that abort
// takes, so that none is made after an abort asked the others to end.
template <typename Adopt>
Status DeviceEngine::publish(Adopt&& adopt) {
  std::lock_guard<std::mutex> lock(transportsMutex_);
  if (stopping_) return fail(Status::kRemoteError, "the communicator was aborted");
  adopt();
  return Status::kSuccess;
}

// After a failure what is in flight may still touch the transports' memory and the caller's
// buffers: every transport of the communicator gives up its messages (NCCL's communicators
// are aborted, which ends their kernels), then the stream's work is let finish before the
// gate opens.
void DeviceEngine::failed(const std::string& call) {
  host_.failed(call);
  if (own_ != nullptr) own_->resources->synchronize();
}

// 16 MiB of float32: large enough that a GPU's launch latency does not hide its rate.
constexpr size_t kRateSampleCount = size_t{1} << 22;

Status DeviceEngine::measureRates() {
  if (measured_) return Status::kSuccess;
  DeviceStreamResources& resources = *own_->resources;
  const QuantParams params;
  const size_t messageBytes = quantizedBytes(kRateSampleCount, params);
  const ScratchAllocator allocator = resources.scratchAllocator();
  void* buffers[3] = {allocator.allocate(kRateSampleCount * sizeof(float)),
                      allocator.allocate(kRateSampleCount * sizeof(float)),
                      allocator.allocate(messageBytes)};
  Status status = Status::kSuccess;
  if (buffers[0] == nullptr || buffers[1] == nullptr || buffers[2] == nullptr) {
    status = fail(Status::kSystemError,
                  "out of device memory measuring the device's kernel rates (%zu bytes)",
                  2 * kRateSampleCount * sizeof(float) + messageBytes);
  }
  auto* data = static_cast<float*>(buffers[0]);
  auto* accumulator = static_cast<float*>(buffers[1]);
  Kernels& kernels = resources.kernels();
  if (status == Status::kSuccess) status = kernels.zeroFloats(data, kRateSampleCount);
  if (status == Status::kSuccess) status = kernels.zeroFloats(accumulator, kRateSampleCount);
  if (status == Status::kSuccess) status = resources.synchronize();
  if (status == Status::kSuccess) {
    measured_ =
        measureKernelRates(kernels, data, buffers[2], messageBytes, accumulator, kRateSampleCount,
                           /*deriveSmoothing=*/true, [&] { return resources.synchronize(); });
  }
  for (void* buffer : buffers) {
    if (buffer != nullptr) allocator.release(buffer);
  }
  return status;
}

// A rank that could not measure still takes part, so that the others fail at once naming it
// instead of waiting for it until the timeout.
Status DeviceEngine::agreeOnRates() {
  if (cluster_) return Status::kSuccess;
  struct Offer {
    KernelRates rates;
    int measured;
  };
  const Status measured = measureRates();
  const std::string why = measured == Status::kSuccess ? "" : lastThreadError();
  const Offer mine{measured_.value_or(KernelRates{}), measured == Status::kSuccess ? 1 : 0};
  std::vector<Offer> all(static_cast<size_t>(host_.transport->size()));
  ZCCL_CHECK(host_.transport->allGatherControl(&mine, sizeof(Offer), all.data()));
  if (measured != Status::kSuccess) {
    restoreThreadError(why);
    return measured;
  }
  ClusterModel cluster = *host_.cluster;
  cluster.pipelineElements = static_cast<double>(own_->resources->kernels().pipelineElements());
  KernelRates slowest = all[0].rates;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].measured == 0) {
      return fail(Status::kSystemError, "rank %zu could not measure its device's kernel rates", r);
    }
    slowest = slowerOf(slowest, all[r].rates);
  }
  cluster.kernels = slowest;
  cluster_ = cluster;
  return Status::kSuccess;
}

// On the caller's thread, once the communicator's thread is idle.
Status DeviceEngine::localRates(KernelRates* rates) {
  ZCCL_CHECK(checkDevice());
  ZCCL_CHECK(prepare());
  ZCCL_CHECK(measureRates());
  *rates = *measured_;
  return Status::kSuccess;
}

namespace {

// What each rank brings to the choice of the device backend.
struct NcclProbe {
  int usable;        // NCCL loads, and the runtime names this rank's device
  char device[32];   // its PCI bus id
  char reason[200];  // why not, when not usable
};

void copyText(const std::string& text, char* into, size_t capacity) {
  const size_t n = std::min(text.size(), capacity - 1);
  std::memcpy(into, text.data(), n);
  into[n] = '\0';
}

NcclProbe probeNccl(DeviceRuntime& runtime) {
  NcclProbe probe{};
  std::string id, reason;
  if (runtime.ncclDeviceId(&id, &reason)) ncclLoadable(&reason);
  probe.usable = reason.empty() ? 1 : 0;
  copyText(id, probe.device, sizeof(probe.device));
  copyText(reason, probe.reason, sizeof(probe.reason));
  return probe;
}

// Why NCCL cannot carry this job's device collectives, or "" when it can: every rank must
// load it and hold a GPU no other rank of its machine holds.
std::string ncclObstacle(const std::vector<NcclProbe>& all,
                         const std::vector<ProcessLocator>& processes) {
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].usable == 0) return "rank " + std::to_string(r) + ": " + all[r].reason;
  }
  for (size_t r = 0; r < all.size(); ++r) {
    for (size_t s = r + 1; s < all.size() && s < processes.size(); ++s) {
      if (processes[r].kernel == processes[s].kernel &&
          std::strcmp(all[r].device, all[s].device) == 0) {
        return "ranks " + std::to_string(r) + " and " + std::to_string(s) + " share the GPU at " +
               all[r].device + " (NCCL runs one rank per GPU)";
      }
    }
  }
  return "";
}

}  // namespace

Status DeviceEngine::chooseBackend() {
  if (backend_) return Status::kSuccess;
  const DeviceBackend requested = host_.options.backend;
  if (requested == DeviceBackend::kStaged) {
    backend_ = DeviceBackend::kStaged;
    return Status::kSuccess;
  }
  const NcclProbe mine = probeNccl(runtime_);
  std::vector<NcclProbe> all(static_cast<size_t>(host_.transport->size()));
  ZCCL_CHECK(host_.transport->allGatherControl(&mine, sizeof(NcclProbe), all.data()));
  const std::string obstacle = ncclObstacle(all, *host_.processes);
  if (!obstacle.empty() && requested == DeviceBackend::kNccl) {
    return fail(Status::kInvalidUsage,
                "ZCCL_DEVICE_BACKEND=nccl: %s; staged (or auto) carries device memory without it",
                obstacle.c_str());
  }
  if (obstacle.empty()) ZCCL_CHECK(makeNcclTransports());
  backend_ = obstacle.empty() ? DeviceBackend::kNccl : DeviceBackend::kStaged;
  ZCCL_LOG(kInfo, "rank %d: device collectives %s", host_.transport->rank(),
           obstacle.empty() ? "over NCCL"
                            : ("staged through host memory (not NCCL: " + obstacle + ")").c_str());
  return Status::kSuccess;
}

Status DeviceEngine::makeNcclTransports() {
  const TransportOptions options{host_.options.timeoutSeconds};
  const auto make = [&](Transport& control, std::unique_ptr<StreamTransport>* out) {
    std::unique_ptr<StreamTransport> made;
    ZCCL_CHECK(makeNcclTransport(control, options, &made));
    std::vector<int> ranks(static_cast<size_t>(control.size()));
    for (int m = 0; m < control.size(); ++m) ranks[static_cast<size_t>(m)] = control.peerRank(m);
    made->setPeerRanks(std::move(ranks));
    return publish([&] { *out = std::move(made); });
  };
  ZCCL_CHECK(make(*host_.transport, &ncclFlat_));
  if (host_.levels == nullptr) return Status::kSuccess;
  ZCCL_CHECK(make(*host_.levels->node, &ncclNode_));
  ZCCL_CHECK(make(*host_.levels->cross, &ncclCross_));
  ncclLevels_ = *host_.levels;
  ncclLevels_.node = ncclNode_.get();
  ncclLevels_.cross = ncclCross_.get();
  return Status::kSuccess;
}

std::vector<Transport*> DeviceEngine::transports() const {
  std::lock_guard<std::mutex> lock(transportsMutex_);
  return transportsLocked();
}

std::vector<Transport*> DeviceEngine::transportsLocked() const {
  std::vector<Transport*> all;
  if (own_ != nullptr) all = own_->transports();
  for (Transport* t :
       {static_cast<Transport*>(ncclFlat_.get()), static_cast<Transport*>(ncclNode_.get()),
        static_cast<Transport*>(ncclCross_.get())}) {
    if (t != nullptr) all.push_back(t);
  }
  return all;
}

Status DeviceEngine::runCollective(Collective collective, const CollectiveArgs& args,
                                   const CollectiveOptions& options, Plan* ran) {
  // At the first device collective of every rank (collective, in call order).
  ZCCL_CHECK(agreeOnRates());
  ZCCL_CHECK(chooseBackend());
  Transport* transport = own_->transport.get();
  const NodeLevels* levels = host_.levels != nullptr ? &own_->levels : nullptr;
  DeviceStreamResources& resources = *own_->resources;
  if (*backend_ == DeviceBackend::kNccl) {
    for (StreamTransport* t : {ncclFlat_.get(), ncclNode_.get(), ncclCross_.get()}) {
      if (t != nullptr) t->useStream(resources.stream());
    }
    transport = ncclFlat_.get();
    levels = host_.levels != nullptr ? &ncclLevels_ : nullptr;
  }
  Context ctx{*transport, own_->scratch,       levels,         *host_.native,
              &*cluster_, resources.kernels(), host_.nextTag()};
  ctx.ran = ran;
  ZCCL_CHECK(zccl::runCollective(ctx, collective, args, options));
  return resources.synchronize();
}

// Always staged: one side of a pair cannot know whether the other made its NCCL
// communicators yet.
Status DeviceEngine::runMessages(const std::vector<PeerMessage>& messages) {
  ZCCL_CHECK(exchangeMessages(*own_->transport, messages, kPointToPointTag));
  return own_->resources->synchronize();
}

}  // namespace zccl
