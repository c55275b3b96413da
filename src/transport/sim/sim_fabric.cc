// The simulated cluster (sim_fabric.h).
#include "transport/sim/sim_fabric.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "common/named_numbers.h"
#include "topology/topology.h"

namespace zccl {

Status parseSimMachine(const std::string& text, SimMachine* machine) {
  double gpus = machine->gpusPerNode, nics = machine->nicsPerNode;
  double nodesPerLeaf = machine->nodesPerLeaf, rails = machine->railOptimized ? 1 : 0;
  double spines = machine->spines, leavesPerPod = machine->leavesPerPod;
  double coreLinks = machine->coreLinks;
  double hostCores = machine->hostCores, hostRanks = machine->hostRanks;
  double intraLatencyUs = machine->intraLatencySeconds * 1e6;
  double interLatencyUs = machine->interLatencySeconds * 1e6;
  double switchLatencyUs = machine->switchLatencySeconds * 1e6;
  const std::vector<NamedNumber> fields = {
      {"gpus-per-node", &gpus, nullptr, true},
      {"intra-gbps", &machine->intraGBps},
      {"intra-latency-us", &intraLatencyUs},
      {"nics", &nics, nullptr, true},
      {"nic-gbps", &machine->nicGbps},
      {"inter-latency-us", &interLatencyUs},
      {"nodes-per-leaf", &nodesPerLeaf, "one switch", true},
      {"rail-optimized", &rails, "a fat tree", true},
      {"oversubscription", &machine->oversubscription},
      {"spines", &spines, "one uplink a leaf", true},
      {"leaves-per-pod", &leavesPerPod, "no third tier", true},
      {"pod-oversubscription", &machine->podOversubscription},
      {"core-links", &coreLinks, "one link a pod", true},
      {"switch-latency-us", &switchLatencyUs, "none"},
      {"kernel-gbps", &machine->kernelGBps},
      {"copy-gbps", &machine->copyGBps, "kernel-gbps"},
      {"reduce-gbps", &machine->reduceGBps, "kernel-gbps"},
      {"accumulate-gbps", &machine->accumulateGBps, "kernel-gbps"},
      {"quantize-gbps", &machine->quantizeGBps, "kernel-gbps"},
      {"dequantize-gbps", &machine->dequantizeGBps, "kernel-gbps"},
      {"compute-scale", &machine->computeScale, "not counted"},
      {"host-cores", &hostCores, "a processor per rank", true},
      {"host-ranks", &hostRanks, "a node's", true},
      {"stack-gbps", &machine->stackGBps, "no CPU"},
      {"shm-gbps", &machine->shmGBps, "no CPU"},
      {"rendezvous-bytes", &machine->rendezvousBytes, "every send eager"}};
  ZCCL_CHECK(parseNamedNumbers(text, "machine", fields));
  machine->gpusPerNode = static_cast<int>(gpus);
  machine->nicsPerNode = static_cast<int>(nics);
  machine->nodesPerLeaf = static_cast<int>(nodesPerLeaf);
  machine->railOptimized = rails != 0;
  machine->spines = static_cast<int>(spines);
  machine->leavesPerPod = static_cast<int>(leavesPerPod);
  machine->coreLinks = static_cast<int>(coreLinks);
  machine->hostCores = static_cast<int>(hostCores);
  machine->hostRanks = static_cast<int>(hostRanks);
  machine->intraLatencySeconds = intraLatencyUs * 1e-6;
  machine->interLatencySeconds = interLatencyUs * 1e-6;
  machine->switchLatencySeconds = switchLatencyUs * 1e-6;
  if (machine->nicsPerNode > machine->gpusPerNode) machine->nicsPerNode = machine->gpusPerNode;
  return checkPodsHaveLeaves(machine->leavesPerPod, machine->nodesPerLeaf, "machine");
}

std::string describeSimMachine(const SimMachine& m) {
  std::ostringstream text;
  text << m.gpusPerNode << " GPUs per node at " << m.intraGBps << " GB/s each ("
       << m.intraLatencySeconds * 1e6 << " us), " << m.nicsPerNode << " NICs of " << m.nicGbps
       << " Gbit/s (" << m.interLatencySeconds * 1e6 << " us)";
  if (m.nodesPerLeaf > 0) {
    text << (m.railOptimized ? ", rail-optimized: a switch per rail for every "
                             : ", fat tree: a leaf for every ")
         << m.nodesPerLeaf << " nodes, spine uplinks oversubscribed " << m.oversubscription << ":1";
    if (m.spines > 0) text << ", ECMP over " << m.spines << " spines";
    if (m.leavesPerPod > 0) {
      text << ", pods of " << m.leavesPerPod << " leaves under a core, pod uplinks oversubscribed "
           << m.podOversubscription << ":1";
      if (m.coreLinks > 0) text << ", ECMP over " << m.coreLinks << " core switches";
    }
    if (m.switchLatencySeconds > 0) {
      text << ", " << m.switchLatencySeconds * 1e6 << " us a switch past the first";
    }
  } else if (m.oversubscription != 1) {
    text << ", fabric oversubscribed " << m.oversubscription << ":1";
  }
  text << ", kernels at " << m.kernelGBps << " GB/s";
  const char* const families[] = {"copies", "reductions", "float32 accumulation", "quantization",
                                  "dequantization"};
  for (int family = 0; family < SimMachine::kKernelFamilies; ++family) {
    const double rate = m.familyGBps(static_cast<SimMachine::KernelFamily>(family));
    if (rate > 0) text << ", " << families[family] << " at " << rate << " GB/s";
  }
  if (m.computeScale != 0) text << ", CPU time x" << m.computeScale;
  if (m.ranksOnCpus()) {
    text << ", " << m.ranksSharingCores() << " ranks on " << m.hostCores << " cores";
  }
  if (m.stackGBps > 0) text << ", network stack at " << m.stackGBps << " GB/s a core";
  if (m.shmGBps > 0) text << ", shared-memory copies at " << m.shmGBps << " GB/s a core";
  if (m.rendezvousBytes > 0) text << ", rendezvous from " << m.rendezvousBytes << " bytes";
  return text.str();
}

double SimMachine::familyGBps(KernelFamily family) const {
  const double rates[kKernelFamilies] = {copyGBps, reduceGBps, accumulateGBps, quantizeGBps,
                                         dequantizeGBps};
  return rates[static_cast<int>(family)];
}

double SimMachine::kernelBytesPerSecond(KernelFamily family) const {
  const double rate = familyGBps(family);
  return (rate > 0 ? rate : kernelGBps) * 1e9;
}

SimMachine SimMachine::slowedBy(double factor) const {
  SimMachine slower = *this;
  for (double* rate : {&slower.intraGBps, &slower.nicGbps, &slower.kernelGBps, &slower.copyGBps,
                       &slower.reduceGBps, &slower.accumulateGBps, &slower.quantizeGBps,
                       &slower.dequantizeGBps, &slower.stackGBps, &slower.shmGBps}) {
    *rate /= factor;
  }
  slower.computeScale *= factor;
  return slower;
}

int SimMachine::ranksSharingCores() const { return hostRanks > 0 ? hostRanks : gpusPerNode; }

double SimMachine::cpuShare() const {
  if (!ranksOnCpus()) return 1;
  return std::min(1.0, static_cast<double>(hostCores) / ranksSharingCores());
}

SimFabric::SimFabric(int ranks, const SimMachine& machine, double timeoutSeconds)
    : ranks_(ranks),
      machine_(machine),
      timeout_(timeoutSeconds),
      clocks_(static_cast<size_t>(ranks), 0.0),
      gpuOut_(static_cast<size_t>(ranks)),
      gpuIn_(static_cast<size_t>(ranks)),
      cpu_(static_cast<size_t>(ranks)),
      wakeups_(std::make_unique<std::condition_variable[]>(static_cast<size_t>(ranks))) {
  const int nodes = (ranks + machine.gpusPerNode - 1) / machine.gpusPerNode;
  nicOut_.resize(static_cast<size_t>(nodes) * static_cast<size_t>(machine.nicsPerNode));
  nicIn_.resize(nicOut_.size());
  if (machine.nodesPerLeaf > 0) {
    const int switches = switchOf(static_cast<int>(nicOut_.size()) - 1) + 1;
    uplinkLanes_ = lanesOf(uplinkBytesPerSecond());
    sizeLinks(switches, std::max(1, machine.spines), uplinkLanes_, &switchUp_, &switchDown_);
  }
  if (machine.leavesPerPod > 0) {
    const int pods = podOf(static_cast<int>(nicOut_.size()) - 1) + 1;
    podLinkLanes_ = lanesOf(podUplinkBytesPerSecond());
    sizeLinks(pods, std::max(1, machine.coreLinks), podLinkLanes_, &podUp_, &podDown_);
  }
}

void SimFabric::runInOrder() {
  std::lock_guard<std::mutex> lock(mutex_);
  ordered_ = true;
  states_.assign(static_cast<size_t>(ranks_), RankState{});
  running_.clear();
  for (int rank = 0; rank < ranks_; ++rank) {
    RankState& state = states_[static_cast<size_t>(rank)];
    state.frontier = Frontier{clocks_[static_cast<size_t>(rank)], 0, rank};
    running_.insert(state.frontier);
  }
}

void SimFabric::retire(int rank) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!ordered_) return;
  block(rank);
  states_[static_cast<size_t>(rank)].retired = true;
  notifyWoken(lock, false);
}

