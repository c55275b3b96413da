// The planner's cost model, in the spirit of NCCL's tuning tables: each candidate path's time
// is the sum of its steps, a step costing one message latency plus its bytes over the link's
// bandwidth (the slowest link the step uses), plus the CPU time of quantizing, dequantizing
// and reducing what it touches. Link classes and bandwidths come from the topology every
// rank discovered and exchanged at init, so every rank computes the same plan. The formula
// of each path lives with its algorithm (its registry row's cost function); this file holds
// the model they are written in.
#pragma once

#include <algorithm>
#include <cstddef>

#include "collectives/paths.h"
#include "topology/topology.h"

namespace zccl {

struct LinkModel {
  LinkClass link = LinkClass::kShm;
  double latencySeconds = 1e-6;
  double bytesPerSecond = 20e9;
};

// A job as the planner sees it: nodes of equal size (or not), and its two link classes.
struct ClusterModel {
  int nodes = 1;
  int ranksPerNode = 1;  // when uniform
  bool uniform = true;
  LinkModel intra;
  LinkModel inter;
  // CPU rates per byte of float32 input: quantizing, dequantizing (and accumulating), and
  // reducing in place; measured once per process (measureQuantRates) or the defaults.
  double quantizeBytesPerSecond = 7e9;
  double dequantizeBytesPerSecond = 14e9;
  double reduceBytesPerSecond = 10e9;

  int ranks() const { return nodes * ranksPerNode; }
  bool twoLevelAvailable() const { return uniform && nodes > 1 && ranksPerNode > 1; }
};

// A link's latency by class (an estimate: a few microseconds on fabrics, tens on Ethernet).
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

  static double step(const LinkModel& link, double bytes, double messages = 1) {
    return messages * link.latencySeconds + bytes / link.bytesPerSecond;
  }
  // The link a flat algorithm's slowest step crosses.
  const LinkModel& flatLink() const { return c.nodes > 1 ? c.inter : c.intra; }
  double quantize(double blocks) const {
    return quantized ? blocks * floatBlock / c.quantizeBytesPerSecond : 0;
  }
  double dequantize(double blocks) const {
    return quantized ? blocks * floatBlock / c.dequantizeBytesPerSecond : 0;
  }
  double reduce(double blocks) const { return blocks * floatBlock / c.reduceBytesPerSecond; }
  // Sends to every other rank at once: the inter-node and intra-node shares overlap.
  double direct(double bytesPerPeer) const {
    const double n = c.ranks(), L = c.ranksPerNode;
    const double inter = c.nodes > 1 ? step(c.inter, (n - L) * bytesPerPeer, n - L) : 0;
    const double intra = step(c.intra, (L - 1) * bytesPerPeer, L - 1);
    return std::max(inter, intra);
  }
};

// Seconds for `collective` over `bytes` (the logical buffer) of `type` along `plan` (its row,
// or else the row its algorithm and wire name; infinite when there is none). Tuning the plan
// leaves open (a chunk size) is chosen on the way and, with `tuned`, returned.
double estimateSeconds(const ClusterModel& cluster, Collective collective, const Plan& plan,
                       size_t bytes, DataType type, Plan* tuned = nullptr);

// Quantization rates of this CPU, measured once on 1 MiB (quantize + dequantize-accumulate).
void measureQuantRates(ClusterModel* cluster);

}  // namespace zccl
