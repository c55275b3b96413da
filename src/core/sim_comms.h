// Simulated jobs: zccl's communicators over a modelled cluster (transport/sim), a thread per
// rank, so that zccl's unchanged algorithms and planner run at sizes no machine here holds
// (zccl-sim, tests/unit/sim_test.cc). The planner plans with the modelled links.
#pragma once

#include <functional>
#include <memory>

#include "common/status.h"
#include "topology/topology.h"
#include "transport/sim/sim_fabric.h"
#include "zccl/zccl.h"

namespace zccl {

// The links a simulated machine shows the planner: NVLink inside a node, InfiniBand-class
// (100 Gbit/s NICs and up) or Ethernet between nodes, one NIC's rate with the NICs as rails.
NodeTopology modelledTopology(const SimMachine& machine);

// Makes a communicator per rank of `fabric` (nodes of machine().gpusPerNode ranks; `config`
// as zcclCommInitRank takes it, NULL for the defaults), runs body(rank, comm) on each rank's
// thread, and destroys them. The first failure (of a rank's creation or body) is returned.
using SimBody = std::function<zcclResult_t(int rank, zcclComm_t comm)>;
Status runSimulated(const std::shared_ptr<SimFabric>& fabric, const zcclConfig* config,
                    const SimBody& body);

// The virtual clock of `comm`'s rank, in seconds (its CPU time since its last transfer
// counted); -1 for a communicator that is not simulated.
double simulatedSeconds(zcclComm_t comm);
// Modelled compute on `comm`'s rank: its clock moves on by `seconds`.
void simulateCompute(zcclComm_t comm, double seconds);
// Modelled compute on a stream of its own from `from` on (SimFabric::runBeside: a CPU rank's
// runs in the gaps its collectives leave on its CPU). Returns when it is done; the clock stays.
double simulateComputeBeside(zcclComm_t comm, double from, double seconds);

}  // namespace zccl
