// A simulated cluster for zccl's unchanged algorithms: every rank a thread of this process,
// every message carried in memory and stamped in virtual time over a modelled machine (GPUs
// per node on an NVLink-class switch, nodes with NICs on a fabric that may be oversubscribed).
// Each rank keeps its own virtual clock: a send takes the first time its port is free for as
// long as its bytes need at the port's bandwidth, from the rank's clock on, and arrives a
// latency later, once the receiving port too has had the time; a receive completes at the
// later of the rank's clock and the arrival; kernels and modelled compute move the clock on.
// Ports keep their busy intervals in virtual time, so ranks whose threads run out of step (as
// they do: thousands of threads on a few cores) still share a port in virtual-time order.
//
// In order (runInOrder(), as runSimulated runs its ranks), the fabric is a conservative
// discrete-event simulation and its figures are the same in every run: whatever reserves a
// port another rank may reserve too (a send; a kernel or compute on a CPU that carries
// messages) waits, as an event keyed by its rank's virtual time, until no rank that is still
// running could make an earlier one, and events are carried out in key order, whatever order
// the threads reached the fabric in. A rank waiting for a message or a control exchange makes
// nothing until it is woken, so it holds nobody back. The order assumes each rank's calls come
// from one thread at a time (blocking calls, as runSimulated's bodies make).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"

