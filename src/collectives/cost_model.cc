#include "collectives/cost_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "collectives/algorithms.h"
#include "quant/quantize.h"

namespace zccl {
namespace {

double stepSeconds(const LinkModel& link, double bytes, double messages = 1) {
  return messages * link.latencySeconds + bytes / link.bytesPerSecond;
}

// Wire bytes per byte of data: the codes plus a float32 scale per group.
double wireRatio(const Plan& plan, const CollectiveOptions& options, DataType type) {
  if (plan.wire == WireFormat::kNone) return 1.0;
  const double bits = plan.wire == WireFormat::kInt8 ? 8 : 4;
  const double perElement = bits / 8 + 4.0 / options.groupSize;
  return perElement / static_cast<double>(elementSize(type));
}

struct Terms {
  const ClusterModel& c;
  double block;       // bytes of one rank's block
  double wireBlock;   // its bytes on the wire
  double floatBlock;  // its float32 bytes, what the CPU kernels touch
  bool quantized;

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
    const double inter = c.nodes > 1 ? stepSeconds(c.inter, (n - L) * bytesPerPeer, n - L) : 0;
    const double intra = stepSeconds(c.intra, (L - 1) * bytesPerPeer, L - 1);
    return std::max(inter, intra);
  }
};

double allGatherSeconds(const Terms& t, bool twoLevel) {
  const double n = t.c.ranks(), N = t.c.nodes, L = t.c.ranksPerNode;
  const double cpu = t.quantize(1) + t.dequantize(n);
  if (!twoLevel) return (n - 1) * stepSeconds(t.flatLink(), t.wireBlock) + cpu;
  return (N - 1) * stepSeconds(t.c.inter, t.wireBlock) +
         (L - 1) * stepSeconds(t.c.intra, N * t.wireBlock, N) + cpu;
}

double reduceScatterSeconds(const Terms& t, const Plan& plan) {
  const double n = t.c.ranks(), N = t.c.nodes, L = t.c.ranksPerNode;
  if (plan.algorithm == Algorithm::kTwoLevel) {
    const double hop1 = (L - 1) * N, hop2 = N - 1;
    const double messages1 = t.quantized ? L - 1 : hop1;
    return stepSeconds(t.c.intra, hop1 * t.wireBlock, messages1) +
           stepSeconds(t.c.inter, hop2 * t.wireBlock, hop2) + t.quantize(hop1 + hop2) +
           t.dequantize(hop1 + hop2) + (t.quantized ? 0 : t.reduce(hop1 + hop2));
  }
  if (plan.algorithm == Algorithm::kRing && !t.quantized) {
    return (n - 1) * (stepSeconds(t.flatLink(), t.block) + t.reduce(1));
  }
  return t.direct(t.wireBlock) + t.quantize(n - 1) + t.dequantize(n - 1) +
         (t.quantized ? 0 : t.reduce(n - 1));
}

// The pipelined chain's segment: (n - 2 + bytes / s) * (latency + s / bandwidth) is least at
// s = sqrt(bytes * latency * bandwidth / (n - 2)); a power of two in [64 KiB, 64 MiB].
size_t broadcastSegment(const ClusterModel& c, size_t bytes) {
  const LinkModel& link = c.nodes > 1 ? c.inter : c.intra;
  const double hops = std::max(1, c.ranks() - 2);
  const double best =
      std::sqrt(static_cast<double>(bytes) * link.latencySeconds * link.bytesPerSecond / hops);
  size_t segment = size_t{64} << 10;
  while (segment < (size_t{64} << 20) && static_cast<double>(segment) * 1.5 < best) segment *= 2;
  return segment;
}

}  // namespace

LinkModel linkModel(LinkClass link, double gbps) {
  LinkModel model;
  model.link = link;
  model.bytesPerSecond = gbps * 1e9;
  switch (link) {
    case LinkClass::kSelf:
    case LinkClass::kShm:
      model.latencySeconds = 1e-6;
      break;
    case LinkClass::kNvlink:
    case LinkClass::kInfiniband:
      model.latencySeconds = 3e-6;
      break;
    case LinkClass::kPcie:
      model.latencySeconds = 5e-6;
      break;
    case LinkClass::kEthernet:
      model.latencySeconds = 25e-6;
      break;
  }
  return model;
}

