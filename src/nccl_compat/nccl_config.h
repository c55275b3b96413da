// Reading the ncclConfig_t a program passes, whatever NCCL header it was built with: the size
// field says which fields exist, so nothing past it is read, and fields this library does not
// know (a newer NCCL's) are kept for the real NCCL without being interpreted.
#pragma once

#include <string>
#include <vector>

#include "nccl_abi/nccl_abi.h"

namespace zccl::nccl {

struct CommSettings {
  // false (config.blocking=0): host calls are queued on zccl's communicator thread and return
  // ncclInProgress; ncclCommGetAsyncError says when they have completed.
  bool blocking = true;
  std::string name;  // commName, for log lines
  // The caller's struct as given (up to its size), for the real NCCL's communicator.
  std::vector<unsigned char> rawConfig;
};

// NULL is the defaults. A config whose magic is not NCCL's, or whose size does not cover
// size/magic/version/blocking, is ncclInvalidArgument with the reason in *error.
ncclResult_t readConfig(const void* config, CommSettings* settings, std::string* error);

}  // namespace zccl::nccl