void SimFabric::leaveRunning(int rank) {
  if (!ordered_) return;
  RankState& state = states_[static_cast<size_t>(rank)];
  if (!state.running) return;
  running_.erase(state.frontier);
  state.running = false;
}

void SimFabric::block(int rank) {
  leaveRunning(rank);
  runDue();
}

void SimFabric::wake(int rank, double time, const Frontier& cause) {
  if (!ordered_) return;
  RankState& state = states_[static_cast<size_t>(rank)];
  if (state.running || state.retired) return;
  const auto [was, wasDepth, self] = state.frontier;
  const double at = std::max(was, time);
  uint64_t depth = at == was ? wasDepth : 0;
  if (at == std::get<0>(cause)) depth = std::max(depth, std::get<1>(cause) + 1);
  state.frontier = Frontier{at, depth, rank};
  state.running = true;
  running_.insert(state.frontier);
}

void SimFabric::clockMoved(int rank) {
  if (!ordered_) return;
  RankState& state = states_[static_cast<size_t>(rank)];
  const double now = clocks_[static_cast<size_t>(rank)];
  if (!state.running || now <= std::get<0>(state.frontier)) return;
  running_.erase(state.frontier);
  state.frontier = Frontier{now, 0, rank};
  running_.insert(state.frontier);
}

