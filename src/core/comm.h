// The communicator behind zcclComm_t: transport, node map, configuration, statistics and
// scratch memory of one group of ranks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/cost_model.h"
#include "collectives/tuner.h"
#include "common/scratch.h"
#include "common/work_queue.h"
#include "core/config.h"
#include "core/request.h"
#include "device/device_engine.h"
#include "topology/node_map.h"
#include "transport/transport.h"
#include "zccl/zccl.h"

struct zcclComm {
  std::unique_ptr<zccl::Transport> transport;
  // Peers' notices of collectives they rejected, read through `transport`, checked by every
  // wait of this communicator's transports.
  std::unique_ptr<zccl::PeerNotices> notices;
  zccl::NodeMap nodes;
  std::vector<zccl::ProcessLocator> processes;  // by rank
  zccl::CommConfig config;
  zccl::ScratchPool scratch;
  std::string lastError;
  zccl::NativeCounters native;
  // Two-level algorithms run over these, when every node holds the same number of ranks.
  std::unique_ptr<zccl::Transport> nodeTransport;
  std::unique_ptr<zccl::Transport> crossTransport;
  zccl::NodeLevels levels;
  // The planner's view of the job, from every rank's topology.
  zccl::ClusterModel cluster;
  // A simulated job's machine (transport/sim): its links stand for every rank's topology, and
  // its kernels are priced in virtual time (core/sim_comms.cc); else the host's.
  std::shared_ptr<const zccl::NodeTopology> modelledTopology;
  zccl::Kernels* simulatedKernels = nullptr;
  zccl::Kernels& hostKernels() const {
    return simulatedKernels != nullptr ? *simulatedKernels : zccl::hostKernels();
  }
  // The measured choices of calls that allow a lossy format (ZCCL_TUNE).
  zccl::PlanTuner tuner;
  // zcclCommSplitNode / zcclCommSplitCrossNode, created on first use and owned here.
  std::unique_ptr<zcclComm> nodeComm;
  std::unique_ptr<zcclComm> crossComm;
  bool ownedByParent = false;

  int rank() const { return transport->rank(); }
  int size() const { return transport->size(); }
  bool hasLevels() const { return nodeTransport != nullptr; }
  // Collectives called so far: every message of the next one carries a tag of its own, so
  // that a leftover message of a mismatched call never matches a later one.
  uint64_t collectiveSequence = 0;
  // Entry points running on this communicator now (abort waits for them to leave).
  std::atomic<int> activeCalls{0};
  // Collectives on device memory, made at the first call with a stream. Its staged
  // transports carry their messages over the transports above.
  std::unique_ptr<zccl::DeviceEngine> device;
  // The communicator's own thread, which runs the work of calls that return before it ends.
  // Declared last: stopped first, while what its jobs use is still there.
  zccl::WorkQueue work;

  // The tag of the next collective call.
  int nextTag();
  // The context of the next collective call (which takes the next tag), which peers' notices
  // may fail until leaveCollective().
  zccl::Context nextCollective(zccl::Kernels& kernels);
  void enterCollective();  // the next collective, before it takes its tag
  // Its end, with how it ended: a failure a peer's notice explains becomes that notice's.
  zccl::Status leaveCollective(zccl::Status outcome);
  // A collective this rank rejected for `reason`: it takes the collective's number as one
  // that ran would, and its peers are told, so that their calls to it fail at once instead of
  // waiting for this rank until the timeout. The thread's error is kept.
  void tellPeersRejected(const std::string& reason);
  // After a call failed past its checks: names `call` in the error, and abandons every
  // transport of this communicator (what is in flight may be left by peers that are gone).
  void abandonAfterFailure(const std::string& call);
  // Whether a transport of this communicator may not be used from another thread than the
  // program's (MPI below MPI_THREAD_MULTIPLE): queued work then runs on the caller's thread.
  bool transportsNeedCallersThread() const;
  // Every transport of this communicator (levels and the device path's included) and,
  // withOwned, of the sub-communicators it owns.
  std::vector<zccl::Transport*> transports(bool withOwned);
  zcclLinkClass_t linkTo(int peer) const;
  // "; rank 3 (pid 1234) has exited" for the ranks of this machine that are gone, or "".
  std::string exitedRanks() const;
  // This rank's traffic per parent peer: its own transport's plus the level transports'.
  std::vector<zccl::PeerTraffic> trafficByPeer() const;
  // The counts zcclCommGetStats reports, as they stand (work queued on this communicator's
  // thread may still be adding to them).
  zcclStats statsNow() const;
  void resetTraffic();
};

namespace zccl {

// A communicator over `transport`, whichever engine moves its bytes (collective over the
// transport's ranks): node map from every rank's host, node levels, cluster model.
// `configured` is whether this rank's configuration resolved (lastThreadError() says why
// not): a rank that failed still takes part, so that every rank fails naming it.
// `modelled`: the links of a simulated machine, which every rank plans with instead of its
// own topology (null: the discovered one).
Status createComm(std::unique_ptr<Transport> transport, const CommConfig& config, Status configured,
                  zcclComm** out, std::shared_ptr<const NodeTopology> modelled = nullptr);

// `comm`'s device engine, made at its first call with a stream (the runtime is there: the
// call's stream passed checkStream).
Status deviceEngineOf(zcclComm* comm, DeviceEngine** out);

// Hands `work`, a call on `comm`'s host transports, to `comm`'s own thread (or runs it on the
// caller's, once the queue is drained, where a transport may not be used from another thread).
// A failure names `call` and abandons the transports, as a blocking call's does. `done`
// (may be empty) is told how the work ended. kSuccess once the work was accepted; a failure
// when the queue refused it (the communicator failed or was aborted before).
Status queueHostWork(zcclComm* comm, const std::string& call, std::function<Status()> work,
                     std::function<void(const JobOutcome&)> done);

// Waits for the work queued on `comm`'s own thread before a call that uses its transports on
// the caller's thread; the first failure of that work.
Status drainQueuedWork(zcclComm* comm);

// Ranks of `parent` with the same color >= 0 form a new communicator ordered by (key, rank);
// color < 0 gives *out = nullptr. `config` (may be null) over the parent's configuration.
Status splitComm(zcclComm* parent, int color, int key, const zcclConfig* config, zcclComm** out);

// The cached node or cross-node sub-communicator of `parent`, created on first use.
Status cachedSplit(zcclComm* parent, bool crossNode, zcclComm** out);

// Live handles: a communicator is registered from creation until destroy or abort, so that
// a call on a destroyed or never-created one is refused instead of touching freed memory.
// acquireComm counts the call in comm->activeCalls while the handle is live.
bool acquireComm(zcclComm* comm);
void releaseComm(zcclComm* comm);
// Unregisters `comm` and its owned sub-communicators; false when it was not live.
bool retireComm(zcclComm* comm);

// Ends a communicator whose peers may be gone: asks every wait in progress (other threads)
// to end, waits for them to leave, cancels what is pending, and frees the communicator
// unless the transport could not confirm the cancellation: then its memory (scratch
// buffers, the transport itself) is kept for the life of the process instead.
void abortComm(zcclComm* comm);

// This process's node topology (discovered once: the live machine or ZCCL_TOPO_FILE).
Status localTopology(const NodeTopology** topology);

}  // namespace zccl
