// The planner's cost model, in the spirit of NCCL's tuning tables: each candidate path's time
// is the sum of its steps, a step costing the link's latency, each of its messages' overhead
// and its bytes over the link's bandwidth (the slowest link the step uses), plus the CPU time
// of quantizing, dequantizing and reducing what it touches. Link classes and bandwidths come from
// the topology every rank discovered and exchanged at init, so every rank computes the same plan.
// The formula of each path lives with its algorithm (its registry row's cost function); this file
// holds the model they are written in.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>

#include "collectives/paths.h"
#include "kernels/kernels.h"
#include "topology/topology.h"

namespace zccl {

// A link class's message costs, split as LogP splits them: the latency of the wire and its
// switches, which messages posted together wait out side by side, and the overhead each
// message costs its ends one after another (the CPU's protocol work and copies on the host
// transports; a descriptor for an RDMA or NVLink engine).
struct LinkModel {
  LinkClass link = LinkClass::kShm;
  double latencySeconds = 0;
  double overheadSeconds = 1e-6;
  double bytesPerSecond = 20e9;
  // Messages of at least this many bytes go by rendezvous (0: every one eager). Such a
  // message's request crosses, its receiver's clear-to-send comes back, its bytes cross and
  // its acknowledgement completes the send: three latencies more than the bytes' own, which a
  // rank waits out before its next step.
  double rendezvousBytes = 0;

  double loneMessageSeconds() const { return latencySeconds + overheadSeconds; }
  double handshakeSeconds(double messageBytes) const {
    return rendezvousBytes > 0 && messageBytes >= rendezvousBytes ? 3 * latencySeconds : 0;
  }
};

// Bytes of float32 input per second that a memory's kernels quantize, dequantize into an
// accumulator, reduce into another float32 buffer, and rotate for smoothing (one way: before
// quantizing or after decoding); the defaults stand where nothing was measured.
struct KernelRates {
  double quantize = 7e9;
  double dequantize = 14e9;
  double reduce = 10e9;
  double smoothing = 2e9;
};

// Each rate the slower of the two: what a job whose ranks measured `a` and `b` plans with.
inline KernelRates slowerOf(const KernelRates& a, const KernelRates& b) {
  return {std::min(a.quantize, b.quantize), std::min(a.dequantize, b.dequantize),
          std::min(a.reduce, b.reduce), std::min(a.smoothing, b.smoothing)};
}

// A job as the planner sees it: nodes of equal size (or not), and its two link classes.
struct ClusterModel {
  int nodes = 1;
  int ranksPerNode = 1;  // when uniform
  bool uniform = true;
  LinkModel intra;
  LinkModel inter;  // one port of a node's (a NIC, an HCA)
  // The ports a node's ranks cross by at once, each at inter's rate: a flat ring's hop takes
  // one, a node's ranks sending to other nodes together take up to this many.
  int rails = 1;
  // What the fabric carries of the rails when a node's ranks cross at once
  // (NodeTopology::interNodeFabricShare); a flat ring's one flow a hop crosses at the port's rate
  // where the uplinks of its leaf carry one port's rate at least.
  double fabricShare = 1;
  // The nodes a leaf (a pod) holds, 0 where not known, and the share of its leaves' uplinks
  // the pod's links to the core carry (NodeTopology's fields of the same names).
  int nodesPerLeaf = 0;
  int nodesPerPod = 0;
  double podFabricShare = 1;
  // The job's slowest rank's measured kernel rates (measureKernelRates), or the defaults.
  KernelRates kernels;
  // Elements per row of the pipelined quantized paths: the planned memory's
  // Kernels::pipelineElements().
  double pipelineElements = 65536;

  int ranks() const { return nodes * ranksPerNode; }
  bool twoLevelAvailable() const { return uniform && nodes > 1 && ranksPerNode > 1; }
};

// A link's message costs by class (estimates: a few microseconds on fabrics, tens on
// Ethernet).
LinkModel linkModel(LinkClass link, double gbps);

// The model of a job from every rank's node topology (the slowest of each class wins) and
// its node layout.
ClusterModel clusterModel(const NodeTopology& slowest, int nodes, int ranksPerNode, bool uniform);

// One call priced on a cluster: the sizes a path's formula is written in, and its terms.
struct CostTerms {
  const ClusterModel& c;
  DataType type;
  size_t bytes;       // the logical buffer: all ranks' data
  double block;       // bytes of one rank's block
  double wireBlock;   // its bytes on the wire
  double floatBlock;  // its float32 bytes, what the CPU kernels touch
  bool quantized;
  bool smoothed = false;  // the groups are rotated before quantizing and after decoding
  bool feedback = false;  // error feedback: the residual added, then what was lost recovered