void SimFabric::schedule(int rank, Pending event) {
  RankState& state = states_[static_cast<size_t>(rank)];
  event.key = state.frontier;
  event.sequence = state.sequence++;
  pending_.push_back(std::move(event));
  std::push_heap(pending_.begin(), pending_.end(), std::greater<Pending>());
  runDue();
}

void SimFabric::runDue() {
  while (!pending_.empty() && (running_.empty() || !(pending_.front().key > *running_.begin()))) {
    std::pop_heap(pending_.begin(), pending_.end(), std::greater<Pending>());
    Pending due = std::move(pending_.back());
    pending_.pop_back();
    if (due.what == Pending::What::kSend) {
      carry(due);
      continue;
    }
    if (due.what == Pending::What::kRendezvousData) {
      moveRendezvousData(due);
      continue;
    }
    if (due.what == Pending::What::kDropped) continue;
    const int rank = std::get<2>(due.key);
    const double end = reserveCpu(rank, due.from, due.seconds, due.inGaps);
    if (!due.inGaps) {
      double& clock = clocks_[static_cast<size_t>(rank)];
      clock = std::max(clock, end);
      clockMoved(rank);
    }
    complete(due.done.get(), end, due.key);
  }
}

void SimFabric::complete(Event* event, double end, const Frontier& cause) {
  event->at = end;
  event->done = true;
  if (event->waiter < 0) return;
  woken_.push_back(event->waiter);
  wake(event->waiter, end, cause);
}

