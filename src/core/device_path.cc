#include "core/device_path.h"

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "core/comm.h"

namespace zccl {

Status checkBufferMemory(const char* name, const void* buffer, void* stream) {
  DeviceRuntime* runtime = deviceRuntime();
  // Without a runtime every buffer is host memory, and a stream was refused by checkStream.
  if (buffer == nullptr || runtime == nullptr) return Status::kSuccess;
  PointerInfo info;
  ZCCL_CHECK(runtime->classify(buffer, &info));
  if (stream == nullptr) {
    if (info.kind == MemoryKind::kHost) return Status::kSuccess;
    return fail(Status::kInvalidArgument,
                "%s=%p is device memory but stream=NULL: pass the stream the collective runs on "
                "(NULL means host memory)",
                name, buffer);
  }
  if (info.kind == MemoryKind::kHost) {
    return fail(Status::kInvalidArgument,
                "%s=%p is host memory but stream=%p was given: host buffers take stream=NULL", name,
                buffer, stream);
  }
  int current = -1;
  ZCCL_CHECK(runtime->currentDevice(&current));
  if (info.device != current) {
    return fail(Status::kInvalidArgument, "%s=%p is on device %d, but the current device is %d",
                name, buffer, info.device, current);
  }
  return Status::kSuccess;
}

// The staged transports of one stream (their copies go on it), levels included.
struct DevicePath::StreamState {
  void* stream = nullptr;
  std::unique_ptr<DeviceStreamResources> resources;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Transport> node;
  std::unique_ptr<Transport> cross;
  NodeLevels levels;
  bool messagesPosted = false;  // point-to-point messages since the last completion

  // Its transports that exist (the levels only on a communicator with levels).
  std::vector<Transport*> transports() const {
    std::vector<Transport*> all;
    for (Transport* t : {transport.get(), node.get(), cross.get()}) {
      if (t != nullptr) all.push_back(t);
    }
    return all;
  }
  void abandon() const {
    for (Transport* t : transports()) t->abandon();
  }
};

DevicePath::DevicePath(zcclComm& comm, DeviceRuntime& runtime)
    : comm_(comm), runtime_(runtime), scratch_(runtime.scratchAllocator()) {}

DevicePath::~DevicePath() = default;

Status DevicePath::stateFor(void* stream, StreamState** state) {
  for (const auto& s : streams_) {
    if (s->stream != stream) continue;
    *state = s.get();
    return Status::kSuccess;
  }
  auto s = std::make_unique<StreamState>();
  s->stream = stream;
  ZCCL_CHECK(runtime_.forStream(stream, &s->resources));
  const StagedOptions options{comm_.config.stagedChunkBytes};
  DeviceCopier& copier = s->resources->copier();
  s->transport = makeStagedTransport(*comm_.transport, copier, options);
  if (comm_.hasLevels()) {
    s->node = makeStagedTransport(*comm_.nodeTransport, copier, options);
    s->cross = makeStagedTransport(*comm_.crossTransport, copier, options);
    s->levels = comm_.levels;
    s->levels.node = s->node.get();
    s->levels.cross = s->cross.get();
  }
  streams_.push_back(std::move(s));
  *state = streams_.back().get();
  return Status::kSuccess;
}

// 16 MiB of float32: large enough that a GPU's launch latency does not hide its rate.
constexpr size_t kRateSampleCount = size_t{1} << 22;

Status DevicePath::measureRates(DeviceStreamResources& resources) {
  if (measured_) return Status::kSuccess;
  const QuantParams params;
  const size_t messageBytes = quantizedBytes(kRateSampleCount, params);
  const ScratchAllocator allocator = runtime_.scratchAllocator();
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
    measured_ = measureKernelRates(kernels, data, buffers[2], messageBytes, accumulator,
                                   kRateSampleCount, [&] { return resources.synchronize(); });
  }
  for (void* buffer : buffers) {
    if (buffer != nullptr) allocator.release(buffer);
  }
  return status;
}

// A rank that could not measure still takes part, so that the others fail at once naming it
// instead of waiting for it until the timeout.
Status DevicePath::agreeOnRates(DeviceStreamResources& resources) {
  if (cluster_) return Status::kSuccess;
  struct Offer {
    KernelRates rates;
    int measured;
  };
  const Status measured = measureRates(resources);
  const std::string why = measured == Status::kSuccess ? "" : lastThreadError();
  const Offer mine{measured_.value_or(KernelRates{}), measured == Status::kSuccess ? 1 : 0};
  std::vector<Offer> all(static_cast<size_t>(comm_.size()));
  ZCCL_CHECK(comm_.transport->allGatherControl(&mine, sizeof(Offer), all.data()));
  if (measured != Status::kSuccess) {
    restoreThreadError(why);
    return measured;
  }
  ClusterModel cluster = comm_.cluster;
  cluster.quantizeBytesPerSecond = cluster.dequantizeBytesPerSecond = 1e300;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].measured == 0) {
      return fail(Status::kSystemError, "rank %zu could not measure its device's kernel rates", r);
    }
    cluster.quantizeBytesPerSecond =
        std::min(cluster.quantizeBytesPerSecond, all[r].rates.quantize);
    cluster.dequantizeBytesPerSecond =
        std::min(cluster.dequantizeBytesPerSecond, all[r].rates.dequantize);
  }
  cluster_ = cluster;
  return Status::kSuccess;
}

