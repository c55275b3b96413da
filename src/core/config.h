// A communicator's configuration: zcclConfig over the ZCCL_* environment over the defaults,
// and the options of one call over the communicator's.
#pragma once

#include "collectives/paths.h"
#include "common/status.h"
#include "device/device_engine.h"
#include "zccl/zccl.h"

namespace zccl {

// Which engine moves a communicator's host memory (ZCCL_TRANSPORT).
enum class TransportKind : int { kAuto = 0, kMpi = 1, kUcx = 2 };

struct CommConfig {
  CollectiveOptions collective;  // defaults of every collective call but their wire format
  // The wire format of calls that name none (config.wireFormat, ZCCL_QUANT, or set later).
  zcclWirePolicy wirePolicy = ZCCL_WIRE_POLICY_INITIALIZER;
  int ranksPerNode = 0;  // 0: nodes are hosts
  double timeoutSeconds = 1800;
  bool checkCalls = false;  // agree on every collective's arguments first (ZCCL_CHECK)
  TransportKind transport = TransportKind::kAuto;
  DeviceBackend deviceBackend = DeviceBackend::kAuto;
  // The staged path cuts device messages into chunks of this size (ZCCL_STAGED_CHUNK_BYTES),
  // the copy of one overlapping the transfer of the one before.
  size_t stagedChunkBytes = size_t{1} << 20;
  // A call with a stream returns once its work has finished instead of once it is queued
  // (ZCCL_DEVICE_BLOCKING=1, for debugging, as CUDA_LAUNCH_BLOCKING): its own failure is then
  // its result.
  bool deviceBlocking = false;
  // Calls that allow a lossy format time their candidate paths at first and keep the fastest
  // (ZCCL_TUNE=1, the default), instead of the cost model's choice alone.
  bool tunePlans = true;
  // Host calls without a request return once queued (config.blocking=0, ZCCL_BLOCKING=0).
  bool blocking = true;
  // UCX may copy large messages between the processes of a host with CMA (ZCCL_UCX_CMA=1).
  bool ucxCrossMemoryAttach = false;

  TransportOptions transportOptions() const {
    return TransportOptions{timeoutSeconds, ucxCrossMemoryAttach};
  }

  DeviceOptions deviceOptions() const {
    return DeviceOptions{deviceBackend, stagedChunkBytes, deviceBlocking, timeoutSeconds};
  }
};

// Resolves `config` (may be null) over the ZCCL_* environment and the defaults.
Status resolveConfig(const zcclConfig* config, CommConfig* resolved);

// The options of one call of `collective` whose buffer (what all ranks hold together) is
// `bytes` long: `options` (may be null) over the communicator's defaults and wire policy.
Status resolveCollOptions(const zcclCollOptions* options, const CommConfig& config,
                          Collective collective, size_t bytes, CollectiveOptions* resolved);

// `policy`'s fields checked, naming the one out of range.
Status checkWirePolicy(const zcclWirePolicy& policy);

}  // namespace zccl
