// The job a program of this repository runs in (the multi-rank tests, the perf binaries,
// zero_demo), whichever way it was launched: under mpiexec (MPI is initialised, communicators
// come from MPI_COMM_WORLD, MPI's own collectives can be timed beside zccl's) or under zcclrun
// (no MPI at all: communicators over UCX from the environment). The program's own exchanges
// (barriers, numbers combined across ranks, a unique id handed round) never use the
// communicators it tests or measures: they go over MPI under mpiexec, and over a communicator
// of the harness's own under zcclrun.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "zccl/zccl.h"

namespace zccl_harness {

// What the harness's own exchanges run over.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  virtual void barrier() = 0;
  // values[i] reduced over ranks (sum, min or max), on every rank.
  virtual void allReduce(double* values, int count, zcclRedOp_t op) = 0;
  virtual void broadcastBytes(void* data, size_t bytes, int root) = 0;
  // Every rank's `bytes` of `mine`, in rank order, in `all`.
  virtual void allGatherBytes(const void* mine, size_t bytes, void* all) = 0;
};

class World {
 public:
  // Initialises MPI unless zcclrun launched the job (ZCCL_RANK is set) or the program was
  // built without MPI; false (with a message on stderr) on failure.
  bool start(int* argc, char*** argv);
  // Ends the harness's exchanges and finalises MPI when it was initialised.
  void finish();

  int rank() const { return exchange_->rank(); }
  int ranks() const { return exchange_->ranks(); }
  bool underMpi() const { return mpi_; }

  enum class Engine { kDefault, kMpi };
  // A communicator over every rank, as the launch makes one: zcclCommInitMPI(MPI_COMM_WORLD)
  // under mpiexec (kMpi: with MPI's point-to-point carrying its bytes, and MPI's collectives as
  // the native algorithm), zcclCommInitFromEnv under zcclrun.
  // config may be NULL: the defaults and the environment, as the C API takes it.
  zcclResult_t makeComm(const zcclConfig* config, Engine engine, zcclComm_t* comm) const;

  void barrier() const { exchange_->barrier(); }
  // values[i] summed over ranks, on every rank.
  void sum(double* values, int count) const { exchange_->allReduce(values, count, zcclSum); }
  enum class Combine { kSum, kMin, kMax };
  double combine(double value, Combine how) const;
  void broadcastBytes(void* data, size_t bytes, int root) const {
    exchange_->broadcastBytes(data, bytes, root);
  }
  // Every rank's `text` (up to 63 characters), in rank order.
  std::vector<std::string> gatherNames(const std::string& text) const;

 private:
  bool mpi_ = false;
  std::unique_ptr<Exchange> exchange_;
};

// The process's world.
World& world();

// Where the program was built with MPI (world_mpi.cc), else refusals (world_no_mpi.cc).
namespace mpi {
bool available();
std::unique_ptr<Exchange> start(int* argc, char*** argv);
void finish();
zcclResult_t worldComm(const zcclConfig* config, World::Engine engine, zcclComm_t* comm);
}  // namespace mpi

}  // namespace zccl_harness
