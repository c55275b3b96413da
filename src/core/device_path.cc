#include "core/device_path.h"

#include <algorithm>

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

  void abandon() {
    for (Transport* t : {transport.get(), node.get(), cross.get()}) {
      if (t != nullptr) t->abandon();
    }
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

Status DevicePath::agreeOnRates(DeviceStreamResources& resources) {
  if (cluster_) return Status::kSuccess;
  ZCCL_CHECK(measureRates(resources));
  std::vector<KernelRates> all(static_cast<size_t>(comm_.size()));
  ZCCL_CHECK(comm_.transport->allGatherControl(&*measured_, sizeof(KernelRates), all.data()));
  ClusterModel cluster = comm_.cluster;
  cluster.quantizeBytesPerSecond = cluster.dequantizeBytesPerSecond = 1e300;
  for (const KernelRates& r : all) {
    cluster.quantizeBytesPerSecond = std::min(cluster.quantizeBytesPerSecond, r.quantize);
    cluster.dequantizeBytesPerSecond = std::min(cluster.dequantizeBytesPerSecond, r.dequantize);
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

Status DevicePath::run(void* stream, Collective collective, const CollectiveArgs& args,
                       const CollectiveOptions& options) {
  StreamState* s = nullptr;
  ZCCL_CHECK(stateFor(stream, &s));
  ZCCL_CHECK(agreeOnRates(*s->resources));  // at the first device collective of every rank
  ZCCL_CHECK(s->resources->synchronize());  // the stream's earlier work wrote the inputs
  const Context next = comm_.nextCollective(s->resources->kernels());
  Context ctx{*s->transport, scratch_,   comm_.hasLevels() ? &s->levels : nullptr,
              next.native,   &*cluster_, next.kernels,
              next.tag};

  Status status = runCollective(ctx, collective, args, options);
  if (status == Status::kSuccess) status = s->resources->synchronize();
  if (status != Status::kSuccess) s->abandon();  // its staging memory may still be in flight
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