void SimFabric::notifyWoken(std::unique_lock<std::mutex>& lock, bool relock) {
  if (woken_.empty()) return;
  std::vector<int> woken;
  woken.swap(woken_);
  lock.unlock();
  for (const int rank : woken) wakeups_[rank].notify_all();
  if (relock) lock.lock();
}

double SimFabric::clock(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  return clocks_[static_cast<size_t>(rank)];
}

void SimFabric::afterClockMoved(std::unique_lock<std::mutex>& lock, int rank) {
  clockMoved(rank);
  runDue();
  notifyWoken(lock, false);
}

void SimFabric::advance(int rank, double seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  clocks_[static_cast<size_t>(rank)] += seconds;
  afterClockMoved(lock, rank);
}

void SimFabric::advanceTo(int rank, double time) {
  std::unique_lock<std::mutex> lock(mutex_);
  double& clock = clocks_[static_cast<size_t>(rank)];
  if (time <= clock) return;
  clock = time;
  afterClockMoved(lock, rank);
}

std::chrono::steady_clock::time_point SimFabric::waitDeadline() const {
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(timeout_ > 0 ? timeout_ : 1e9));
}

bool SimFabric::cpuCarriesMessages() const {
  return machine_.stackGBps > 0 || machine_.shmGBps > 0;
}

double SimFabric::reserveCpu(int rank, double from, double seconds, bool inGaps) {
  Timeline* busy = &cpu_[static_cast<size_t>(rank)];
  if (!inGaps) return reserve(busy, from, seconds);
  double at = from;
  for (double left = seconds; left > 0;) {
    auto next = busy->upper_bound(at);
    while (next != busy->begin() && std::prev(next)->second > at) {
      at = std::prev(next)->second;
      next = busy->upper_bound(at);
    }
    const double gap = next == busy->end() ? left : next->first - at;
    const double part = std::min(gap, left);
    at = reserve(busy, at, part);
    left -= part;
  }
  return at;
}

double SimFabric::cpuWork(std::unique_lock<std::mutex>& lock, int rank, double from, double seconds,
                          bool inGaps) {
  // A CPU only its rank's thread uses needs no order; one that carries messages does.
  if (!ordered_ || !cpuCarriesMessages()) return reserveCpu(rank, from, seconds, inGaps);
  auto done = std::make_shared<Event>();
  done->waiter = rank;
  Pending work;
  work.from = from;
  work.seconds = seconds;
  work.inGaps = inGaps;
  work.done = done;
  schedule(rank, std::move(work));
  notifyWoken(lock, true);
  wakeups_[rank].wait(lock, [&] { return done->done; });
  return done->at;
}

void SimFabric::runKernel(int rank, double seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  double& clock = clocks_[static_cast<size_t>(rank)];
  clock = std::max(clock, cpuWork(lock, rank, clock, seconds / machine_.cpuShare(), false));
  afterClockMoved(lock, rank);
}

double SimFabric::runBeside(int rank, double from, double seconds) {
  if (!machine_.ranksOnCpus()) return from + seconds;  // a GPU's compute: engines of its own
  std::unique_lock<std::mutex> lock(mutex_);
  return cpuWork(lock, rank, from, seconds, true);
}

