// Communicators that begin with a rendezvous (unique id, launcher environment, key-value
// store), and the host transport a communicator runs over.
#pragma once

#include <functional>
#include <memory>

#include "core/comm.h"
#include "transport/bootstrap/bootstrap.h"

namespace zccl {

// Joins a rendezvous (`connect`, given the bootstrap timeout), builds the UCX transport over
// it and the communicator on that. `config` may be null.
using ConnectBootstrap = std::function<Status(double timeoutSeconds, std::unique_ptr<Bootstrap>*)>;
Status initOverBootstrap(const ConnectBootstrap& connect, const zcclConfig* config, zcclComm** out);

// A Bootstrap over an existing transport's control channel: how a communicator made through
// MPI sets up UCX when ZCCL_TRANSPORT=ucx.
std::unique_ptr<Bootstrap> bootstrapOver(Transport& transport);

}  // namespace zccl
