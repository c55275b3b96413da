// A rendezvous over an existing transport's control channel: how a communicator made through
// MPI sets up UCX (ZCCL_TRANSPORT=ucx), with MPI carrying the addresses.
#pragma once

#include <memory>

#include "bootstrap/bootstrap.h"
#include "transport/transport.h"

namespace zccl {

class TransportBootstrap final : public Bootstrap {
 public:
  explicit TransportBootstrap(Transport& transport) : transport_(transport) {}
  int rank() const override { return transport_.rank(); }
  int size() const override { return transport_.size(); }
  Status allGather(const void* mine, size_t bytes, void* all) override {
    return transport_.allGatherControl(mine, bytes, all);
  }

 private:
  Transport& transport_;
};

inline std::unique_ptr<Bootstrap> bootstrapOver(Transport& transport) {
  return std::make_unique<TransportBootstrap>(transport);
}

}  // namespace zccl