int SimFabric::switchOf(int nic) const {
  const int nics = machine_.nicsPerNode;
  const int group = nic / nics / machine_.nodesPerLeaf;
  return machine_.railOptimized ? group * nics + nic % nics : group;
}

int SimFabric::ecmpLinkOf(int group, int links, int from, int to, uint64_t tier) {
  // A fixed mix of the flow's two ends (splitmix64's finalizer), as a switch hashes a flow's
  // header: the same flow always takes the same link.
  uint64_t hash = ((static_cast<uint64_t>(from) << 32) ^ static_cast<uint64_t>(to)) + tier;
  hash = (hash ^ (hash >> 30)) * 0xbf58476d1ce4e5b9ULL;
  hash = (hash ^ (hash >> 27)) * 0x94d049bb133111ebULL;
  hash ^= hash >> 31;
  return group * links + static_cast<int>(hash % static_cast<uint64_t>(links));
}

int SimFabric::spineLinkOf(int nic, int from, int to) const {
  return ecmpLinkOf(switchOf(nic), std::max(1, machine_.spines), from, to, 0);
}

int SimFabric::coreLinkOf(int nic, int from, int to) const {
  return ecmpLinkOf(podOf(nic), std::max(1, machine_.coreLinks), from, to, 0x9e3779b97f4a7c15ULL);
}

double SimFabric::uplinkBytesPerSecond() const {
  const int nicsOnSwitch =
      machine_.nodesPerLeaf * (machine_.railOptimized ? 1 : machine_.nicsPerNode);
  return nicsOnSwitch * machine_.nicGbps / 8 * 1e9 / machine_.oversubscription /
         std::max(1, machine_.spines);
}

int SimFabric::podOf(int nic) const {
  return nic / machine_.nicsPerNode / machine_.nodesPerLeaf / machine_.leavesPerPod;
}

double SimFabric::podUplinkBytesPerSecond() const {
  // What its leaves' uplinks carry (every node's NICs, whether on a leaf or on rail switches),
  // split over its links to core switches.
  const int nicsInPod = machine_.leavesPerPod * machine_.nodesPerLeaf * machine_.nicsPerNode;
  return nicsInPod * machine_.nicGbps / 8 * 1e9 / machine_.oversubscription /
         machine_.podOversubscription / std::max(1, machine_.coreLinks);
}

int SimFabric::lanesOf(double bytesPerSecond) const {
  const double nic = machine_.nicGbps / 8 * 1e9;
  return std::max(1, static_cast<int>(std::floor(bytesPerSecond / nic * (1 + 1e-9))));
}

void SimFabric::sizeLinks(int groups, int links, int lanes, std::vector<Timeline>* up,
                          std::vector<Timeline>* down) {
  up->resize(static_cast<size_t>(groups) * static_cast<size_t>(links) * static_cast<size_t>(lanes));
  down->resize(up->size());
}

SimFabric::Port SimFabric::linkPort(std::vector<Timeline>* timelines, int link, int lanes,
                                    double bytesPerSecond) {
  return {&(*timelines)[static_cast<size_t>(link) * static_cast<size_t>(lanes)],
          bytesPerSecond / lanes, lanes};
}

SimFabric::Route SimFabric::route(int source, int destination) {
  Route route;
  const int perNode = machine_.gpusPerNode;
  const bool sameNode = source / perNode == destination / perNode;
  const double cpuGBps = sameNode ? machine_.shmGBps : machine_.stackGBps;
  const double cpuRate = cpuGBps * 1e9 * machine_.cpuShare();
  if (cpuGBps > 0) route.ports[route.count++] = {&cpu_[static_cast<size_t>(source)], cpuRate};
  route.departure = route.count;
  if (sameNode) {
    const double rate = machine_.intraGBps * 1e9;
    route.ports[route.count++] = {&gpuOut_[static_cast<size_t>(source)], rate};
    route.ports[route.count++] = {&gpuIn_[static_cast<size_t>(destination)], rate};
    route.latency = machine_.intraLatencySeconds;
  } else {
    routeBetweenNodes(source, destination, &route);
  }
  route.landing = route.count - 1;
  if (cpuGBps > 0) route.ports[route.count++] = {&cpu_[static_cast<size_t>(destination)], cpuRate};
  return route;
}

