// libFuzzer: the configuration a user can get wrong: every ZCCL_* variable of the
// communicator and of the topology, and zcclConfig / zcclCollOptions structs, from the
// input. Anything malformed must be an error naming it, never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/config.h"
#include "topology/topology.h"

namespace {

const char* const kVariables[] = {"ZCCL_ALGO",
                                  "ZCCL_QUANT",
                                  "ZCCL_QUANT_SCHEME",
                                  "ZCCL_QUANT_GROUP",
                                  "ZCCL_QUANT_STOCHASTIC",
                                  "ZCCL_HIERARCHY",
                                  "ZCCL_RANKS_PER_NODE",
                                  "ZCCL_TIMEOUT_S",
                                  "ZCCL_CHECK",
                                  "ZCCL_TRANSPORT",
                                  "ZCCL_INTRA_NODE_GBPS",
                                  "ZCCL_INTER_NODE_GBPS",
                                  "ZCCL_FABRIC"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zccl;
  // The first bytes are the structs; the rest, split at NUL, the variables' values.
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  const size_t structs = sizeof(config) + sizeof(options);
  if (size >= structs) {
    std::memcpy(&config, data, sizeof(config));
    std::memcpy(&options, data + sizeof(config), sizeof(options));
    // Pointers are the caller's objects, not configuration: a fuzzed one points nowhere.
    options.request = nullptr;
    options.feedback = nullptr;
    options.reference = nullptr;
    data += structs;
    size -= structs;
  }
  const std::string text(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  for (const char* name : kVariables) {
    const size_t end = std::min(text.find('\0', start), text.size());
    if (start >= text.size()) {
      unsetenv(name);
    } else {
      setenv(name, text.substr(start, end - start).c_str(), 1);
    }
    start = end + 1;
  }
  CommConfig resolved;
  resolveConfig(nullptr, &resolved);
  if (resolveConfig(&config, &resolved) == Status::kSuccess) {
    for (int collective = 0; collective < kNumCollectives; ++collective) {
      for (size_t bytes : {size_t{0}, size_t{1000}, size_t{1} << 20}) {
        CollectiveOptions call;
        resolveCollOptions(&options, resolved, static_cast<Collective>(collective), bytes, &call);
      }
    }
  }
  TopologyOptions topology;
  if (topologyOptionsFromEnvironment(&topology) == Status::kSuccess) {
    undiscoveredTopology(topology);
    describeFabricShape(topology.fabric);
  }
  return 0;
}
