// Collectives on device memory (a call with a stream): the buffers' memory checked against
// the stream, then the registry's algorithms run with the device's kernels and scratch over
// staged transports that carry device messages through page-locked host memory on the
// communicator's own transports (which count the bytes).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/cost_model.h"
#include "core/config.h"
#include "core/device_runtime.h"
#include "transport/nccl/nccl_transport.h"

struct zcclComm;

namespace zccl {

// Where a call's buffers must live: on the current device when `stream` is given, in host
// memory otherwise. `name` names the buffer in the error; a NULL buffer passes (its own
// check says what is wrong with it).
Status checkBufferMemory(const char* name, const void* buffer, void* stream);

// One communicator's device path, made at its first call with a stream.
class DevicePath {
 public:
  DevicePath(zcclComm& comm, DeviceRuntime& runtime);
  ~DevicePath();
  DevicePath(const DevicePath&) = delete;
  DevicePath& operator=(const DevicePath&) = delete;

  // Runs a collective on `stream`'s device: it waits for the work queued on the stream
  // before it, and returns when its own work there has finished.
  Status run(void* stream, Collective collective, const CollectiveArgs& args,
             const CollectiveOptions& options);

  // The device's kernel rates as this rank measured them (on the stream of its first device
  // collective, or on the default stream when asked before one).
  Status localRates(KernelRates* rates);

  // Every transport it made (staged per stream, NCCL), for abandon, abort and statistics.
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

  // Point-to-point on `stream` (always staged: one side of a pair cannot know whether the
  // other made its device path's NCCL communicators yet): the transport that carries device buffers
  // to the communicator's peers, after the stream's earlier work (waited for once per batch of
  // messages); completeMessages(stream) waits for the batch and the stream.
  Status messageTransport(void* stream, Transport** transport);
  Status completeMessages(void* stream);

 private:
  struct StreamState;
  Status stateFor(void* stream, StreamState** state);
  Status measureRates(DeviceStreamResources& resources);
  Status agreeOnRates(DeviceStreamResources& resources);
  Status chooseBackend();
  Status makeNcclTransports();

  zcclComm& comm_;
  DeviceRuntime& runtime_;
  ScratchPool scratch_;
  std::vector<std::unique_ptr<StreamState>> streams_;
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

// `comm`'s device path, made at its first call with a stream (the runtime is there: the
// call's stream passed checkStream).
Status devicePathOf(zcclComm* comm, DevicePath** out);

}  // namespace zccl
