// A node's topology for people and tools: devices, the link matrix in the spirit of
// `nvidia-smi topo -m` (NV<GB/s> for NVLink, else the PCI relation), and the link classes.
#pragma once

#include <string>

#include "topology/topology.h"

namespace zccl {

std::string describeTopology(const NodeTopology& topology);
// The same as one JSON object.
std::string describeTopologyJson(const NodeTopology& topology);

}  // namespace zccl