namespace zccl {

struct SimMachine {
  int gpusPerNode = 8;
  double intraGBps = 150;  // per GPU, to the node's switch (NVLink class)
  double intraLatencySeconds = 2e-6;
  int nicsPerNode = 8;   // GPU g uses NIC g * nics / gpusPerNode
  double nicGbps = 100;  // each NIC, gigabits per second
  double interLatencySeconds = 5e-6;
  // The fabric. nodesPerLeaf = 0: one switch for every node, each NIC getting nicGbps /
  // oversubscription. Else two levels, leaves under a non-blocking spine, whose uplinks carry
  // what their NICs can over oversubscription: a fat tree (a leaf per nodesPerLeaf nodes, all
  // their NICs on it), or rail-optimized (a switch per rail, NIC r of nodesPerLeaf nodes each),
  // where messages between NICs of one switch do not touch the spine.
  int nodesPerLeaf = 0;
  bool railOptimized = false;
  double oversubscription = 1;
  // spines = 0: a leaf's uplink is one link that any flow may take. Else the leaf has a link
  // to each of that many spine switches, its uplink bandwidth split evenly over them, and each
  // flow (a pair of NICs) takes the one its hash picks, as ECMP does: flows that collide on a
  // link share it while another idles.
  int spines = 0;
  // leavesPerPod = 0: the spine joins every leaf. Else a third tier (needs nodesPerLeaf): the
  // nodes of every leavesPerPod leaves form a pod under a spine of its own, and pods meet at a
  // non-blocking core through one link each way a pod, which carries what its leaves' uplinks
  // can over podOversubscription. A message between pods takes its leaf's uplink, its pod's,
  // the other pod's downlink and the other leaf's.
  int leavesPerPod = 0;
  double podOversubscription = 1;
  // coreLinks = 0: a pod's link to the core is one any flow may take. Else the pod has a link
  // to each of that many core switches, its bandwidth split evenly over them, each flow on the
  // one its hash picks (hashed apart from its spine link's, as switches seed each tier's hash
  // differently).
  int coreLinks = 0;
  // interLatencySeconds is a message's through its first switch; each switch after it (a
  // spine and the other leaf across leaves; a spine, the core, a spine and a leaf across pods)
  // adds this.
  double switchLatencySeconds = 0;
  // A rank's kernels (copies, reductions, quantization) take the bytes they touch over this
  // rate, GB/s (a GPU's memory-bound kernels: about 1000), or over their family's where given
  // (> 0): copies (bytes copied), reductions (bytes of one input), work on a float32
  // accumulator (its bytes), quantization (bytes of unquantized input), dequantization (bytes
  // of unquantized output).
  double kernelGBps = 1000;
  double copyGBps = 0;
  double reduceGBps = 0;
  double accumulateGBps = 0;
  double quantizeGBps = 0;
  double dequantizeGBps = 0;
  // Besides, the CPU time between a rank's transport calls counts times this factor (1: this
  // host's speed, kernels and library alike; 0: not counted). Measured on a thread of a
  // process that runs every rank, it carries the simulator's own scheduling noise.
  double computeScale = 0;
  // Ranks on CPUs rather than GPUs (a host's processes, as the emulated testbed's): each rank's
  // kernels and network stack run on its CPU, which is busy one thing at a time. hostCores > 0:
  // hostRanks ranks (0: a node's) share that many cores, each at min(1, cores / ranks) of one,
  // because waiting ranks busy-poll and keep every core's run queue full. stackGBps > 0: a
  // message between nodes costs its sender's and its receiver's CPU its bytes over this rate
  // (TCP copies); shmGBps > 0: one within a node does (copies through shared memory).
  int hostCores = 0;
  int hostRanks = 0;
  double stackGBps = 0;
  double shmGBps = 0;
  // Sends of at least this many bytes (> 0; 0: every send eager) go by rendezvous, as UCX's
  // and MPI's large messages do: the sender's request reaches the receiver, the bytes move once
  // the receiver has posted its buffer and the sender has heard so (a round trip of the route's
  // latency), and the send completes once the receiver has them and said so (a latency more).
  // An eager send completes once its bytes have left, whether or not its receive is posted.
  double rendezvousBytes = 0;
  enum class KernelFamily { kCopy, kReduce, kAccumulate, kQuantize, kDequantize };
  static constexpr int kKernelFamilies = 5;
  // The family's own rate, GB/s (0: none given).
  double familyGBps(KernelFamily family) const;
  // The rate the family's kernels run at, bytes per second.
  double kernelBytesPerSecond(KernelFamily family) const;
  // Whether the ranks run on a host's CPUs (hostCores > 0) rather than GPUs; the ranks that
  // share its cores, and the part of a core each one's CPU work gets.
  bool ranksOnCpus() const { return hostCores > 0; }
  int ranksSharingCores() const;
  double cpuShare() const;
  // The same machine with every bandwidth and rate divided by `factor` (and measured CPU time
  // counted that many times): a model `factor` times smaller takes as long on it.
  SimMachine slowedBy(double factor) const;
};

// Reads "gpus-per-node=8,intra-gbps=1200,nics=8,nic-gbps=100,oversubscription=2,..." (bytes
// per second in GB/s for intra, bits in Gbit/s for NICs, latencies in microseconds).
Status parseSimMachine(const std::string& text, SimMachine* machine);
std::string describeSimMachine(const SimMachine& machine);

class SimFabric {
 public:
  SimFabric(int ranks, const SimMachine& machine, double timeoutSeconds);

  int ranks() const { return ranks_; }
  const SimMachine& machine() const { return machine_; }
  double timeoutSeconds() const { return timeout_; }

  // Rank `rank`'s virtual clock (seconds since the fabric began).
  double clock(int rank);
  void advance(int rank, double seconds);
  // Moves the clock on to `time` if it is behind.
  void advanceTo(int rank, double time);
  // Runs `seconds` of a rank's kernel work (at a whole core's speed) on its CPU, from its clock
  // on, when its CPU is free; the clock moves to its end.
  void runKernel(int rank, double seconds);
  // Work of another stream on a rank's CPU (a CPU rank's model compute beside its collectives):
  // `seconds` of it, in the gaps the CPU leaves from `from` on, where what was reserved before
  // goes first. Returns when it is done; the rank's clock stays. GPU ranks (hostCores 0)
  // compute on engines of their own: `seconds` from `from`.
  double runBeside(int rank, double from, double seconds);

