// The Python side of the backend: zccl_torch registers "zccl" with torch.distributed through
// create_backend, and reads statistics and sets policies by process-group name.
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "backend.h"

namespace zccl_torch {
namespace {

zcclWireFormat_t wireNamed(int format) {
  TORCH_CHECK(format >= zcclWireNone && format < zcclNumWireFormats, "zccl_torch: wire format ",
              format, " out of range");
  return static_cast<zcclWireFormat_t>(format);
}

Policy policyOf(int allGather, int reduceScatter, int allReduce, int64_t minBytes) {
  Policy policy;
  policy.allGather = wireNamed(allGather);
  policy.reduceScatter = wireNamed(reduceScatter);
  policy.allReduce = wireNamed(allReduce);
  policy.minBytes = minBytes;
  return policy;
}

ZcclBackend& backendOf(const std::string& groupName) {
  ZcclBackend* backend = backendNamed(groupName);
  TORCH_CHECK(backend != nullptr, "zccl_torch: process group '", groupName,
              "' has no zccl backend in this process");
  return *backend;
}

c10::intrusive_ptr<c10d::Backend> createBackend(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, int size,
                                                const std::chrono::duration<float>& timeout,
                                                const std::string& groupName, int allGather,
                                                int reduceScatter, int allReduce,
                                                int64_t minBytes) {
  BackendOptions options;
  options.rank = rank;
  options.size = size;
  options.groupName = groupName;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  options.policy = policyOf(allGather, reduceScatter, allReduce, minBytes);
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

void setPolicy(const std::string& groupName, int allGather, int reduceScatter, int allReduce,
               int64_t minBytes) {
  backendOf(groupName).setPolicy(policyOf(allGather, reduceScatter, allReduce, minBytes));
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
}