void SimFabric::routeBetweenNodes(int source, int destination, Route* route) {
  const int perNode = machine_.gpusPerNode;
  const int nics = machine_.nicsPerNode;
  auto nicOf = [&](int rank) {
    return (rank / perNode) * nics + (rank % perNode) * nics / perNode;
  };
  const int from = nicOf(source), to = nicOf(destination);
  const bool twoLevels = machine_.nodesPerLeaf > 0;
  const double rate = machine_.nicGbps / 8 * 1e9 / (twoLevels ? 1 : machine_.oversubscription);
  route->latency = machine_.interLatencySeconds;
  route->ports[route->count++] = {&nicOut_[static_cast<size_t>(from)], rate};
  if (twoLevels && switchOf(from) != switchOf(to)) {
    const double uplink = uplinkBytesPerSecond();
    route->ports[route->count++] =
        linkPort(&switchUp_, spineLinkOf(from, from, to), uplinkLanes_, uplink);
    route->latency += 2 * machine_.switchLatencySeconds;
    if (machine_.leavesPerPod > 0 && podOf(from) != podOf(to)) {
      route->latency += 2 * machine_.switchLatencySeconds;
      const double podUplink = podUplinkBytesPerSecond();
      route->ports[route->count++] =
          linkPort(&podUp_, coreLinkOf(from, from, to), podLinkLanes_, podUplink);
      route->ports[route->count++] =
          linkPort(&podDown_, coreLinkOf(to, from, to), podLinkLanes_, podUplink);
    }
    route->ports[route->count++] =
        linkPort(&switchDown_, spineLinkOf(to, from, to), uplinkLanes_, uplink);
  }
  route->ports[route->count++] = {&nicIn_[static_cast<size_t>(to)], rate};
}

double SimFabric::firstFree(const Timeline& busy, double ready, double duration) {
  double start = ready;
  auto next = busy.upper_bound(start);
  if (next != busy.begin()) start = std::max(start, std::prev(next)->second);
  while (next != busy.end() && next->first < start + duration) {
    start = std::max(start, next->second);
    ++next;
  }
  return start;
}

double SimFabric::reserve(const Port& port, double ready, double duration) {
  Timeline* earliest = port.busy;
  double start = firstFree(*earliest, ready, duration);
  for (int lane = 1; lane < port.lanes && start > ready; ++lane) {
    const double laneStart = firstFree(port.busy[lane], ready, duration);
    if (laneStart < start) {
      start = laneStart;
      earliest = &port.busy[lane];
    }
  }
  return occupy(earliest, start, duration);
}

double SimFabric::reserve(Timeline* busy, double ready, double duration) {
  return occupy(busy, firstFree(*busy, ready, duration), duration);
}

double SimFabric::occupy(Timeline* busy, double start, double duration) {
  const double end = start + duration;
  // Merged with a neighbour it touches, so that back-to-back messages keep one interval.
  auto before = busy->upper_bound(start);
  if (before != busy->begin() && std::prev(before)->second == start) {
    std::prev(before)->second = end;
  } else {
    (*busy)[start] = end;
  }
  auto merged = busy->upper_bound(start);
  const auto self = std::prev(merged);
  if (merged != busy->end() && merged->first == end) {
    self->second = merged->second;
    busy->erase(merged);
  }
  return end;
}

void SimFabric::deliver(const unsigned char* data, size_t bytes, double arrival,
                        const Frontier& cause, Receive* receive) {
  receive->truncated = bytes > receive->bytes;
  if (!receive->truncated && bytes > 0) std::memcpy(receive->buffer, data, bytes);
  complete(receive, arrival, cause);
}