  // From now on (before any rank has used the fabric) every rank is a thread that runs until
  // retire(rank), and the fabric carries out what ranks share in virtual-time order.
  void runInOrder();
  void retire(int rank);

  // Something a rank waits for: a send's departure from its rank (`at`: when its last byte
  // left), a receive's arrival.
  struct Event {
    bool done = false;
    double at = 0;
    int waiter = -1;         // the rank whose thread waits for it
    bool abandoned = false;  // a send's: its buffer is no longer there to carry
  };
  // A receive posted by a rank: filled by the matching send, in posting order per
  // (context, source, tag).
  struct Receive : Event {
    void* buffer = nullptr;
    size_t bytes = 0;
    bool truncated = false;  // the send was larger
    double postedAt = 0;     // its rank's clock when posted (a rendezvous waits for it)
  };
  // Matching is per (context, destination, source, tag); ranks are global. `departure` is
  // completed when the message has left (at once, unless in order), or for a rendezvous once
  // its receiver has it.
  void send(uint64_t context, int source, int destination, int tag, const void* data, size_t bytes,
            std::shared_ptr<Event> departure);
  void post(uint64_t context, int destination, int source, int tag, Receive* receive);
  // Drops a receive that will not be waited for (abandon).
  void cancel(uint64_t context, int destination, int source, int tag, const Receive* receive);
  // A send whose buffer goes away before it departed (abandon): it is not carried.
  void abandonSend(Event* departure);
  // Rank `rank` waits until `event` is done or the timeout; false on timeout or when `stop()`
  // holds.
  template <typename Stop>
  bool waitFor(int rank, Event& event, Stop&& stop);

  // Every member's `bytes` in member order, for the group `context` of `members` (global
  // ranks) where this rank is member `me`; `round` numbers its exchanges. The members' clocks
  // meet at the latest of them (a control exchange synchronizes). False on timeout.
  bool exchangeControl(uint64_t context, uint64_t round, const std::vector<int>& members, int me,
                       const void* mine, size_t bytes, void* all);
  // The context of a group split from `parent` (its `round`-th split) with `color`: the same
  // on every member.
  uint64_t childContext(uint64_t parent, uint64_t round, int color);

