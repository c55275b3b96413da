// Who this process is in a job that a launcher started: its rank, the job's size and where
// the rendezvous root listens, from zcclrun's environment (ZCCL_RANK, ZCCL_WORLD_SIZE,
// ZCCL_ROOT_ADDR, ZCCL_JOB_ID) or torchrun's (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT: the
// rendezvous then takes MASTER_PORT + 1, leaving MASTER_PORT to torch's own store).
#pragma once

#include <string>

#include "common/status.h"

namespace zccl {

struct LaunchEnvironment {
  int rank = -1;
  int size = 0;
  std::string root;  // host:port
  std::string job;
};

// From the environment; an error naming the variable that is missing or wrong.
Status readLaunchEnvironment(LaunchEnvironment* launch);

}  // namespace zccl
