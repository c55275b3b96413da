// Simulated jobs (sim_comms.h).
#include "core/sim_comms.h"

#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "core/comm.h"
#include "core/config.h"
#include "transport/sim/sim_transport.h"

namespace zccl {

NodeTopology modelledTopology(const SimMachine& machine) {
  NodeTopology links;
  links.source = "simulated: " + describeSimMachine(machine);
  links.intraNode = LinkClass::kNvlink;
  links.intraNodeGBps = machine.intraGBps;
  links.interNode = machine.nicGbps >= 100 ? LinkClass::kInfiniband : LinkClass::kEthernet;
  links.interNodeGBps = machine.nicsPerNode * machine.nicGbps / 8 / machine.oversubscription;
  return links;
}

Status runSimulated(const std::shared_ptr<SimFabric>& fabric, const zcclConfig* config,
                    const SimBody& body) {
  CommConfig resolved;
  ZCCL_CHECK(resolveConfig(config, &resolved));
  resolved.ranksPerNode = fabric->machine().gpusPerNode;
  resolved.timeoutSeconds = fabric->timeoutSeconds();
  resolved.tunePlans = false;  // timing candidates would time this host, not the model
  const auto links = std::make_shared<const NodeTopology>(modelledTopology(fabric->machine()));
  const int ranks = fabric->ranks();
  std::vector<Status> results(static_cast<size_t>(ranks), Status::kSuccess);
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      Status& result = results[static_cast<size_t>(r)];
      zcclComm* comm = nullptr;
      result = createComm(createSimTransport(fabric, r), resolved, Status::kSuccess, &comm, links);
      if (result == Status::kSuccess) {
        result = static_cast<Status>(body(r, comm));
        if (result != Status::kSuccess) errors[static_cast<size_t>(r)] = zcclGetLastError(comm);
        const zcclResult_t destroyed = zcclCommDestroy(comm);
        if (result == Status::kSuccess) result = static_cast<Status>(destroyed);
      }
      if (result != Status::kSuccess && errors[static_cast<size_t>(r)].empty()) {
        errors[static_cast<size_t>(r)] = lastThreadError();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int r = 0; r < ranks; ++r) {
    if (results[static_cast<size_t>(r)] != Status::kSuccess) {
      return fail(results[static_cast<size_t>(r)], "simulated rank %d: %s", r,
                  errors[static_cast<size_t>(r)].c_str());
    }
  }
  return Status::kSuccess;
}

double simulatedSeconds(zcclComm_t comm) { return simulatedClock(*comm->transport); }

void simulateCompute(zcclComm_t comm, double seconds) {
  simulateCompute(*comm->transport, seconds);
}

}  // namespace zccl
