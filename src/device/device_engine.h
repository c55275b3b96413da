// The device engine: collectives and point-to-point messages on device memory (calls with a
// stream) for one communicator. A call closes a gate on its stream and hands its work to the
// communicator's own thread (common/work_queue.h), then returns. The thread runs the work on a
// stream of zccl's own after the caller's stream's earlier work, with the registry's
// algorithms, the device's kernels and scratch, over NCCL or over staged transports that carry
// device messages through page-locked host memory on the communicator's host transports (which
// count the bytes), and opens the gate when the work has finished. It sees the communicator
// only through DeviceHost.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/cost_model.h"
#include "common/work_queue.h"
#include "device/device_runtime.h"
#include "topology/node_map.h"
#include "transport/nccl/nccl_transport.h"

namespace zccl {

// How device collectives move their messages (ZCCL_DEVICE_BACKEND): NCCL between GPUs, or
// staged through page-locked host memory over the host transport; auto takes NCCL where every
// rank can load it and has a GPU of its own, else staged.
enum class DeviceBackend : int { kAuto = 0, kStaged = 1, kNccl = 2 };

struct DeviceOptions {
  DeviceBackend backend = DeviceBackend::kAuto;
  // The staged path cuts device messages into chunks of this size (ZCCL_STAGED_CHUNK_BYTES),
  // the copy of one overlapping the transfer of the one before.
  size_t stagedChunkBytes = size_t{1} << 20;
  // A call runs its work itself and returns once it has finished (ZCCL_DEVICE_BLOCKING=1, as
  // CUDA_LAUNCH_BLOCKING, or where a host transport may not be used from another thread): its
  // own failure is then its result.
  bool blocking = false;
  double timeoutSeconds = 1800;
};

// What the engine needs of the communicator it serves. Everything it points to outlives the
// engine.
struct DeviceHost {
  Transport* transport = nullptr;      // over every rank: the staged transport's carrier
  const NodeLevels* levels = nullptr;  // the host node levels, or null (nodes differ in size)
  const std::vector<ProcessLocator>* processes = nullptr;  // by rank
  const ClusterModel* cluster = nullptr;                   // the host's cost model
  NativeCounters* native = nullptr;
  WorkQueue* queue = nullptr;  // the communicator's own thread
  DeviceOptions options;
  // The tag of the next collective, shared with the communicator's host calls.
  std::function<int()> nextTag;
  // After a job failed, on the thread that ran it: names the call in the error and abandons
  // every transport of the communicator (the engine's too).
  std::function<void(const std::string& call)> failed;
};

// Told, on the thread that runs a queued collective, just before it runs and how it ended,
// with the path it took (a call's record, core/call_trace.h). Either may be empty.
struct CollectiveObserver {
  std::function<void()> started;
  std::function<void(Status, const Plan&)> ended;
};

// One communicator's device engine, made at its first call with a stream, on the device that
// is current then.
class DeviceEngine {
 public:
  DeviceEngine(DeviceHost host, DeviceRuntime& runtime);
  ~DeviceEngine();  // releaseGates()
  DeviceEngine(const DeviceEngine&) = delete;
  DeviceEngine& operator=(const DeviceEngine&) = delete;
  // On the thread of the first call with a stream, whose current device it takes.
  Status start();

  // On the caller's thread. Each queues its work on `stream` and returns: the work runs after
  // the stream's earlier work, and the stream's later work after it. The work runs on the
  // caller's thread instead, and the call returns when it has finished, with
  // DeviceOptions::blocking or where a host transport may not be used from another thread
  // (MPI below MPI_THREAD_MULTIPLE). `call` names the call in errors.
  // `done` (may be empty) is told how the work ended, after its gate opened; `observer`, when
  // it ran.
  Status enqueueCollective(void* stream, const std::string& call, Collective collective,
                           const CollectiveArgs& args, const CollectiveOptions& options,
                           CollectiveObserver observer = {},
                           std::function<void(const JobOutcome&)> done = {});
  // A batch of messages (a group's, or one outside a group), posted together and completed
  // together.
  Status enqueueMessages(void* stream, std::vector<PeerMessage> messages);

  // Asks its transports' waits to end, and makes no more transports (abort).
  void requestAbort();
  // Once the queue has stopped: opens every gate it closed.
  void releaseGates();

  // The device's kernel rates as this rank measured them (at its first device collective, or
  // now); the queue must be drained.
  Status localRates(KernelRates* rates);

  // Every transport it made (staged, NCCL), for abandon, abort and statistics: read only
  // after the queue was drained or stopped.
  std::vector<Transport*> transports() const;

  // Its NCCL transports (null where not made), whose traffic the communicator's statistics
  // fold in like its own transports'.
  struct LevelTransports {
    Transport* flat;
    Transport* node;
    Transport* cross;
  };
  LevelTransports ncclTransports() const {
    return {ncclFlat_.get(), ncclNode_.get(), ncclCross_.get()};
  }

 private:
  struct OwnStream;

  Status checkDevice() const;
  Status submit(void* stream, std::function<Status()> work,
                std::function<void(const JobOutcome&)> done = {});
  // On the communicator's thread (or the caller's, when the work runs there).
  Status prepare();
  template <typename Adopt>
  Status publish(Adopt&& adopt);
  // `ran` (may be null) is told the path it took.
  Status runCollective(Collective collective, const CollectiveArgs& args,
                       const CollectiveOptions& options, Plan* ran);
  Status runMessages(const std::vector<PeerMessage>& messages);
  void failed(const std::string& call);
  Status measureRates();
  Status agreeOnRates();
  Status chooseBackend();
  Status makeNcclTransports();
  std::vector<Transport*> transportsLocked() const;

  DeviceHost host_;
  DeviceRuntime& runtime_;
  int device_ = -1;  // the device current at the first call
  bool onCallersThread_ = false;
  std::unique_ptr<StreamGates> gates_;
  std::mutex submitMutex_;  // tickets are issued in the queue's order
  uint64_t tickets_ = 0;    // issued so far
  // Guards the transports' becoming the communicator's against abort (publish).
  mutable std::mutex transportsMutex_;
  bool stopping_ = false;
  // What the work runs on: zccl's own stream, scratch, staged transports. Made by the first
  // work (or localRates).
  std::unique_ptr<OwnStream> own_;
  std::optional<KernelRates> measured_;  // this rank's
  // The communicator's cost model with the slowest rank's device rates: device calls plan
  // with it, so that a GPU's speed, not the host CPU's, prices their quantization.
  std::optional<ClusterModel> cluster_;
  // Chosen at the first device collective, the same on every rank: NCCL's transports (one
  // per level), or none (staged).
  std::optional<DeviceBackend> backend_;
  std::unique_ptr<StreamTransport> ncclFlat_, ncclNode_, ncclCross_;
  NodeLevels ncclLevels_;
};

}  // namespace zccl