Status DevicePath::localRates(KernelRates* rates) {
  if (!measured_) {
    std::unique_ptr<DeviceStreamResources> defaultStream;
    ZCCL_CHECK(runtime_.forStream(nullptr, &defaultStream));
    ZCCL_CHECK(measureRates(*defaultStream));
  }
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

Status DevicePath::chooseBackend() {
  if (backend_) return Status::kSuccess;
  const DeviceBackend requested = comm_.config.deviceBackend;
  if (requested == DeviceBackend::kStaged) {
    backend_ = DeviceBackend::kStaged;
    return Status::kSuccess;
  }
  const NcclProbe mine = probeNccl(runtime_);
  std::vector<NcclProbe> all(static_cast<size_t>(comm_.size()));
  ZCCL_CHECK(comm_.transport->allGatherControl(&mine, sizeof(NcclProbe), all.data()));
  const std::string obstacle = ncclObstacle(all, comm_.processes);
  if (!obstacle.empty() && requested == DeviceBackend::kNccl) {
    return fail(Status::kInvalidUsage,
                "ZCCL_DEVICE_BACKEND=nccl: %s; staged (or auto) carries device memory without it",
                obstacle.c_str());
  }
  if (obstacle.empty()) ZCCL_CHECK(makeNcclTransports());
  backend_ = obstacle.empty() ? DeviceBackend::kNccl : DeviceBackend::kStaged;
  ZCCL_LOG(kInfo, "rank %d: device collectives %s", comm_.rank(),
           obstacle.empty() ? "over NCCL"
                            : ("staged through host memory (not NCCL: " + obstacle + ")").c_str());
  return Status::kSuccess;
}

Status DevicePath::makeNcclTransports() {
  const TransportOptions options{comm_.config.timeoutSeconds};
  const auto make = [&](Transport& control, std::unique_ptr<StreamTransport>* out) {
    ZCCL_CHECK(makeNcclTransport(control, options, out));
    std::vector<int> ranks(static_cast<size_t>(control.size()));
    for (int m = 0; m < control.size(); ++m) ranks[static_cast<size_t>(m)] = control.peerRank(m);
    (*out)->setPeerRanks(std::move(ranks));
    return Status::kSuccess;
  };
  ZCCL_CHECK(make(*comm_.transport, &ncclFlat_));
  if (!comm_.hasLevels()) return Status::kSuccess;
  ZCCL_CHECK(make(*comm_.nodeTransport, &ncclNode_));
  ZCCL_CHECK(make(*comm_.crossTransport, &ncclCross_));
  ncclLevels_ = comm_.levels;
  ncclLevels_.node = ncclNode_.get();
  ncclLevels_.cross = ncclCross_.get();
  return Status::kSuccess;
}

std::vector<Transport*> DevicePath::transports() const {
  std::vector<Transport*> all;
  for (const auto& s : streams_) {
    const std::vector<Transport*> staged = s->transports();
    all.insert(all.end(), staged.begin(), staged.end());
  }
  for (Transport* t :
       {static_cast<Transport*>(ncclFlat_.get()), static_cast<Transport*>(ncclNode_.get()),
        static_cast<Transport*>(ncclCross_.get())}) {
    if (t != nullptr) all.push_back(t);
  }
  return all;
}

Status DevicePath::run(void* stream, Collective collective, const CollectiveArgs& args,
                       const CollectiveOptions& options) {
  StreamState* s = nullptr;
  ZCCL_CHECK(stateFor(stream, &s));
  // At the first device collective of every rank (collective, in call order).
  ZCCL_CHECK(agreeOnRates(*s->resources));
  ZCCL_CHECK(chooseBackend());
  Transport* transport = s->transport.get();
  const NodeLevels* levels = comm_.hasLevels() ? &s->levels : nullptr;
  if (*backend_ == DeviceBackend::kNccl) {
    for (StreamTransport* t : {ncclFlat_.get(), ncclNode_.get(), ncclCross_.get()}) {
      if (t != nullptr) t->useStream(stream);
    }
    transport = ncclFlat_.get();
    levels = comm_.hasLevels() ? &ncclLevels_ : nullptr;
  }
  ZCCL_CHECK(s->resources->synchronize());  // the stream's earlier work wrote the inputs
  const Context next = comm_.nextCollective(s->resources->kernels());
  Context ctx{*transport, scratch_, levels, next.native, &*cluster_, next.kernels, next.tag};
  Status status = runCollective(ctx, collective, args, options);
  // A failure leaves the caller to abandon every transport of the communicator, these
  // included (zcclComm::transports): what is in flight may still touch their memory.
  if (status == Status::kSuccess) status = s->resources->synchronize();
  return status;
}

Status DevicePath::messageTransport(void* stream, Transport** transport) {
  StreamState* s = nullptr;
  ZCCL_CHECK(stateFor(stream, &s));
  if (!s->messagesPosted) {
    ZCCL_CHECK(s->resources->synchronize());  // the stream's earlier work wrote the buffers
    s->messagesPosted = true;
  }
  *transport = s->transport.get();
  return Status::kSuccess;
}

Status DevicePath::completeMessages(void* stream) {
  StreamState* s = nullptr;
  ZCCL_CHECK(stateFor(stream, &s));
  s->messagesPosted = false;
  Status status = s->transport->waitAll();
  if (status == Status::kSuccess) status = s->resources->synchronize();
  if (status != Status::kSuccess) s->abandon();
  return status;
}

Status devicePathOf(zcclComm* comm, DevicePath** out) {
  if (comm->device == nullptr) {
    DeviceRuntime* runtime = deviceRuntime();
    if (runtime == nullptr) {
      return fail(Status::kInternalError, "a device call passed its checks without a runtime");
    }
    comm->device = std::make_unique<DevicePath>(*comm, *runtime);
  }
  *out = comm->device.get();
  return Status::kSuccess;
}

}  // namespace zccl
