// A simulated cluster for zccl's unchanged algorithms: every rank a thread of this process,
// every message carried in memory and stamped in virtual time over a modelled machine (GPUs
// per node on an NVLink-class switch, nodes with NICs on a fabric that may be oversubscribed).
// Each rank keeps its own virtual clock: a send takes the first time its port is free for as
// long as its bytes need at the port's bandwidth, from the rank's clock on, and arrives a
// latency later, once the receiving port too has had the time; a receive completes at the
// later of the rank's clock and the arrival; kernels and modelled compute move the clock on.
// Ports keep their busy intervals in virtual time, so ranks whose threads run out of step (as
// they do: thousands of threads on a few cores) still share a port in virtual-time order.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
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
  enum class KernelFamily { kCopy, kReduce, kAccumulate, kQuantize, kDequantize };
  static constexpr int kKernelFamilies = 5;
  // The family's own rate, GB/s (0: none given).
  double familyGBps(KernelFamily family) const;
  // The rate the family's kernels run at, bytes per second.
  double kernelBytesPerSecond(KernelFamily family) const;
  // The ranks that share the host's cores, and the part of a core each one's CPU work gets.
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
  // Runs `seconds` of a rank's kernel work (at a whole core's speed) on its CPU, from its clock
  // on, when its CPU is free; the clock moves to its end.
  void runKernel(int rank, double seconds);
  // Work of another stream on a rank's CPU (a CPU rank's model compute beside its collectives):
  // `seconds` of it, in the gaps the CPU leaves from `from` on, where what was reserved before
  // goes first. Returns when it is done; the rank's clock stays. GPU ranks (hostCores 0)
  // compute on engines of their own: `seconds` from `from`.
  double runBeside(int rank, double from, double seconds);

  // A receive posted by a rank: filled by the matching send, in posting order per
  // (context, source, tag).
  struct Receive {
    void* buffer = nullptr;
    size_t bytes = 0;
    bool done = false;
    bool truncated = false;  // the send was larger
    double arrival = 0;
    std::condition_variable ready;  // its own: a delivery wakes its one waiter only
  };
  // Matching is per (context, destination, source, tag); ranks are global.
  void send(uint64_t context, int source, int destination, int tag, const void* data, size_t bytes,
            double* departedAt);
  void post(uint64_t context, int destination, int source, int tag, Receive* receive);
  // Drops a receive that will not be waited for (abandon).
  void cancel(uint64_t context, int destination, int source, int tag, const Receive* receive);
  // Waits until `receive` is done or the timeout; false on timeout or when `stop()` holds.
  template <typename Stop>
  bool waitFor(Receive& receive, Stop&& stop);

  // Every member's `bytes` in member order, for the group `context` of `members` (global
  // ranks) where this rank is member `me`; `round` numbers its exchanges. The members' clocks
  // meet at the latest of them (a control exchange synchronizes). False on timeout.
  bool exchangeControl(uint64_t context, uint64_t round, const std::vector<int>& members, int me,
                       const void* mine, size_t bytes, void* all);
  // The context of a group split from `parent` (its `round`-th split) with `color`: the same
  // on every member.
  uint64_t childContext(uint64_t parent, uint64_t round, int color);

 private:
  struct Message {
    std::vector<unsigned char> data;
    double arrival;
  };
  using Key = std::tuple<uint64_t, int, int, int>;  // context, destination, source, tag
  struct Mailbox {
    std::deque<Message> unmatched;
    std::deque<Receive*> posted;
  };
  struct Control {
    std::vector<std::vector<unsigned char>> parts;
    int arrived = 0;
    int left = 0;
    double latest = 0;
  };
  // A port's busy intervals in virtual time (start -> end), adjacent ones merged.
  using Timeline = std::map<double, double>;
  // The port a message leaves or enters by, and its bytes per second.
  struct Port {
    Timeline* busy;
    double bytesPerSecond;
  };
  // The end of the first interval of `duration` from `ready` on that `busy` leaves free; it is
  // then busy.
  static double reserve(Timeline* busy, double ready, double duration);
  // The ports a message between two ranks takes, in order (2, or 4 through the spine; the
  // CPUs at either end where they carry it), the one whose end completes the send, the one
  // the latency comes before (the receiving GPU's or NIC's), and the latency.
  struct Route {
    Port ports[6];
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
  double uplinkBytesPerSecond() const;
  static void deliver(const Message& message, Receive* receive);

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
  std::map<Key, Mailbox> mailboxes_;
  std::map<std::tuple<uint64_t, uint64_t>, Control> controls_;
  std::map<std::tuple<uint64_t, uint64_t, int>, uint64_t> children_;
  uint64_t nextContext_ = 1;
};

template <typename Stop>
bool SimFabric::waitFor(Receive& receive, Stop&& stop) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_ > 0 ? timeout_ : 1e9));
  while (!receive.done) {
    if (stop()) return false;
    // Short slices, so that an abort from another thread is seen.
    const auto slice = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    receive.ready.wait_until(lock, std::min(slice, deadline));
    if (std::chrono::steady_clock::now() >= deadline && !receive.done) return false;
  }
  return true;
}

}  // namespace zccl
