// zccl's rendezvous through the c10d store that init_process_group hands a backend: no MPI,
// no port of zccl's own. A header of its own, not backend.h's: the store's torch header alone
// compiles in under half the time of the backend's.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "zccl/zccl.h"

namespace zccl_torch {

// zcclStore callbacks over a c10d store (the group's PrefixStore).
zcclStore storeOf(c10d::Store* store);

}  // namespace zccl_torch
