// A transport over the simulated cluster (sim_fabric.h): one per rank, used from that rank's
// thread. It moves bytes in memory, stamps them in virtual time and counts them as the real
// transports do, so that zccl's algorithms, planner and statistics run unchanged.
#pragma once

#include <memory>

#include "transport/sim/sim_fabric.h"
#include "transport/transport.h"

namespace zccl {

// Rank `rank` of the fabric's whole job.
std::unique_ptr<Transport> createSimTransport(std::shared_ptr<SimFabric> fabric, int rank);

// The virtual clock of the rank a simulated transport serves, with the CPU time its thread
// spent since its last transport call counted first; -1 for other transports.
double simulatedClock(Transport& transport);
// Moves that rank's clock on by `seconds` of modelled compute (a layer's matrix products).
void simulateCompute(Transport& transport, double seconds);
// Runs `seconds` of that rank's kernel work on its CPU (sim_fabric.h: SimFabric::runKernel).
void simulateKernel(Transport& transport, double seconds);
// Runs `seconds` of another stream's work on that rank's CPU from `from` on; returns when it is
// done (SimFabric::runBeside). -1 for other transports.
double simulateBeside(Transport& transport, double from, double seconds);

}  // namespace zccl