 private:
  // In order: what each rank may still make is keyed (virtual time, depth, rank); depth orders
  // what happens at one virtual time by cause (a rank woken at the very time of what woke it
  // comes after it), the rank breaks ties. An event carries its rank's key and a sequence
  // number.
  using Frontier = std::tuple<double, uint64_t, int>;
  struct Control {
    std::vector<std::vector<unsigned char>> parts;
    int arrived = 0;
    int left = 0;
    double latest = 0;
    Frontier release{0, 0, 0};  // in order: the latest of the members' keys as they arrived
  };
  // A port's busy intervals in virtual time (start -> end), adjacent ones merged.
  using Timeline = std::map<double, double>;
  // The port a message leaves or enters by: `lanes` timelines from `busy` on, each at
  // bytesPerSecond. A link that carries several NICs' worth is as many lanes of a NIC's rate
  // each (a message takes the lane free first): one timeline at the whole link's rate would
  // carry messages one after another at that rate, so that where each sender's NIC sets a
  // message's pace, a link with room for all of them would still hold each back behind the ones
  // before it.
  struct Port {
    Timeline* busy;
    double bytesPerSecond;
    int lanes = 1;
  };
  // The start of the first interval of `duration` from `ready` on that `busy` leaves free.
  static double firstFree(const Timeline& busy, double ready, double duration);
  // The end of that interval; it is then busy.
  static double reserve(Timeline* busy, double ready, double duration);
  // Marks `duration` from `start` busy (a free interval); its end.
  static double occupy(Timeline* busy, double start, double duration);
  // The same on the port's lane that is free first.
  static double reserve(const Port& port, double ready, double duration);
  // The ports a message between two ranks takes, in order (2, 4 through the spine, 6 through
  // the core; the CPUs at either end where they carry it), the one whose end completes the send,
  // the one the latency comes before (the receiving GPU's or NIC's), and the latency.
  struct Route {
    Port ports[8];
    int count = 0;
    int departure = 0;
    int landing = 0;
    double latency = 0;
  };
  Route route(int source, int destination);
  void routeBetweenNodes(int source, int destination, Route* route);
  // The leaf (or rail switch) NIC `nic` (of every node's NICs) hangs from, and its uplink's
  // bytes per second.
  int switchOf(int nic) const;
  // The link of `group`'s `links` that ECMP picks for a flow from NIC `from` to NIC `to`, by a
  // hash seeded with `tier`.
  static int ecmpLinkOf(int group, int links, int from, int to, uint64_t tier);
  // The uplink (and downlink) such a flow takes: its switches' link to the spine that ECMP
  // picks for it.
  int spineLinkOf(int nic, int from, int to) const;
  double uplinkBytesPerSecond() const;
  // The pod NIC `nic` is in, its link to the core a flow takes, and that link's bytes per
  // second.
  int podOf(int nic) const;
  int coreLinkOf(int nic, int from, int to) const;
  double podUplinkBytesPerSecond() const;
  // The lanes of a NIC's rate (at least one) a link of `bytesPerSecond` carries.
  int lanesOf(double bytesPerSecond) const;
  // Sizes a tier's links, up and down: `links` for each of `groups`, `lanes` each.
  static void sizeLinks(int groups, int links, int lanes, std::vector<Timeline>* up,
                        std::vector<Timeline>* down);
  // Link `link`'s port among `timelines`, `lanes` each.
  static Port linkPort(std::vector<Timeline>* timelines, int link, int lanes,
                       double bytesPerSecond);
  // Delivers `bytes` into a posted receive at `arrival`; wakes its rank if it is blocked on it.
  void deliver(const unsigned char* data, size_t bytes, double arrival, const Frontier& cause,
               Receive* receive);

  struct Pending {
    Frontier key{0, 0, 0};
    uint64_t sequence = 0;
    // A send (carry); a rendezvous send's bytes moving into the receive it matched (`into`,
    // from `from`); one whose receive was cancelled before they moved; or CPU work on the
    // rank's CPU (cpuWork: reserve `seconds` from `from`, in the gaps, or all at once, and
    // complete `done` at its end).
    enum class What { kCpuWork, kSend, kRendezvousData, kDropped } what = What::kCpuWork;
    Receive* into = nullptr;
    uint64_t context = 0;
    int destination = 0, tag = 0;
    // The sender's buffer, which the transport keeps until the send's departure (its wait);
    // copied when the send is carried.
    const unsigned char* data = nullptr;
    size_t bytes = 0;
    double from = 0, seconds = 0;
    bool inGaps = false;
    std::shared_ptr<Event> done;
    bool operator>(const Pending& other) const {
      return std::tie(key, sequence) > std::tie(other.key, other.sequence);
    }
  };
  // A message waiting for its receive: an eager send's bytes, or a rendezvous send's request
  // (`request`: its bytes stay in the sender's buffer until they move).
  struct Message {
    std::vector<unsigned char> data;
    double arrival = 0;
    Frontier cause{0, 0, 0};  // its send's key
    std::optional<Pending> request;
  };
  using Key = std::tuple<uint64_t, int, int, int>;  // context, destination, source, tag
  struct Mailbox {
    std::deque<Message> unmatched;
    std::deque<Receive*> posted;
  };
  struct RankState {
    Frontier frontier{0, 0, 0};
    bool running = true;  // not blocked, not retired
    bool retired = false;
    uint64_t sequence = 0;
  };
  // Queues `event` at its rank's key, then runs what is due.
  void schedule(int rank, Pending event);
  // Runs every pending event that no running rank could precede.
  void runDue();
  void carry(const Pending& send);
  // When a message of `bytes` from `source` to `destination`, from `now` on, has left its
  // sender (its last byte through the departure port) and when it has arrived; its route's
  // latency (0 to itself).
  struct Passage {
    double leaves;
    double arrival;
    double latency;
  };
  Passage pass(int source, int destination, double bytes, double now);
  bool goesByRendezvous(const Pending& send) const;
  // A rendezvous send and its receive have met: its bytes move, in order, once both sides are
  // ready (a round trip of the route's latency after the later of its request and the receive).
  void scheduleRendezvousData(Pending send, Receive* receive);
  void moveRendezvousData(const Pending& send);
  // The threads of the ranks whose events completed are woken once the lock is released (so
  // that they do not wake only to wait for it); `relock`: taken again after.
  void notifyWoken(std::unique_lock<std::mutex>& lock, bool relock);
  // `done` at `end`; wakes its waiter (at the later of its frontier and `end`).
  void complete(Event* event, double end, const Frontier& cause);
  void block(int rank);
  // Out of the running ranks, without running what that lets run (the caller wakes it again).
  void leaveRunning(int rank);
  void wake(int rank, double time, const Frontier& cause);
  // The rank's clock moved on: so does its frontier.
  void clockMoved(int rank);
  // A public call moved the rank's clock: its frontier follows, what that lets run runs, and
  // the threads it woke are told once the lock is released.
  void afterClockMoved(std::unique_lock<std::mutex>& lock, int rank);
  // The rank's work on its own CPU: at once where nothing else uses that CPU, else in order.
  double cpuWork(std::unique_lock<std::mutex>& lock, int rank, double from, double seconds,
                 bool inGaps);
  double reserveCpu(int rank, double from, double seconds, bool inGaps);
  bool cpuCarriesMessages() const;
  // When a wait that starts now times out (the fabric's timeout; none: far off).
  std::chrono::steady_clock::time_point waitDeadline() const;

