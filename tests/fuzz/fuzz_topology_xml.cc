// libFuzzer: a topology file (ZCCL_TOPO_FILE) that is not what it should be. Loading it must
// be an error naming it or a topology, never a crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "topology/describe.h"
#include "topology/topology.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zccl;
  static const std::string path = "/tmp/zccl_fuzz_topology_" + std::to_string(getpid()) + ".xml";
  setenv("HWLOC_HIDE_ERRORS", "1", 1);
  // hwloc's built-in XML parser: its libxml2 plugin leaks on malformed files (hwloc's, in a
  // module unloaded before LeakSanitizer can name it); zccl's side is the same with either.
  setenv("HWLOC_LIBXML_IMPORT", "0", 1);
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  TopologyOptions options;
  options.xmlPath = path;
  NodeTopology topology;
  if (discoverTopology(options, &topology) == Status::kSuccess) {
    describeTopology(topology);
    describeTopologyJson(topology);
  }
  return 0;
}
