// The planner's cost model, in the spirit of NCCL's tuning tables: each candidate path's time
// is the sum of its steps, a step costing one message latency plus its bytes over the link's
// bandwidth (the slowest link the step uses), plus the CPU time of quantizing, dequantizing
// and reducing what it touches. Link classes and bandwidths come from the topology every
// rank discovered and exchanged at init, so every rank computes the same plan.
#pragma once

#include <cstddef>

#include "collectives/planner.h"
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
  // reducing in place; measured once per process (quantRatesMeasured) or the defaults.
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

// Seconds for `collective` over `bytes` (the logical buffer: all ranks' data) of `type`
// along `plan`.
double estimateSeconds(const ClusterModel& cluster, Collective collective, const Plan& plan,
                       size_t bytes, DataType type);

// The candidate paths the options leave open, the fastest by the model first.
Plan cheapestPlan(const ClusterModel& cluster, Collective collective, DataType type, RedOp op,
                  size_t bytes, const CollectiveOptions& options);

// Quantization rates of this CPU, measured once on 1 MiB (quantize + dequantize-accumulate).
void measureQuantRates(ClusterModel* cluster);

}  // namespace zccl
