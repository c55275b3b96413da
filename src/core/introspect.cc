// Read-only views of a communicator for tools (zccl/zccl_introspect.h).
#include <cstring>
#include <string>

#include "collectives/planner.h"
#include "core/guarded.h"
#include "core/validate.h"
#include "quant/quantize.h"
#include "topology/describe.h"
#include "zccl/zccl_introspect.h"

using zccl::Status;

static_assert(zcclNumCollectives == zccl::kNumCollectives, "collectives drifted");

namespace {

// The cluster a query plans for: the communicator's own, or a job of the asked shape on the
// same links.
Status queryCluster(const zcclComm* comm, const zcclPlanQuery& query, zccl::ClusterModel* cluster,
                    zccl::NodeLevels* levels, bool* hasLevels) {
  *cluster = comm->cluster;
  *hasLevels = comm->hasLevels();
  if (*hasLevels) *levels = comm->levels;
  if (query.nodes == 0 && query.ranksPerNode == 0) return Status::kSuccess;
  if (query.nodes <= 0 || query.ranksPerNode <= 0) {
    return zccl::fail(Status::kInvalidArgument,
                      "query.nodes=%d query.ranksPerNode=%d: expected both > 0 (a what-if "
                      "shape) or both 0 (the communicator's own)",
                      query.nodes, query.ranksPerNode);
  }
  cluster->nodes = query.nodes;
  cluster->ranksPerNode = query.ranksPerNode;
  cluster->uniform = true;
  levels->numNodes = query.nodes;
  levels->ranksPerNode = query.ranksPerNode;
  *hasLevels = true;
  return Status::kSuccess;
}

Status checkQuery(const zcclPlanQuery* query) {
  if (query == nullptr) return zccl::fail(Status::kInvalidArgument, "query=NULL");
  ZCCL_CHECK(zccl::checkHeader("query", query->magic, query->size, ZCCL_PLAN_QUERY_MAGIC,
                               sizeof(zcclPlanQuery), "ZCCL_PLAN_QUERY_INITIALIZER"));
  if (static_cast<int>(query->collective) < 0 ||
      static_cast<int>(query->collective) >= zcclNumCollectives) {
    return zccl::fail(Status::kInvalidArgument, "query.collective=%d: expected 0..%d",
                      static_cast<int>(query->collective), zcclNumCollectives - 1);
  }
  ZCCL_CHECK(zccl::checkType(query->datatype));
  return zccl::checkOp(query->op);
}

}  // namespace

extern "C" {

zcclResult_t zcclCommGetTopologyInfo(zcclComm_t comm, zcclTopologyInfo* info) {
  return zccl::guardedComm(comm, [&] {
    if (info == nullptr) return zccl::fail(Status::kInvalidArgument, "info=NULL");
    const zccl::NodeTopology* node = nullptr;
    ZCCL_CHECK(zccl::localTopology(&node));
    const zccl::ClusterModel& c = comm->cluster;
    *info = zcclTopologyInfo{};
    info->nodes = comm->nodes.numNodes();
    info->ranksPerNode = comm->nodes.isUniform() ? comm->nodes.localSize(comm->rank()) : 0;
    info->gpusOnThisNode = static_cast<int>(node->gpus.size());
    info->intraNodeLink = zccl::linkClassName(c.intra.link);
    info->intraNodeGBps = c.intra.bytesPerSecond / 1e9;
    info->interNodeLink = zccl::linkClassName(c.inter.link);
    info->interNodeGBps = c.inter.bytesPerSecond / 1e9;
    info->lowBandwidth =
        c.intra.link != zccl::LinkClass::kNvlink && c.inter.link != zccl::LinkClass::kInfiniband;
    info->quantizeGBps = c.kernels.quantize / 1e9;
    info->dequantizeGBps = c.kernels.dequantize / 1e9;
    info->reduceGBps = c.kernels.reduce / 1e9;
    info->cpuModel = zccl::hostCpuModel();
    info->quantKernels = zccl::quantKernelName();
    if (zccl::deviceRuntime() != nullptr) {
      zccl::DeviceEngine* device = nullptr;
      ZCCL_CHECK(zccl::deviceEngineOf(comm, &device));
      zccl::KernelRates rates;
      ZCCL_CHECK(zccl::drainQueuedWork(comm));
      ZCCL_CHECK(device->localRates(&rates));
      info->deviceQuantizeGBps = rates.quantize / 1e9;
      info->deviceDequantizeGBps = rates.dequantize / 1e9;
      info->deviceReduceGBps = rates.reduce / 1e9;
    }
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommGetNodeMap(zcclComm_t comm, int* nodeOfRank) {
  return zccl::guardedComm(comm, [&] {
    if (nodeOfRank == nullptr) return zccl::fail(Status::kInvalidArgument, "nodeOfRank=NULL");
    for (int r = 0; r < comm->size(); ++r) nodeOfRank[r] = comm->nodes.nodeOf(r);
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommGetPlan(zcclComm_t comm, const zcclPlanQuery* query, zcclPlanInfo* plan) {
  return zccl::guardedComm(comm, [&] {
    ZCCL_CHECK(checkQuery(query));
    if (plan == nullptr) return zccl::fail(Status::kInvalidArgument, "plan=NULL");
    zccl::CollectiveOptions options;
    ZCCL_CHECK(zccl::resolveCollOptions(query->options, comm->config,
                                        static_cast<zccl::Collective>(query->collective),
                                        query->bytes, &options));
    zccl::ClusterModel cluster;
    zccl::NodeLevels levels;
    bool hasLevels = false;
    ZCCL_CHECK(queryCluster(comm, *query, &cluster, &levels, &hasLevels));
    const auto collective = static_cast<zccl::Collective>(query->collective);
    const auto type = static_cast<zccl::DataType>(query->datatype);
    const zccl::Plan chosen =
        zccl::planCollective(collective, type, static_cast<zccl::RedOp>(query->op), query->bytes,
                             options, hasLevels ? &levels : nullptr, &cluster);
    const double seconds = zccl::estimateSeconds(cluster, collective, chosen, query->bytes, type);
    plan->algorithm = zccl::algorithmName(chosen.algorithm);
    plan->wire = zccl::wireFormatName(chosen.wire);
    plan->estimatedSeconds = seconds < 1e300 ? seconds : -1.0;
    plan->chunkBytes = chosen.chunkBytes;
    return Status::kSuccess;
  });
}

zcclResult_t zcclCommDescribeTopology(zcclComm_t comm, int json, char* buffer, size_t* bytes) {
  return zccl::guardedComm(comm, [&] {
    if (bytes == nullptr) return zccl::fail(Status::kInvalidArgument, "bytes=NULL");
    const zccl::NodeTopology* node = nullptr;
    ZCCL_CHECK(zccl::localTopology(&node));
    const std::string text =
        json ? zccl::describeTopologyJson(*node) : zccl::describeTopology(*node);
    const size_t capacity = *bytes;
    *bytes = text.size() + 1;
    if (buffer == nullptr) return Status::kSuccess;
    if (capacity < text.size() + 1) {
      return zccl::fail(Status::kInvalidArgument, "bytes=%zu: the description needs %zu", capacity,
                        text.size() + 1);
    }
    std::memcpy(buffer, text.c_str(), text.size() + 1);
    return Status::kSuccess;
  });
}

}  // extern "C"
