// The communicator (comm.h): creation (agreement on the configuration, node map, levels,
// cost model), sub-communicators, live handles, statistics and abort.
#include "core/comm.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>

#include "common/log.h"

zcclLinkClass_t zcclComm::linkTo(int peer) const {
  if (peer == rank()) return zcclLinkSelf;
  return nodes.sameNode(peer, rank()) ? zcclLinkIntraNode : zcclLinkInterNode;
}

zcclStats zcclComm::statsNow() const {
  zcclStats stats{};
  const auto traffic = trafficByPeer();
  for (int peer = 0; peer < size(); ++peer) {
    const zcclLinkClass_t link = linkTo(peer);
    stats.bytesSent[link] += traffic[peer].bytes;
    stats.messagesSent[link] += traffic[peer].messages;
  }
  stats.nativeBytesEstimated = native.bytesEstimated;
  stats.nativeCalls = native.calls;
  return stats;
}

std::vector<zccl::PeerTraffic> zcclComm::trafficByPeer() const {
  std::vector<zccl::PeerTraffic> all = transport->traffic();
  const auto fold = [&](const zccl::Transport& level, auto parentOf) {
    const auto& traffic = level.traffic();
    for (size_t member = 0; member < traffic.size(); ++member) {
      zccl::PeerTraffic& into = all[static_cast<size_t>(parentOf(static_cast<int>(member)))];
      into.bytes += traffic[member].bytes;
      into.messages += traffic[member].messages;
    }
  };
  const auto foldLevels = [&](const zccl::Transport* node, const zccl::Transport* cross) {
    if (node != nullptr) {
      fold(*node, [&](int local) { return levels.rankAt(levels.myNode, local); });
    }
    if (cross != nullptr) {
      fold(*cross, [&](int node) { return levels.rankAt(node, levels.myLocal); });
    }
  };
  foldLevels(nodeTransport.get(), crossTransport.get());
  if (device != nullptr) {
    const auto nccl = device->ncclTransports();
    if (nccl.flat != nullptr) fold(*nccl.flat, [](int rank) { return rank; });
    foldLevels(nccl.node, nccl.cross);
  }
  return all;
}

std::string zcclComm::exitedRanks() const {
  std::string gone;
  for (size_t r = 0; r < processes.size(); ++r) {
    if (!zccl::processHasExited(processes[r])) continue;
    gone += "; rank " + std::to_string(r) + " (pid " + std::to_string(processes[r].pid) +
            ") has exited";
  }
  return gone;
}

int zcclComm::nextTag() {
  // Tag 0 is zcclSend/zcclRecv's; collectives cycle through 1..maxTag.
  return 1 + static_cast<int>(collectiveSequence++ % static_cast<uint64_t>(transport->maxTag()));
}

zccl::Context zcclComm::nextCollective(zccl::Kernels& kernels) {
  enterCollective();
  return zccl::Context{*transport, scratch,   hasLevels() ? &levels : nullptr,    native, &cluster,
                       kernels,    nextTag(), config.tunePlans ? &tuner : nullptr};
}

void zcclComm::enterCollective() {
  if (notices != nullptr) notices->enter(collectiveSequence);
}

zccl::Status zcclComm::leaveCollective(zccl::Status outcome) {
  if (notices == nullptr) return outcome;
  const zccl::Status explained = notices->explain(outcome);
  notices->leave();
  return explained;
}

void zcclComm::tellPeersRejected(const std::string& reason) {
  if (notices == nullptr) return;
  // A copy: draining may set the thread's error again.
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization)
  const std::string error = zccl::lastThreadError();
  // In order: the work queued before this call takes its numbers first.
  const zccl::Status drained = zccl::drainQueuedWork(this);
  zccl::restoreThreadError(error);
  if (drained != zccl::Status::kSuccess) return;
  notices->tellPeers(collectiveSequence++, reason);
}

