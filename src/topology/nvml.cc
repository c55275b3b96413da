// NVLink from NVML, loaded with dlopen at run time so that zccl never links against the
// driver: on machines without one this simply reports nothing.
#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <cstring>

#include "common/log.h"
#include "topology/topology.h"

namespace zccl {
namespace {

// The few NVML types used, as the NVML API reference defines them.
using NvmlReturn = int;  // NVML_SUCCESS == 0
using NvmlDevice = struct NvmlDeviceOpaque*;
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS on Hopper
constexpr double kLinkGBps = 25.0;  // per link and direction, NVLink 3 and 4

struct Nvml {
  void* library = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  NvmlReturn (*byBusId)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*linkState)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remotePci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;

  bool load() {
    library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return false;
    init = reinterpret_cast<decltype(init)>(dlsym(library, "nvmlInit_v2"));
    shutdown = reinterpret_cast<decltype(shutdown)>(dlsym(library, "nvmlShutdown"));
    byBusId =
        reinterpret_cast<decltype(byBusId)>(dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2"));
    linkState = reinterpret_cast<decltype(linkState)>(dlsym(library, "nvmlDeviceGetNvLinkState"));
    remotePci = reinterpret_cast<decltype(remotePci)>(
        dlsym(library, "nvmlDeviceGetNvLinkRemotePciInfo_v2"));
    return init && shutdown && byBusId && linkState && remotePci && init() == 0;
  }
  ~Nvml() {
    if (shutdown != nullptr && library != nullptr) shutdown();
    if (library != nullptr) dlclose(library);
  }
};

bool sameBus(const char* nvmlBusId, const std::string& ours) {
  // NVML writes "00000000:61:00.0"; hwloc "0000:61:00.0": compare without the domain width.
  const char* a = std::strchr(nvmlBusId, ':');
  const size_t colon = ours.find(':');
  return a != nullptr && colon != std::string::npos && strcasecmp(a, ours.c_str() + colon) == 0;
}

}  // namespace

bool nvmlNvlinkMatrix(const std::vector<Gpu>& gpus, std::vector<std::vector<double>>* gbps) {
  Nvml nvml;
  if (!nvml.load()) return false;
  const size_t n = gpus.size();
  gbps->assign(n, std::vector<double>(n, 0.0));
  std::vector<double> injection(n, 0.0);
  bool switched = false;
  for (size_t a = 0; a < n; ++a) {
    NvmlDevice device = nullptr;
    if (nvml.byBusId(gpus[a].location.busId.c_str(), &device) != 0) continue;
    for (unsigned link = 0; link < kMaxLinks; ++link) {
      int active = 0;
      NvmlPciInfo remote{};
      if (nvml.linkState(device, link, &active) != 0 || !active) continue;
      if (nvml.remotePci(device, link, &remote) != 0) continue;
      bool toGpu = false;
      for (size_t b = 0; b < n; ++b) {
        if (sameBus(remote.busId, gpus[b].location.busId)) {
          (*gbps)[a][b] += kLinkGBps;
          toGpu = true;
        }
      }
      if (!toGpu) {  // an NVSwitch
        switched = true;
        injection[a] += kLinkGBps;
      }
    }
  }
  if (switched) {
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b)
        if (a != b) (*gbps)[a][b] += std::min(injection[a], injection[b]);
  }
  ZCCL_LOG(kInfo, "NVML: NVLink matrix for %zu GPUs%s", n, switched ? " (through NVSwitches)" : "");
  return true;
}

}  // namespace zccl