void SimFabric::send(uint64_t context, int source, int destination, int tag, const void* data,
                     size_t bytes, std::shared_ptr<Event> departure) {
  std::unique_lock<std::mutex> lock(mutex_);
  Pending send;
  send.key = Frontier{0, 0, source};
  send.what = Pending::What::kSend;
  send.context = context;
  send.destination = destination;
  send.tag = tag;
  send.data = static_cast<const unsigned char*>(data);
  send.bytes = bytes;
  send.from = clocks_[static_cast<size_t>(source)];
  send.done = std::move(departure);
  if (ordered_) {
    schedule(source, std::move(send));
  } else {
    carry(send);
  }
  notifyWoken(lock, false);
}

SimFabric::Passage SimFabric::pass(int source, int destination, double bytes, double now) {
  if (source == destination) return {now, now, 0};
  // Cut through: the bytes stream through every port from when the first began (the receiving
  // side a latency later), each port at its own rate but finishing no earlier than the one
  // before (a slower port on the way, an oversubscribed uplink, a CPU, sets the pace); a busy
  // port holds the stream back until it is free.
  const Route path = route(source, destination);
  double flow = now, end = now, leaves = now;
  for (int hop = 0; hop < path.count; ++hop) {
    const Port& port = path.ports[hop];
    const double duration = bytes / port.bytesPerSecond;
    if (hop == path.landing) {
      flow += path.latency;
      end += path.latency;
    }
    const double ready = std::max(flow, end - duration);
    end = reserve(port, ready, duration);
    if (end - duration > ready) flow = end - duration;  // the port was busy: held back
    if (hop == path.departure) leaves = end;
  }
  return {leaves, end, path.latency};
}

bool SimFabric::goesByRendezvous(const Pending& send) const {
  return machine_.rendezvousBytes > 0 && std::get<2>(send.key) != send.destination &&
         static_cast<double>(send.bytes) >= machine_.rendezvousBytes;
}

void SimFabric::carry(const Pending& send) {
  const int source = std::get<2>(send.key), destination = send.destination;
  Mailbox& box = mailboxes_[Key{send.context, destination, source, send.tag}];
  if (goesByRendezvous(send)) {
    // Only its request goes now; it takes its place among the messages its receives match.
    if (!box.posted.empty()) {
      Receive* receive = box.posted.front();
      box.posted.pop_front();
      scheduleRendezvousData(send, receive);
      return;
    }
    box.unmatched.push_back(Message{{}, 0, send.key, send});
    return;
  }
  const Passage passage = pass(source, destination, static_cast<double>(send.bytes), send.from);
  complete(send.done.get(), passage.leaves, send.key);
  if (send.done->abandoned) return;
  if (!box.posted.empty()) {
    deliver(send.data, send.bytes, passage.arrival, send.key, box.posted.front());
    box.posted.pop_front();
    return;
  }
  box.unmatched.push_back(Message{std::vector<unsigned char>(send.data, send.data + send.bytes),
                                  passage.arrival, send.key, std::nullopt});
}

void SimFabric::scheduleRendezvousData(Pending send, Receive* receive) {
  const int source = std::get<2>(send.key);
  const double latency = route(source, send.destination).latency;
  send.from = std::max(send.from + latency, receive->postedAt) + latency;
  send.what = Pending::What::kRendezvousData;
  send.into = receive;
  if (!ordered_) {
    moveRendezvousData(send);
    return;
  }
  // Keyed by when the bytes start to move, whichever side came second: the same in every run.
  // The send's own sequence number orders it among its rank's events at that time.
  send.key = Frontier{send.from, 0, source};
  pending_.push_back(std::move(send));
  std::push_heap(pending_.begin(), pending_.end(), std::greater<Pending>());
}