bool zcclComm::transportsNeedCallersThread() const {
  bool needed = !transport->allowsOtherThreads();
  if (hasLevels()) {
    needed |= !nodeTransport->allowsOtherThreads() || !crossTransport->allowsOtherThreads();
  }
  return needed;
}

void zcclComm::abandonAfterFailure(const std::string& call) {
  zccl::addErrorContext(call, exitedRanks());
  for (zccl::Transport* t : transports(/*withOwned=*/false)) t->abandon();
}

std::vector<zccl::Transport*> zcclComm::transports(bool withOwned) {
  std::vector<zccl::Transport*> all{transport.get()};
  if (hasLevels()) {
    all.push_back(nodeTransport.get());
    all.push_back(crossTransport.get());
  }
  if (device != nullptr) {
    const auto theirs = device->transports();
    all.insert(all.end(), theirs.begin(), theirs.end());
  }
  for (zcclComm* owned : {nodeComm.get(), crossComm.get()}) {
    if (owned == nullptr || !withOwned) continue;
    const auto theirs = owned->transports(true);
    all.insert(all.end(), theirs.begin(), theirs.end());
  }
  return all;
}

void zcclComm::resetTraffic() {
  for (zccl::Transport* t : transports(/*withOwned=*/false)) t->resetTraffic();
  native = zccl::NativeCounters{};
}

namespace zccl {
namespace {

// Every rank's host identity and process over the control channel, then the map
// (collective).
Status discoverNodes(zcclComm* comm) {
  struct Identity {
    uint64_t host;
    ProcessLocator process;
  };
  const Identity mine{localHostIdentity(), localProcess()};
  std::vector<Identity> all(static_cast<size_t>(comm->size()));
  ZCCL_CHECK(comm->transport->allGatherControl(&mine, sizeof(mine), all.data()));
  std::vector<uint64_t> hosts;
  int ranksOnThisMachine = 0;
  for (const Identity& identity : all) {
    hosts.push_back(identity.host);
    comm->processes.push_back(identity.process);
    if (identity.process.kernel == mine.process.kernel) ++ranksOnThisMachine;
  }
  noteRanksOnThisMachine(ranksOnThisMachine);
  comm->nodes = nodeMapFromHosts(hosts, comm->config.ranksPerNode);
  return Status::kSuccess;
}

void announceEmulation(const zcclComm& comm) {
  static std::atomic<bool> announced{false};
  // A simulated machine's nodes are the model's own, not an emulation of this host's.
  if (comm.config.ranksPerNode <= 0 || comm.modelledTopology != nullptr) return;
  if (comm.rank() != 0 || announced.exchange(true)) return;
  // A warning, once per process: byte counts per link class mean something else under
  // emulation.
  ZCCL_LOG(kWarn,
           "ZCCL_RANKS_PER_NODE=%d: emulating %d nodes of up to %d consecutive ranks; "
           "intra/inter-node statistics follow this map, not the hardware",
           comm.config.ranksPerNode, comm.nodes.numNodes(), comm.config.ranksPerNode);
}

// Creates the node and cross-node transports when the nodes are of equal size (collective).
Status buildLevels(zcclComm* comm) {
  const NodeMap& nodes = comm->nodes;
  if (!nodes.isUniform()) return Status::kSuccess;  // every rank agrees: same map
  const int me = comm->rank();
  NodeLevels& levels = comm->levels;
  levels.numNodes = nodes.numNodes();
  levels.ranksPerNode = nodes.localSize(me);
  levels.myNode = nodes.nodeOf(me);
  levels.myLocal = nodes.localRank(me);
  levels.ranks.clear();
  for (int node = 0; node < levels.numNodes; ++node) {
    for (int local = 0; local < levels.ranksPerNode; ++local) {
      levels.ranks.push_back(nodes.rankAt(node, local));
    }
  }
  ZCCL_CHECK(comm->transport->split(levels.myNode, levels.myLocal, &comm->nodeTransport));
  ZCCL_CHECK(comm->transport->split(levels.myLocal, levels.myNode, &comm->crossTransport));
  levels.node = comm->nodeTransport.get();
  levels.cross = comm->crossTransport.get();
  std::vector<int> nodeRanks, crossRanks;
  for (int local = 0; local < levels.ranksPerNode; ++local)
    nodeRanks.push_back(levels.rankAt(levels.myNode, local));
  for (int node = 0; node < levels.numNodes; ++node)
    crossRanks.push_back(levels.rankAt(node, levels.myLocal));
  comm->nodeTransport->setPeerRanks(std::move(nodeRanks));
  comm->crossTransport->setPeerRanks(std::move(crossRanks));
  return Status::kSuccess;
}

// Every wait of the communicator's transports checks its peers' notices.
void installNotices(zcclComm* comm) {
  comm->notices = std::make_unique<PeerNotices>(*comm->transport);
  for (Transport* t : comm->transports(/*withOwned=*/false)) t->setPeerNotices(comm->notices.get());
}

}  // namespace

Status localTopology(const NodeTopology** topology) {
  static std::mutex mutex;
  static NodeTopology node;
  static bool discovered = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!discovered) {
    TopologyOptions options;
    ZCCL_CHECK(topologyOptionsFromEnvironment(&options));
    const Status status = discoverTopology(options, &node);
    // A file the user named must load; a live machine hwloc cannot read (a restricted
    // container) still gets a communicator, planned with the default link estimates.
    if (status != Status::kSuccess && !options.xmlPath.empty()) return status;
    if (status != Status::kSuccess) node = undiscoveredTopology(options);
    discovered = true;
  }
  *topology = &node;
  return Status::kSuccess;
}

