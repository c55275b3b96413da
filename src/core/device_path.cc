#include "core/device_path.h"

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

Status DevicePath::run(void* stream, Collective collective, const CollectiveArgs& args,
                       const CollectiveOptions& options) {
  StreamState* s = nullptr;
  ZCCL_CHECK(stateFor(stream, &s));
  ZCCL_CHECK(s->resources->synchronize());  // the stream's earlier work wrote the inputs
  const Context next = comm_.nextCollective(s->resources->kernels());
  Context ctx{*s->transport, scratch_,     comm_.hasLevels() ? &s->levels : nullptr,
              next.native,   next.cluster, next.kernels,
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
