// Device buffers between GPUs over the real NCCL, loaded at run time (nccl_abi/nccl_functions.h):
// the messages an algorithm posts become ncclSend/ncclRecv in one ncclGroupStart/End on the
// collective's stream when it waits, and the wait polls an event and NCCL's asynchronous
// error, bounded by the timeout (then the NCCL communicator is aborted). NCCL matches a pair's
// messages by their order, not by tag: every rank runs the same algorithm, which posts them in
// the same order at both ends. One rank per GPU (NCCL refuses two on one). It counts the bytes
// it sends; its control plane is the host transport's, and it does not split (the device path
// makes one per level). Built with CUDA (ZCCL_HAVE_CUDA); elsewhere creation fails, saying so.
#pragma once

#include <memory>
#include <string>

#include "transport/transport.h"

namespace zccl {

// A transport whose messages are queued on a device stream.
class StreamTransport : public Transport {
 public:
  // The stream the next messages go on (the collective's).
  virtual void useStream(void* stream) = 0;
};

// Whether this process can load NCCL; *reason says why not.
bool ncclLoadable(std::string* reason);

// Collective over `control`, whose members become the NCCL communicator's ranks: one NCCL
// communicator on the current device. `control` must outlive the transport.
Status makeNcclTransport(Transport& control, const TransportOptions& options,
                         std::unique_ptr<StreamTransport>* out);

}  // namespace zccl