namespace {

// The cluster model from every rank's topology and the node map (collective).
Status buildClusterModel(zcclComm* comm) {
  const NodeTopology* mine = comm->modelledTopology.get();
  if (mine == nullptr) ZCCL_CHECK(localTopology(&mine));
  struct Summary {
    int intraClass, interClass, interRails, nodesPerLeaf, nodesPerPod;
    double intraGBps, interGBps, fabricShare, podFabricShare;
    KernelRates kernels;
  };
  // This process's kernel rates are measured; they differ between ranks (and runs), so they
  // are agreed on with the links.
  ClusterModel measured;
  measureHostRates(&measured);
  const Summary local{static_cast<int>(mine->intraNode),
                      static_cast<int>(mine->interNode),
                      mine->interNodeRails,
                      mine->nodesPerLeaf,
                      mine->nodesPerPod,
                      mine->intraNodeGBps,
                      mine->interNodeGBps,
                      mine->interNodeFabricShare,
                      mine->podFabricShare,
                      measured.kernels};
  std::vector<Summary> all(static_cast<size_t>(comm->size()));
  ZCCL_CHECK(comm->transport->allGatherControl(&local, sizeof(Summary), all.data()));
  // Every rank plans with the slowest link of each class and the slowest kernels in the job,
  // so all plans agree (ranks that chose differently would exchange unreadable messages).
  NodeTopology slowest;
  slowest.intraNodeGBps = slowest.interNodeGBps = 1e300;
  slowest.interNodeRails = all[0].interRails;
  slowest.nodesPerLeaf = all[0].nodesPerLeaf;
  slowest.nodesPerPod = all[0].nodesPerPod;
  KernelRates kernels = all[0].kernels;
  for (const Summary& s : all) {
    slowest.interNodeRails = std::min(slowest.interNodeRails, s.interRails);
    slowest.interNodeFabricShare = std::min(slowest.interNodeFabricShare, s.fabricShare);
    slowest.podFabricShare = std::min(slowest.podFabricShare, s.podFabricShare);
    // The smaller group leaves more of its traffic to the uplinks; a leaf not known, all of it.
    slowest.nodesPerLeaf = std::min(slowest.nodesPerLeaf, s.nodesPerLeaf);
    if (s.nodesPerPod > 0 && (slowest.nodesPerPod == 0 || s.nodesPerPod < slowest.nodesPerPod)) {
      slowest.nodesPerPod = s.nodesPerPod;
    }
    kernels = slowerOf(kernels, s.kernels);
    if (s.intraGBps < slowest.intraNodeGBps) {
      slowest.intraNodeGBps = s.intraGBps;
      slowest.intraNode = static_cast<LinkClass>(s.intraClass);
    }
    if (s.interGBps < slowest.interNodeGBps) {
      slowest.interNodeGBps = s.interGBps;
      slowest.interNode = static_cast<LinkClass>(s.interClass);
    }
  }
  const NodeMap& nodes = comm->nodes;
  const int perNode = std::max(1, comm->size() / nodes.numNodes());
  comm->cluster = clusterModel(slowest, nodes.numNodes(), perNode, nodes.isUniform());
  comm->cluster.kernels = kernels;
  return Status::kSuccess;
}

// The handles of live communicators, and the communicators kept after an abort whose
// transport could not confirm the cancellation of what was pending. Both live as long as
// the process: they are never destroyed, so that no exit-time destructor calls into MPI.
struct Handles {
  std::mutex mutex;
  std::unordered_set<const zcclComm*> live;
  std::vector<std::unique_ptr<zcclComm>> kept;
};

Handles& handles() {
  static Handles* all = new Handles;
  return *all;
}

void registerComm(zcclComm* comm) {
  std::lock_guard<std::mutex> lock(handles().mutex);
  handles().live.insert(comm);
}

// The highest collective sequence any communicator this process ended had reached.
std::atomic<uint64_t>& retiredSequence() {
  static std::atomic<uint64_t> sequence{0};
  return sequence;
}

void retireSequence(const zcclComm& comm) {
  uint64_t seen = retiredSequence().load();
  while (seen < comm.collectiveSequence &&
         !retiredSequence().compare_exchange_weak(seen, comm.collectiveSequence)) {
  }
  for (const zcclComm* owned : {comm.nodeComm.get(), comm.crossComm.get()}) {
    if (owned != nullptr) retireSequence(*owned);
  }
}

// Every rank tells the others whether its own preparation (`local`, with the message of its
// failure) succeeded, so that a failure on one rank fails setup on all instead of leaving
// them waiting (collective over `transport`). They also agree on where the new
// communicator's tags start: past every tag the communicators this process has ended used, so
// that messages left behind on an MPI context id that MPI reuses never match.
Status agreeOnInit(Transport& transport, Status local, const std::string& message,
                   uint64_t* sequenceBase) {
  struct Report {
    uint64_t retiredSequence;
    int32_t status;
    char message[244];
  };
  Report mine{retiredSequence().load(), static_cast<int32_t>(local), {}};
  std::strncpy(mine.message, message.c_str(), sizeof(mine.message) - 1);
  std::vector<Report> all(static_cast<size_t>(transport.size()));
  ZCCL_CHECK(transport.allGatherControl(&mine, sizeof(mine), all.data()));
  if (local != Status::kSuccess) {
    restoreThreadError(message);
    return local;
  }
  *sequenceBase = 0;
  for (const Report& report : all) *sequenceBase = std::max(*sequenceBase, report.retiredSequence);
  for (int r = 0; r < transport.size(); ++r) {
    const Report& report = all[static_cast<size_t>(r)];
    if (report.status != static_cast<int32_t>(Status::kSuccess)) {
      return fail(Status::kInvalidUsage, "rank %d could not set up the communicator: %.*s", r,
                  static_cast<int>(sizeof(report.message)), report.message);
    }
  }
  return Status::kSuccess;
}

}  // namespace