void SimFabric::moveRendezvousData(const Pending& send) {
  // A sender that gave up before its bytes moved leaves its receive waiting (for its timeout).
  if (send.done->abandoned) return;
  const int source = std::get<2>(send.key);
  const Passage passage =
      pass(source, send.destination, static_cast<double>(send.bytes), send.from);
  deliver(send.data, send.bytes, passage.arrival, send.key, send.into);
  complete(send.done.get(), passage.arrival + passage.latency, send.key);
}

void SimFabric::post(uint64_t context, int destination, int source, int tag, Receive* receive) {
  std::unique_lock<std::mutex> lock(mutex_);
  receive->postedAt = clocks_[static_cast<size_t>(destination)];
  Mailbox& box = mailboxes_[Key{context, destination, source, tag}];
  if (box.unmatched.empty()) {
    box.posted.push_back(receive);
    return;
  }
  Message message = std::move(box.unmatched.front());
  box.unmatched.pop_front();
  if (!message.request.has_value()) {
    deliver(message.data.data(), message.data.size(), message.arrival, message.cause, receive);
    return;
  }
  scheduleRendezvousData(std::move(*message.request), receive);
  if (ordered_) runDue();
  notifyWoken(lock, false);  // the sender, where its bytes have moved and it waits for them
}

void SimFabric::abandonSend(Event* departure) {
  std::lock_guard<std::mutex> lock(mutex_);
  departure->abandoned = true;
}

void SimFabric::cancel(uint64_t context, int destination, int source, int tag,
                       const Receive* receive) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Matched by a rendezvous whose bytes have not moved: they will not.
  for (Pending& pending : pending_) {
    if (pending.what == Pending::What::kRendezvousData && pending.into == receive) {
      pending.what = Pending::What::kDropped;
    }
  }
  auto found = mailboxes_.find(Key{context, destination, source, tag});
  if (found == mailboxes_.end()) return;
  auto& posted = found->second.posted;
  for (auto it = posted.begin(); it != posted.end(); ++it) {
    if (*it == receive) {
      posted.erase(it);
      return;
    }
  }
}

bool SimFabric::exchangeControl(uint64_t context, uint64_t round, const std::vector<int>& members,
                                int me, const void* mine, size_t bytes, void* all) {
  std::unique_lock<std::mutex> lock(mutex_);
  Control& control = controls_[{context, round}];
  const size_t size = members.size();
  if (control.parts.empty()) {
    control.parts.resize(size);
    control.left = static_cast<int>(size);
  }
  const auto* data = static_cast<const unsigned char*>(mine);
  control.parts[static_cast<size_t>(me)].assign(data, data + bytes);
  const int rank = members[static_cast<size_t>(me)];
  control.latest = std::max(control.latest, clocks_[static_cast<size_t>(rank)]);
  if (ordered_) {
    control.release = std::max(control.release, states_[static_cast<size_t>(rank)].frontier);
  }
  if (++control.arrived == static_cast<int>(size)) {
    // Every member leaves at the latest clock, after the latest key (whichever thread came
    // last, so that every member's key is the same in every run).
    leaveRunning(rank);
    for (const int member : members) {
      clocks_[static_cast<size_t>(member)] = control.latest;
      wake(member, control.latest, control.release);
    }
    controlChanged_.notify_all();
  } else {
    block(rank);
    notifyWoken(lock, true);
  }
  if (!controlChanged_.wait_until(lock, waitDeadline(),
                                  [&] { return control.arrived == static_cast<int>(size); })) {
    wake(rank, 0, Frontier{0, 0, 0});
    return false;
  }
  for (size_t i = 0; i < size; ++i) {
    std::memcpy(static_cast<unsigned char*>(all) + i * bytes, control.parts[i].data(), bytes);
  }
  if (--control.left == 0) controls_.erase({context, round});
  runDue();
  notifyWoken(lock, false);
  return true;
}

uint64_t SimFabric::childContext(uint64_t parent, uint64_t round, int color) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = children_.try_emplace({parent, round, color}, 0);
  if (inserted) it->second = nextContext_++;
  return it->second;
}

}  // namespace zccl
