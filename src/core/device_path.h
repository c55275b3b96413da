// Collectives and point-to-point messages on device memory (calls with a stream). A call
// checks its buffers' memory against the stream, closes a gate on the stream and hands its
// work to the communicator's device thread (core/device_queue.h), then returns. The thread
// runs the work on a stream of its own after the caller's stream's earlier work, with the
// registry's algorithms, the device's kernels and scratch, over NCCL or over staged transports
// that carry device messages through page-locked host memory on the communicator's own
// transports (which count the bytes), and opens the gate when the work has finished.
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
#include "core/config.h"
#include "core/device_queue.h"
#include "core/device_runtime.h"
#include "transport/nccl/nccl_transport.h"

struct zcclComm;

namespace zccl {

// Where a call's buffers must live: on the current device when `stream` is given, in host
// memory otherwise. `name` names the buffer in the error; a NULL buffer passes (its own
// check says what is wrong with it).
Status checkBufferMemory(const char* name, const void* buffer, void* stream);

// One point-to-point message of a batch on device memory.
struct DeviceMessage {
  bool isSend;
  void* buffer;
  size_t bytes;
  int peer;
};

// One communicator's device path, made at its first call with a stream, on the device that
// is current then.
class DevicePath {
 public:
  DevicePath(zcclComm& comm, DeviceRuntime& runtime);
  ~DevicePath();  // stop()
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;
  // On the thread of the first call with a stream, whose current device it takes.
  Status start();

  // On the caller's thread. Each queues its work on `stream` and returns: the work runs after
  // the stream's earlier work, and the stream's later work after it. The work runs on the
  // caller's thread instead, and the call returns when it has finished, with
  // ZCCL_DEVICE_BLOCKING=1 or where a host transport may not be used from another thread
  // (MPI below MPI_THREAD_MULTIPLE). `call` names the call in errors.
  Status enqueueCollective(void* stream, const std::string& call, Collective collective,
                           const CollectiveArgs& args, const CollectiveOptions& options);
  // A batch of messages (a group's, or one outside a group), posted together and completed
  // together.
  Status enqueueMessages(void* stream, std::vector<DeviceMessage> messages);

  // Waits until the work queued so far has finished; the first failure of any of it. The
  // communicator's transports may be used on the caller's thread once it returned.
  Status drain() { return queue_.drain(); }
  // The first failure of the work queued so far, without waiting.
  Status failure() const { return queue_.failure(); }
  // Asks its transports' waits to end, and makes no more transports (abort).
  void requestAbort();
  // Ends the device thread: the running work ends soon after requestAbort(), the rest is
  // skipped; every gate opens.
  void stop();

  // The device's kernel rates as this rank measured them (at its first device collective, or
  // now), waited for.
  Status localRates(KernelRates* rates);

  // Every transport it made (staged, NCCL), for abandon, abort and statistics: read only
  // after drain() or stop().
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
  Status submit(void* stream, std::function<Status()> work);
  // On the device thread (or the caller's, when the work runs there).
  Status prepare();
  template <typename Adopt>
  Status publish(Adopt&& adopt);
  Status runCollective(Collective collective, const CollectiveArgs& args,
                       const CollectiveOptions& options);
  Status runMessages(const std::vector<DeviceMessage>& messages);
  void failed(const std::string& call);
  Status measureRates();
  Status agreeOnRates();
  Status chooseBackend();
  Status makeNcclTransports();
  std::vector<Transport*> transportsLocked() const;

  zcclComm& comm_;
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
  // Declared last: destroyed (stopped) first, while what its jobs use is still there.
  DeviceQueue queue_;
};

// `comm`'s device path, made at its first call with a stream (the runtime is there: the
// call's stream passed checkStream).
Status devicePathOf(zcclComm* comm, DevicePath** out);

// Waits for `comm`'s device work (where it has a device path) before a call that uses its
// transports on the caller's thread; the first failure of that work.
Status drainDeviceWork(zcclComm* comm);

}  // namespace zccl