bool acquireComm(zcclComm* comm) {
  std::lock_guard<std::mutex> lock(handles().mutex);
  if (handles().live.count(comm) == 0) return false;
  comm->activeCalls.fetch_add(1);
  return true;
}

void releaseComm(zcclComm* comm) { comm->activeCalls.fetch_sub(1); }

bool retireComm(zcclComm* comm) {
  std::lock_guard<std::mutex> lock(handles().mutex);
  if (handles().live.erase(comm) == 0) return false;
  for (const zcclComm* owned : {comm->nodeComm.get(), comm->crossComm.get()}) {
    if (owned != nullptr) handles().live.erase(owned);
  }
  return true;
}

Status deviceEngineOf(zcclComm* comm, DeviceEngine** out) {
  if (comm->device == nullptr) {
    DeviceRuntime* runtime = deviceRuntime();
    if (runtime == nullptr) {
      return fail(Status::kInternalError, "a device call passed its checks without a runtime");
    }
    DeviceHost host;
    host.transport = comm->transport.get();
    host.levels = comm->hasLevels() ? &comm->levels : nullptr;
    host.processes = &comm->processes;
    host.cluster = &comm->cluster;
    host.native = &comm->native;
    host.queue = &comm->work;
    host.options = comm->config.deviceOptions();
    // Work on another thread would use the host transports while the program makes its own
    // calls to the engine (MPI below MPI_THREAD_MULTIPLE forbids it).
    host.options.blocking |= comm->transportsNeedCallersThread();
    host.nextTag = [comm] { return comm->nextTag(); };
    host.failed = [comm](const std::string& call) { comm->abandonAfterFailure(call); };
    auto made = std::make_unique<DeviceEngine>(std::move(host), *runtime);
    ZCCL_CHECK(made->start());
    comm->device = std::move(made);
  }
  *out = comm->device.get();
  return Status::kSuccess;
}