  // `messages` of equal size posted together over `link`, `bytes` in all.
  static double step(const LinkModel& link, double bytes, double messages = 1) {
    return transfer(link, bytes, messages) + link.handshakeSeconds(bytes / messages);
  }
  // The same step's time on the wire, its messages' handshakes aside.
  static double transfer(const LinkModel& link, double bytes, double messages) {
    return link.latencySeconds + messages * link.overheadSeconds + bytes / link.bytesPerSecond;
  }
  // The link a flat algorithm's slowest step crosses.
  const LinkModel& flatLink() const { return c.nodes > 1 ? c.inter : c.intra; }
  // A ring of `steps`, each rank sending `bytes` to the next and then spending `perStep` on
  // what it received (a reduction). A rank's send completes once its bytes have left (as an
  // eager send's, and the simulated transport's), so the rank behind the slowest link sends
  // at that link's pace and pays its latency once; and a block reaches the last rank through
  // a chain of hops, each paying its own link's latency. The ring takes the longer of the two.
  // Over shared memory and TCP (no latency apart from each message's overhead) that is the
  // slowest link's step every step, as it always was. A rendezvous send completes only once
  // its receiver has the bytes: every step then waits out its handshake and the bytes' latency.
  double ring(double steps, double bytes, double perStep = 0) const {
    const LinkModel& slowest = flatLink();
    const double handshake = slowest.handshakeSeconds(bytes);
    const double waited = handshake > 0 ? handshake + slowest.latencySeconds : 0;
    const double pace = slowest.latencySeconds +
                        steps * (slowest.overheadSeconds + waited +
                                 bytes * ringCrossingSlowdown() / slowest.bytesPerSecond + perStep);
    const double crossings = c.nodes > 1 ? std::min(static_cast<double>(c.nodes), steps) : 0;
    const double chain = crossings * (step(c.inter, bytes) + perStep) +
                         (steps - crossings) * (step(c.intra, bytes) + perStep);
    return std::max(pace, chain);
  }
  // Error feedback adds to each quantization a decode of its message and two passes over the
  // values (the residual added before, what was lost kept after: quantizeWithFeedback).
  double quantize(double blocks) const {
    if (!quantized) return 0;
    const double perByte =
        1 / c.kernels.quantize + rotation() +
        (feedback ? 1 / c.kernels.dequantize + rotation() + 2 / c.kernels.reduce : 0);
    return blocks * floatBlock * perByte;
  }
  double dequantize(double blocks) const {
    return quantized ? blocks * floatBlock * (1 / c.kernels.dequantize + rotation()) : 0;
  }
  double rotation() const { return smoothed ? 1 / c.kernels.smoothing : 0; }
  double reduce(double blocks) const { return blocks * floatBlock / c.kernels.reduce; }
  // Rows of a block in the pipelined paths.
  double rows() const { return std::max(1.0, std::ceil(floatBlock / 4 / c.pipelineElements)); }
  // Two stages pipelined in rows: the slower counts, plus one row of the other to fill the
  // pipeline.
  double pipelined(double first, double second) const {
    return std::max(first, second) + std::min(first, second) / rows();
  }
  // A path pipelined in rows (every quantized one but the native) runs its kernels while
  // the link carries other rows. Other paths pay both.
  double overlapped(double wire, double compute) const {
    return quantized ? pipelined(wire, compute) : wire + compute;
  }
  // A step in which every rank of a node sends `bytesPerRank` to other nodes, every other node
  // alike, at once: the node's rails (each at ZCCL_INTER_NODE_GBPS's rate) carry them all
  // between them, or slower where its leaf's or pod's uplinks are the narrower.
  double crossNodeStep(double bytesPerRank, double messages = 1) const {
    const double rails = std::max(1, std::min(c.rails, c.ranksPerNode));
    return transfer(c.inter, c.ranksPerNode * bytesPerRank * fabricSlowdown() / rails, messages) +
           c.inter.handshakeSeconds(bytesPerRank / messages);
  }
  // How much longer than its rails alone a node's traffic to every other node takes: what
  // leaves its leaf (pod) over the share of the rails' rate that leaf's uplinks (the pod's
  // links) carry for it, when every node sends at once.
  double fabricSlowdown() const {
    const double leaf = leavingShare(c.nodesPerLeaf) / c.fabricShare;
    const double pod =
        c.nodesPerPod > 0 ? leavingShare(c.nodesPerPod) / (c.fabricShare * c.podFabricShare) : 0;
    return std::max({1.0, leaf, pod});
  }
  // How much longer than its port a flat ring's one flow out of a leaf (pod) takes where all
  // of the leaf's uplinks (the pod's links) carry less than one port's rate.
  double ringCrossingSlowdown() const {
    const auto crossing = [&](int groupNodes, double share) {
      if (groupNodes <= 0 || groupNodes >= c.nodes) return 1.0;
      return 1 / (groupNodes * c.rails * share);
    };
    return std::max({1.0, crossing(c.nodesPerLeaf, c.fabricShare),
                     crossing(c.nodesPerPod, c.fabricShare * c.podFabricShare)});
  }
  // The share of a node's traffic to every other node alike that leaves its group of
  // `groupNodes` nodes (all of it where the group is not known).
  double leavingShare(int groupNodes) const {
    if (groupNodes <= 0 || c.nodes < 2) return 1;
    return static_cast<double>(c.nodes - std::min(groupNodes, c.nodes)) / (c.nodes - 1);
  }
  // Sends to every other rank at once: the inter-node and intra-node shares overlap.
  double direct(double bytesPerPeer) const {
    const double n = c.ranks(), L = c.ranksPerNode;
    const double inter = c.nodes > 1 ? crossNodeStep((n - L) * bytesPerPeer, n - L) : 0;
    const double intra = step(c.intra, (L - 1) * bytesPerPeer, L - 1);
    return std::max(inter, intra);
  }
};

// Seconds for `collective` over `bytes` (the logical buffer) of `type` along `plan` (its row,
// or else the row its algorithm and wire name; infinite when there is none). Tuning the plan
// leaves open (a chunk size) is chosen on the way and, with `tuned`, returned.
double estimateSeconds(const ClusterModel& cluster, Collective collective, const Plan& plan,
                       size_t bytes, DataType type, Plan* tuned = nullptr);

// Bytes of float32 per second that smoothing rotates (smoothGroup), measured once per process.
double measureSmoothingRate();

// Times quantize, dequantize-accumulate and a sum reduction of `count` float32 values by `kernels`,
// in buffers of their memory (`data` and `accumulator`: count floats, `message`: messageBytes),
// each followed by `finish` (the wait for work queued on a device; a no-op on the host), and keeps
// each step's fastest of kRateRepeats: one timing alone reads a rank that lost its core to another
// process during the step as many times slower, and the job plans with its slowest rank's rates
// (docs/measurements.md). `data` holds the values to quantize; the rates of a step too fast to time
// stay the defaults. With `deriveSmoothing`, smoothing's rate is what a smoothed quantization
// takes beyond a plain one (a device's kernels rotate only inside one), at most
// kFastestSmoothing times the plain one's rate, past which the difference is the timings'
// noise; the CPU times its rotation itself (measureSmoothingRate).
inline constexpr int kRateRepeats = 5;
inline constexpr double kFastestSmoothing = 100;  // times a plain quantization's rate
template <typename Finish>
KernelRates measureKernelRates(Kernels& kernels, const float* data, void* message,
                               size_t messageBytes, float* accumulator, size_t count,
                               bool deriveSmoothing, Finish&& finish);

// The kernel rates of this CPU, smoothing's measured apart, once per process on 1 MiB.
void measureHostRates(ClusterModel* cluster);

template <typename Finish>
KernelRates measureKernelRates(Kernels& kernels, const float* data, void* message,
                               size_t messageBytes, float* accumulator, size_t count,
                               bool deriveSmoothing, Finish&& finish) {
  const QuantParams params;
  const auto seconds = [&](auto&& step) {
    const auto start = std::chrono::steady_clock::now();
    const Status status = step();
    if (status != Status::kSuccess || finish() != Status::kSuccess) return 0.0;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const auto quantize = [&] {
    return kernels.quantize(data, DataType::kFloat32, count, params, message, messageBytes);
  };
  QuantParams smoothedParams = params;
  smoothedParams.smoothing = true;
  const auto smoothedQuantize = [&] {
    return kernels.quantize(data, DataType::kFloat32, count, smoothedParams, message, messageBytes);
  };
  const auto dequantize = [&] {
    return kernels.dequantizeAccumulate(message, messageBytes, params, accumulator, count);
  };
  const auto reduce = [&] {
    return kernels.reduceInto(accumulator, data, count, DataType::kFloat32, RedOp::kSum);
  };
  seconds(quantize);  // warm the caches (and the device's code) and page in the buffers
  const auto fastest = [&](auto&& step) {
    double best = 0;
    for (int i = 0; i < kRateRepeats; ++i) {
      const double t = seconds(step);
      if (t > 0 && (best == 0 || t < best)) best = t;
    }
    return best;
  };
  KernelRates rates;
  const double q = fastest(quantize);
  const double d = fastest(dequantize);
  const double r = fastest(reduce);
  const double qs = deriveSmoothing ? fastest(smoothedQuantize) : 0;
  const double bytes = static_cast<double>(count) * sizeof(float);
  if (q > 0) rates.quantize = bytes / q;
  if (d > 0) rates.dequantize = bytes / d;
  if (r > 0) rates.reduce = bytes / r;
  if (q > 0 && qs > 0) rates.smoothing = bytes / std::max(qs - q, q / kFastestSmoothing);
  return rates;
}

}  // namespace zccl