  const int ranks_;
  const SimMachine machine_;
  const double timeout_;
  std::mutex mutex_;
  std::condition_variable controlChanged_;
  std::vector<double> clocks_;
  std::vector<Timeline> gpuOut_, gpuIn_;         // per rank
  std::vector<Timeline> cpu_;                    // per rank
  std::vector<Timeline> nicOut_, nicIn_;         // per node x NIC
  std::vector<Timeline> switchUp_, switchDown_;  // per leaf (or rail switch), to the spine
  std::vector<Timeline> podUp_, podDown_;        // per pod, to the core
  int uplinkLanes_ = 1, podLinkLanes_ = 1;       // a link's lanes in the vectors above
  std::map<Key, Mailbox> mailboxes_;
  std::map<std::tuple<uint64_t, uint64_t>, Control> controls_;
  std::map<std::tuple<uint64_t, uint64_t, int>, uint64_t> children_;
  uint64_t nextContext_ = 1;
  bool ordered_ = false;
  std::vector<RankState> states_;
  std::set<Frontier> running_;
  std::vector<Pending> pending_;                        // a heap, the earliest key on top
  std::unique_ptr<std::condition_variable[]> wakeups_;  // per rank
  std::vector<int> woken_;
};

template <typename Stop>
bool SimFabric::waitFor(int rank, Event& event, Stop&& stop) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (event.done) return true;
  const auto deadline = waitDeadline();
  event.waiter = rank;
  block(rank);
  notifyWoken(lock, true);
  bool done = true;
  while (!event.done) {
    // Short slices, so that an abort from another thread is seen.
    const auto slice = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    wakeups_[rank].wait_until(lock, std::min(slice, deadline));
    if (!event.done && (stop() || std::chrono::steady_clock::now() >= deadline)) {
      done = false;
      break;
    }
  }
  event.waiter = -1;
  // Given up: running again from where it was (a failed run's order no longer matters).
  if (!done) wake(rank, 0, Frontier{0, 0, 0});
  return done;
}

}  // namespace zccl
