// The Python side of the backend: zccl_torch registers "zccl" with torch.distributed through
// create_backend, and reads statistics and sets policies by process-group name.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/python.h>

#include "backend.h"

namespace zccl_torch {
namespace {

int wireNamed(const std::string& name, const char* what) {
  zcclWireFormat_t format = zcclWireNone;
  TORCH_CHECK(zcclWireFormatFromName(name.c_str(), &format) == zcclSuccess, "zccl_torch: ", what,
              "=", name, ": ", zcclGetLastError(nullptr));
  return format;
}

zcclWirePolicy policyOf(const std::string& allGather, const std::string& reduceScatter,
                        const std::string& allReduce, int64_t minBytes) {
  TORCH_CHECK(minBytes >= 0, "zccl_torch: min_bytes=", minBytes, ": expected >= 0");
  zcclWirePolicy policy = ZCCL_WIRE_POLICY_INITIALIZER;
  policy.allGather = wireNamed(allGather, "allgather");
  policy.reduceScatter = wireNamed(reduceScatter, "reduce_scatter");
  policy.allReduce = wireNamed(allReduce, "allreduce");
  policy.minBytes = static_cast<size_t>(minBytes);
  return policy;
}

// zccl's names of its wire formats, in zcclWireFormat_t's order.
std::vector<std::string> wireFormatNames() {
  std::vector<std::string> names;
  for (int format = 0; format < zcclNumWireFormats; ++format) {
    names.emplace_back(zcclWireFormatName(static_cast<zcclWireFormat_t>(format)));
  }
  return names;
}

ZcclBackend& backendOf(const std::string& groupName) {
  ZcclBackend* backend = backendNamed(groupName);
  TORCH_CHECK(backend != nullptr, "zccl_torch: process group '", groupName,
              "' has no zccl backend in this process");
  return *backend;
}

// feedback_precision's residual type (the Python side has checked the name).
zcclDataType_t residualTypeOf(const std::string& residuals) {
  if (residuals == "bf16") return zcclBfloat16;
  if (residuals == "int8") return zcclInt8;
  TORCH_CHECK(residuals == "fp32", "zccl_torch: feedback_precision=", residuals,
              ": expected fp32, bf16 or int8");
  return zcclFloat32;
}

// The Python side's flags of int4-diff / int4-ef, smoothing, the resync period and the
// residuals' precision, and the all-gathers' format.
CallStatePolicy statesOf(const std::string& allGather, bool allGatherDifferences,
                         bool reduceScatterFeedback, bool allReduceFeedback, bool smoothing,
                         int resyncEvery, const std::string& residuals) {
  TORCH_CHECK(resyncEvery >= 0, "zccl_torch: resync_every=", resyncEvery, ": expected >= 0");
  const bool twoBit = allGatherDifferences && allGather == "int2";
  return CallStatePolicy{allGatherDifferences,     twoBit,    reduceScatterFeedback,
                         allReduceFeedback,        smoothing, resyncEvery,
                         residualTypeOf(residuals)};
}

c10::intrusive_ptr<c10d::Backend> createBackend(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const std::chrono::duration<float>& timeout, const std::string& groupName,
    const std::string& allGather, const std::string& reduceScatter, const std::string& allReduce,
    int64_t minBytes, bool allGatherDifferences, bool reduceScatterFeedback, bool allReduceFeedback,
    bool smoothing, int resyncEvery, const std::string& residuals) {
  BackendOptions options;
  options.rank = rank;
  options.size = size;
  options.groupName = groupName;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  options.policy = policyOf(allGather, reduceScatter, allReduce, minBytes);
  options.states = statesOf(allGather, allGatherDifferences, reduceScatterFeedback,
                            allReduceFeedback, smoothing, resyncEvery, residuals);
  pybind11::gil_scoped_release release;  // the rendezvous waits on the other ranks
  return c10::make_intrusive<ZcclBackend>(store, options);
}

pybind11::dict statsDict(const zcclStats& stats) {
  pybind11::dict result;
  const char* names[] = {"self", "intra_node", "inter_node"};
  for (int link = 0; link < zcclNumLinkClasses; ++link) {
    result[(std::string(names[link]) + "_bytes").c_str()] = stats.bytesSent[link];
    result[(std::string(names[link]) + "_messages").c_str()] = stats.messagesSent[link];
  }
  result["native_bytes_estimated"] = stats.nativeBytesEstimated;
  return result;
}

zcclStats statsOfComm(zcclComm_t comm) {
  zcclStats stats{};
  TORCH_CHECK(zcclCommGetStats(comm, &stats) == zcclSuccess,
              "zccl_torch.stats: ", zcclGetLastError(comm));
  return stats;
}

pybind11::dict statsOf(const std::string& groupName) {
  return statsDict(statsOfComm(backendOf(groupName).comm()));
}

// Summed over every zccl group of this process: the sub-groups that FSDP2's meshes make too.
pybind11::dict statsOfAll() {
  zcclStats total{};
  for (const auto& [name, comm] : liveCommsByName()) {
    const zcclStats stats = statsOfComm(comm);
    for (int link = 0; link < zcclNumLinkClasses; ++link) {
      total.bytesSent[link] += stats.bytesSent[link];
      total.messagesSent[link] += stats.messagesSent[link];
    }
    total.nativeBytesEstimated += stats.nativeBytesEstimated;
  }
  return statsDict(total);
}

// Per group of this process, by name.
pybind11::dict statsByGroup() {
  pybind11::dict result;
  for (const auto& [name, comm] : liveCommsByName())
    result[name.c_str()] = statsDict(statsOfComm(comm));
  return result;
}

void resetComm(zcclComm_t comm) {
  TORCH_CHECK(zcclCommResetStats(comm) == zcclSuccess,
              "zccl_torch.reset_stats: ", zcclGetLastError(comm));
}

void resetStats(const std::string& groupName) { resetComm(backendOf(groupName).comm()); }

void resetStatsOfAll() {
  for (const auto& [name, comm] : liveCommsByName()) resetComm(comm);
}

void setPolicy(const std::string& groupName, const std::string& allGather,
               const std::string& reduceScatter, const std::string& allReduce, int64_t minBytes,
               bool allGatherDifferences, bool reduceScatterFeedback, bool allReduceFeedback,
               bool smoothing, int resyncEvery, const std::string& residuals) {
  const zcclWirePolicy policy = policyOf(allGather, reduceScatter, allReduce, minBytes);
  const CallStatePolicy states = statesOf(allGather, allGatherDifferences, reduceScatterFeedback,
                                          allReduceFeedback, smoothing, resyncEvery, residuals);
  ZcclBackend& backend = backendOf(groupName);
  pybind11::gil_scoped_release release;  // it waits for the operations in flight
  backend.setPolicy(policy, states);
}

// The bytes of weight-difference references and error-feedback residuals of every group.
size_t callStateBytes() {
  size_t total = 0;
  for (const auto& [name, comm] : liveCommsByName()) total += backendOf(name).callStateBytes();
  return total;
}

}  // namespace
}  // namespace zccl_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.def("create_backend", &zccl_torch::createBackend);
  module.def("stats", &zccl_torch::statsOf);
  module.def("reset_stats", &zccl_torch::resetStats);
  module.def("stats_all", &zccl_torch::statsOfAll);
  module.def("stats_by_group", &zccl_torch::statsByGroup);
  module.def("reset_stats_all", &zccl_torch::resetStatsOfAll);
  module.def("set_policy", &zccl_torch::setPolicy);
  module.def("wire_format_names", &zccl_torch::wireFormatNames);
  module.def("call_state_bytes", &zccl_torch::callStateBytes);
}