Status drainQueuedWork(zcclComm* comm) { return comm->work.drain(); }

Status queueHostWork(zcclComm* comm, const std::string& call, std::function<Status()> work,
                     std::function<void(const JobOutcome&)> done) {
  WorkQueue::Job job{[comm, call, work = std::move(work)] {
                       const Status status = work();
                       if (status != Status::kSuccess) comm->abandonAfterFailure(call);
                       return status;
                     },
                     [done = std::move(done)](const JobOutcome& outcome) {
                       if (done) done(outcome);
                     }};
  if (comm->transportsNeedCallersThread()) return comm->work.runHere(std::move(job));
  return comm->work.submit(std::move(job));
}

namespace {

// `comm` and the communicators it owns.
template <typename Visit>
void forEachComm(zcclComm* comm, Visit&& visit) {
  visit(*comm);
  for (zcclComm* owned : {comm->nodeComm.get(), comm->crossComm.get()}) {
    if (owned != nullptr) forEachComm(owned, visit);
  }
}

}  // namespace

void abortComm(zcclComm* comm) {
  // Device engines first, so that they make no transport the loop below would miss.
  forEachComm(comm, [](zcclComm& c) {
    if (c.device != nullptr) c.device->requestAbort();
  });
  for (Transport* t : comm->transports(/*withOwned=*/true)) t->requestAbort();
  // Other threads' waits end at their next poll (the communicators' own threads' too, which
  // end, their queued work skipped); the caller itself is counted once.
  forEachComm(comm, [](zcclComm& c) {
    c.work.stop();
    if (c.device != nullptr) c.device->releaseGates();
  });
  while (comm->activeCalls.load() > 1) sched_yield();
  bool quiescent = true;
  for (Transport* t : comm->transports(/*withOwned=*/true)) quiescent &= t->abandon();
  retireSequence(*comm);
  if (quiescent) {
    delete comm;
    return;
  }
  std::lock_guard<std::mutex> lock(handles().mutex);
  handles().kept.emplace_back(comm);
}

