#include "collectives/cost_model.h"

#include <chrono>
#include <limits>
#include <vector>

#include "collectives/registry.h"
#include "kernels/kernels.h"
#include "quant/quantize.h"

namespace zccl {
namespace {

// Wire bytes per byte of data: the codes plus a float32 scale per group (default groups).
double wireRatio(WireFormat wire, DataType type) {
  if (wire == WireFormat::kNone) return 1.0;
  const double bits = wire == WireFormat::kInt8 ? 8 : 4;
  const double perElement = bits / 8 + 4.0 / kDefaultGroupSize;
  return perElement / static_cast<double>(elementSize(type));
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
                        plan.wire != WireFormat::kNone};
  const double seconds = priced.row->cost(terms, &priced);
  if (tuned != nullptr) *tuned = priced;
  return seconds;
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
      Kernels& host = hostKernels();
      const auto run = [&] {
        host.quantize(data.data(), DataType::kFloat32, kCount, params, message.data(),
                      message.size());
      };
      run();  // warm the caches and page in the buffers
      const double q = time(run);
      const double d = time([&] {
        host.dequantizeAccumulate(message.data(), message.size(), params, acc.data(), kCount);
      });
      if (q > 0) quantizeRate = kCount * 4.0 / q;
      if (d > 0) dequantizeRate = kCount * 4.0 / d;
    }
  } rates;
  cluster->quantizeBytesPerSecond = rates.quantizeRate;
  cluster->dequantizeBytesPerSecond = rates.dequantizeRate;
}

}  // namespace zccl