ClusterModel clusterModel(const NodeTopology& slowest, int nodes, int ranksPerNode, bool uniform) {
  ClusterModel c;
  c.nodes = nodes;
  c.ranksPerNode = ranksPerNode;
  c.uniform = uniform;
  c.intra = linkModel(slowest.intraNode, slowest.intraNodeGBps);
  c.inter = linkModel(slowest.interNode, slowest.interNodeGBps);
  return c;
}

double estimateSeconds(const ClusterModel& cluster, Collective collective, const Plan& plan,
                       size_t bytes, DataType type) {
  CollectiveOptions defaults;
  const double n = cluster.ranks();
  const double block = static_cast<double>(bytes) / n;
  const Terms t{cluster, block, block * wireRatio(plan, defaults, type),
                block * 4.0 / static_cast<double>(elementSize(type)),
                plan.wire != WireFormat::kNone};
  const bool twoLevel = plan.algorithm == Algorithm::kTwoLevel;
  switch (collective) {
    case Collective::kAllGather:
      return allGatherSeconds(t, twoLevel);
    case Collective::kReduceScatter:
      return reduceScatterSeconds(t, plan);
    case Collective::kAllReduce:
      return reduceScatterSeconds(t, plan) + allGatherSeconds(t, twoLevel);
    case Collective::kAllToAll:
      return t.direct(block);
    case Collective::kBroadcast: {
      const size_t chunk = plan.chunkBytes > 0 ? plan.chunkBytes : kDefaultBroadcastSegment;
      const double segment = std::min(static_cast<double>(bytes), static_cast<double>(chunk));
      const double segments = std::max(1.0, static_cast<double>(bytes) / segment);
      return (n - 2 + segments) * stepSeconds(t.flatLink(), segment);
    }
  }
  return 0;
}

Plan cheapestPlan(const ClusterModel& cluster, Collective collective, DataType type, RedOp op,
                  size_t bytes, const CollectiveOptions& options) {
  const bool lossyApplies = options.wire != WireFormat::kNone && wireApplies(collective, type, op);
  std::vector<WireFormat> wires{WireFormat::kNone};
  if (lossyApplies)
    wires = options.wireAllowedOnly ? std::vector<WireFormat>{WireFormat::kNone, options.wire}
                                    : std::vector<WireFormat>{options.wire};
  const bool hierarchical = hasTwoLevelForm(collective);
  std::vector<bool> levels{false};
  if (hierarchical && cluster.uniform && options.hierarchy == Hierarchy::kTwoLevel) levels = {true};
  if (hierarchical && cluster.twoLevelAvailable() && options.hierarchy == Hierarchy::kAuto)
    levels = {false, true};

  Plan best{Algorithm::kAuto, WireFormat::kNone};
  double bestSeconds = 0;
  for (WireFormat wire : wires) {
    for (bool twoLevel : levels) {
      Plan plan =
          pathFor(collective, flatAlgorithm(collective, type, Algorithm::kAuto), wire, twoLevel);
      if (plan.algorithm == Algorithm::kPipelined)
        plan.chunkBytes = broadcastSegment(cluster, bytes);
      const double seconds = estimateSeconds(cluster, collective, plan, bytes, type);
      if (best.algorithm == Algorithm::kAuto || seconds < bestSeconds) {
        best = plan;
        bestSeconds = seconds;
      }
    }
  }
  return best;
}

void measureQuantRates(ClusterModel* cluster) {
  static const struct Rates {
    double quantizeRate = 7e9, dequantizeRate = 14e9;
    Rates() {
      constexpr size_t kCount = 1 << 18;  // 1 MiB of float32
      std::vector<float> data(kCount), acc(kCount, 0.0f);
      for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(i % 251) - 125.0f;
      QuantParams params;
      std::vector<unsigned char> message(quantizedBytes(kCount, params));
      const auto time = [](auto&& body) {
        const auto start = std::chrono::steady_clock::now();
        body();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      };
      const auto run = [&] {
        quantize(data.data(), DataType::kFloat32, kCount, params, message.data(), message.size());
      };
      run();  // warm the caches and page in the buffers
      const double q = time(run);
      const double d =
          time([&] { dequantizeAccumulate(message.data(), message.size(), acc.data(), kCount); });
      if (q > 0) quantizeRate = kCount * 4.0 / q;
      if (d > 0) dequantizeRate = kCount * 4.0 / d;
    }
  } rates;
  cluster->quantizeBytesPerSecond = rates.quantizeRate;
  cluster->dequantizeBytesPerSecond = rates.dequantizeRate;
}

}  // namespace zccl