// The settings that shape what goes on the wire must be the same on every rank (a rank with
// another ZCCL_QUANT or ZCCL_ALGO than its peers would exchange messages they cannot read):
// compared once at creation, and a difference fails it on every rank, naming the setting
// and the ranks' values (collective over `transport`).
Status agreeOnConfiguration(Transport& transport, const CommConfig& config) {
  struct Setting {
    const char* name;
    int value;
    const char* (*text)(int);  // the value's name, where it has one
  };
  const auto algorithm = [](int v) { return algorithmName(static_cast<Algorithm>(v)); };
  const auto wire = [](int v) {
    const char* name = zcclWireFormatName(static_cast<zcclWireFormat_t>(v));
    return name != nullptr ? name : "?";
  };
  const CollectiveOptions& c = config.collective;
  const auto backend = [](int v) {
    static const char* const names[] = {"auto", "staged", "nccl"};
    return v >= 0 && v < 3 ? names[v] : "?";
  };
  const std::array<Setting, 11> mine{{
      {"ZCCL_ALGO (config.algorithm)", static_cast<int>(c.algorithm), algorithm},
      // At creation the policy holds one format for every collective.
      {"ZCCL_QUANT (config.wireFormat)", config.wirePolicy.allGather, wire},
      {"ZCCL_QUANT_SCHEME (config.quantScheme)", static_cast<int>(c.scheme), nullptr},
      {"ZCCL_QUANT_GROUP (config.quantGroupSize)", static_cast<int>(c.groupSize), nullptr},
      {"ZCCL_QUANT_STOCHASTIC (config.stochasticRounding)", static_cast<int>(c.rounding), nullptr},
      {"ZCCL_QUANT_SMOOTHING", c.smoothing ? 1 : 0, nullptr},
      {"ZCCL_HIERARCHY (config.hierarchy)", static_cast<int>(c.hierarchy), nullptr},
      {"ZCCL_CHECK (config.checkCalls)", config.checkCalls ? 1 : 0, nullptr},
      {"ZCCL_DEVICE_BACKEND", static_cast<int>(config.deviceBackend), backend},
      {"ZCCL_STAGED_CHUNK_BYTES", static_cast<int>(config.stagedChunkBytes), nullptr},
      {"ZCCL_TUNE", config.tunePlans ? 1 : 0, nullptr},
  }};
  std::array<int, mine.size()> values{};
  for (size_t i = 0; i < mine.size(); ++i) values[i] = mine[i].value;
  std::vector<std::array<int, mine.size()>> all(static_cast<size_t>(transport.size()));
  ZCCL_CHECK(transport.allGatherControl(values.data(), sizeof(values), all.data()));
  for (size_t i = 0; i < mine.size(); ++i) {
    for (int r = 1; r < transport.size(); ++r) {
      const int theirs = all[static_cast<size_t>(r)][i];
      if (theirs == all[0][i]) continue;
      const auto show = [&](int v) {
        return mine[i].text != nullptr ? std::string(mine[i].text(v)) : std::to_string(v);
      };
      return fail(Status::kInvalidUsage,
                  "the ranks' configurations differ: %s is %s on rank 0 and %s on rank %d; it "
                  "must be the same on every rank",
                  mine[i].name, show(all[0][i]).c_str(), show(theirs).c_str(), r);
    }
  }
  return Status::kSuccess;
}

