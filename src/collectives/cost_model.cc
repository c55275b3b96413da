// The cost model's cluster description and the kernel-rate measurement (cost_model.h).
#include "collectives/cost_model.h"

#include <chrono>
#include <limits>
#include <vector>

#include "collectives/registry.h"
#include "kernels/kernels.h"
#include "quant/quantize.h"
#include "quant/rotation.h"

namespace zccl {
namespace {

// Wire bytes per byte of data: the codes plus a float32 scale per group (default groups).
double wireRatio(WireFormat wire, DataType type) {
  if (wire == WireFormat::kNone) return 1.0;
  const double perElement = wireBits(wire) / 8.0 + 4.0 / kDefaultGroupSize;
  return perElement / static_cast<double>(elementSize(type));
}

}  // namespace

LinkModel linkModel(LinkClass link, double gbps) {
  LinkModel model;
  model.link = link;
  model.bytesPerSecond = gbps * 1e9;
  // A lone message costs 1 us in shared memory, 3 over NVLink or InfiniBand, 5 over PCIe and
  // 25 over Ethernet. Where the host's CPU moves each message (shared memory, TCP) all of it
  // is the message's own; where an engine does (a GPU's copy engines or kernels, an RDMA NIC),
  // a message costs its end a post and a completion, and messages posted together share the
  // wire's latency.
  switch (link) {
    case LinkClass::kSelf:
    case LinkClass::kShm:
      model.overheadSeconds = 1e-6;
      break;
    case LinkClass::kNvlink:
      model.latencySeconds = 2.9e-6;
      model.overheadSeconds = 0.1e-6;
      break;
    case LinkClass::kInfiniband:
      model.latencySeconds = 2.5e-6;
      model.overheadSeconds = 0.5e-6;
      break;
    case LinkClass::kPcie:
      model.latencySeconds = 4.5e-6;
      model.overheadSeconds = 0.5e-6;
      break;
    case LinkClass::kEthernet:
      model.overheadSeconds = 25e-6;
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
  c.rails = std::max(1, slowest.interNodeRails);
  c.fabricShare = slowest.interNodeFabricShare;
  c.nodesPerLeaf = slowest.nodesPerLeaf;
  c.nodesPerPod = slowest.nodesPerPod;
  c.podFabricShare = slowest.podFabricShare;
  return c;
}

double estimateSeconds(const ClusterModel& cluster, Collective collective, const Plan& plan,
                       size_t bytes, DataType type, Plan* tuned) {
  Plan priced = plan;
  if (priced.row == nullptr) {
    priced.row =
        findRow(collective, plan.algorithm, plan.wire != WireFormat::kNone, MemoryKind::kHost);
  }
  if (priced.row == nullptr || priced.row->cost == nullptr) {
    return std::numeric_limits<double>::infinity();
  }
  const double block = static_cast<double>(bytes) / cluster.ranks();
  const CostTerms terms{cluster,
                        type,
                        bytes,
                        block,
                        block * wireRatio(plan.wire, type),
                        block * 4.0 / static_cast<double>(elementSize(type)),
                        plan.wire != WireFormat::kNone,
                        plan.wire != WireFormat::kNone && plan.quant.smoothing,
                        plan.wire != WireFormat::kNone && plan.errorFeedback};
  const double seconds = priced.row->cost(terms, &priced);
  if (tuned != nullptr) *tuned = priced;
  return seconds;
}

void measureHostRates(ClusterModel* cluster) {
  static const KernelRates rates = [] {
    constexpr size_t kCount = 1 << 18;  // 1 MiB of float32
    std::vector<float> data(kCount), accumulator(kCount, 0.0f);
    for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(i % 251) - 125.0f;
    std::vector<unsigned char> message(quantizedBytes(kCount, QuantParams{}));
    return measureKernelRates(hostKernels(), data.data(), message.data(), message.size(),
                              accumulator.data(), kCount, /*deriveSmoothing=*/false,
                              [] { return Status::kSuccess; });
  }();
  cluster->kernels = rates;
  cluster->kernels.smoothing = measureSmoothingRate();
}

double measureSmoothingRate() {
  static const double rate = [] {
    constexpr size_t kCount = 1 << 18;  // 1 MiB of float32
    std::vector<float> data(kCount);
    for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<float>(i % 251) - 125.0f;
    double best = 0;
    for (int repeat = 0; repeat <= kRateRepeats; ++repeat) {
      const auto start = std::chrono::steady_clock::now();
      for (size_t first = 0; first < kCount; first += kDefaultGroupSize) {
        smoothGroupHost(data.data() + first, kDefaultGroupSize, 1, first);
      }
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (repeat > 0 && t > 0 && (best == 0 || t < best)) best = t;  // the first warms up
    }
    return best > 0 ? kCount * sizeof(float) / best : KernelRates{}.smoothing;
  }();
  return rate;
}

}  // namespace zccl