Status createComm(std::unique_ptr<Transport> transport, const CommConfig& config, Status configured,
                  zcclComm** out, std::shared_ptr<const NodeTopology> modelled) {
  uint64_t sequenceBase = 0;
  ZCCL_CHECK(agreeOnInit(*transport, configured, lastThreadError(), &sequenceBase));
  ZCCL_CHECK(agreeOnConfiguration(*transport, config));
  auto comm = std::make_unique<zcclComm>();
  comm->config = config;
  comm->collectiveSequence = sequenceBase;
  comm->transport = std::move(transport);
  comm->modelledTopology = std::move(modelled);
  ZCCL_CHECK(discoverNodes(comm.get()));
  announceEmulation(*comm);
  ZCCL_CHECK(buildLevels(comm.get()));
  if (config.collective.hierarchy == Hierarchy::kTwoLevel && !comm->hasLevels()) {
    return fail(Status::kInvalidUsage,
                "ZCCL_HIERARCHY=two-level (config.hierarchy): two-level algorithms need the same "
                "number of ranks on every node, and these %d nodes differ (rank %d's holds %d); "
                "use auto or flat",
                comm->nodes.numNodes(), comm->rank(), comm->nodes.localSize(comm->rank()));
  }
  ZCCL_CHECK(buildClusterModel(comm.get()));
  ZCCL_LOG(kInfo,
           "comm %p: rank %d of %d, node %d of %d (local rank %d of %d), algorithm %s, wire %s, "
           "two-level algorithms %s",
           static_cast<void*>(comm.get()), comm->rank(), comm->size(),
           comm->nodes.nodeOf(comm->rank()), comm->nodes.numNodes(),
           comm->nodes.localRank(comm->rank()), comm->nodes.localSize(comm->rank()),
           algorithmName(config.collective.algorithm),
           zcclWireFormatName(static_cast<zcclWireFormat_t>(config.wirePolicy.allGather)),
           comm->hasLevels() ? "available" : "unavailable (nodes differ in size)");
  installNotices(comm.get());
  *out = comm.release();
  registerComm(*out);
  return Status::kSuccess;
}

Status splitComm(zcclComm* parent, int color, int key, const zcclConfig* config, zcclComm** out) {
  CommConfig resolved = parent->config;
  const Status configured = config != nullptr ? resolveConfig(config, &resolved) : Status::kSuccess;
  // A copy: the split below sets the thread's error again.
  const std::string why = lastThreadError();  // NOLINT(performance-unnecessary-copy-initialization)
  std::unique_ptr<Transport> child;
  ZCCL_CHECK(parent->transport->split(color, key, &child));
  *out = nullptr;
  if (!child) return configured;
  uint64_t sequenceBase = 0;
  ZCCL_CHECK(agreeOnInit(*child, configured, why, &sequenceBase));
  ZCCL_CHECK(agreeOnConfiguration(*child, resolved));
  auto comm = std::make_unique<zcclComm>();
  comm->config = resolved;
  comm->collectiveSequence = sequenceBase;
  comm->transport = std::move(child);
  comm->modelledTopology = parent->modelledTopology;
  comm->simulatedKernels = parent->simulatedKernels;
  const int parentRank = parent->rank();
  std::vector<int> parentRanks(static_cast<size_t>(comm->size()));
  ZCCL_CHECK(comm->transport->allGatherControl(&parentRank, sizeof(int), parentRanks.data()));
  comm->nodes = parent->nodes.subset(parentRanks);
  for (const int parentRank : parentRanks) {
    comm->processes.push_back(parent->processes[static_cast<size_t>(parentRank)]);
  }
  ZCCL_CHECK(buildLevels(comm.get()));
  ZCCL_CHECK(buildClusterModel(comm.get()));
  installNotices(comm.get());
  *out = comm.release();
  registerComm(*out);
  return Status::kSuccess;
}

Status cachedSplit(zcclComm* parent, bool crossNode, zcclComm** out) {
  std::unique_ptr<zcclComm>& cached = crossNode ? parent->crossComm : parent->nodeComm;
  if (!cached) {
    const int me = parent->rank();
    const int node = parent->nodes.nodeOf(me);
    const int local = parent->nodes.localRank(me);
    zcclComm* created = nullptr;
    ZCCL_CHECK(crossNode ? splitComm(parent, local, node, nullptr, &created)
                         : splitComm(parent, node, me, nullptr, &created));
    created->ownedByParent = true;
    cached.reset(created);
  }
  *out = cached.get();
  return Status::kSuccess;
}

}  // namespace zccl
