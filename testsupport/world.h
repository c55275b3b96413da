// The job a program (perf binaries, zero_demo) runs in, whichever way it was launched: under
// mpiexec (MPI is initialised, communicators come from MPI_COMM_WORLD, MPI's own collectives
// can be timed beside zccl's) or under zcclrun (no MPI at all; communicators over UCX from
// the environment). The program's own bookkeeping (barriers, combining numbers across ranks)
// goes over a communicator of its own.
#pragma once

#include <string>
#include <vector>

#include "zccl/zccl.h"

namespace zccl_support {

class World {
 public:
  // Initialises MPI unless zcclrun launched the job; false (with a message) on failure.
  bool start(int* argc, char*** argv);
  // Destroys the harness's communicator and finalises MPI when it was initialised.
  void finish();

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  bool underMpi() const { return mpi_; }

  enum class Engine { kDefault, kUcx };
  // A communicator over every rank: MPI's (or, kUcx, UCX set up through MPI) under mpiexec,
  // UCX from the environment under zcclrun.
  zcclResult_t makeComm(const zcclConfig& config, Engine engine, zcclComm_t* comm) const;

  void barrier() const;
  enum class Combine { kSum, kMin, kMax };
  double combine(double value, Combine how) const;
  void broadcast(double* value, int root) const;
  // Every rank's `text` (up to 63 characters), on rank 0.
  std::vector<std::string> gatherNames(const std::string& text) const;

 private:
  bool mpi_ = false;
  int rank_ = 0;
  int ranks_ = 1;
  zcclComm_t control_ = nullptr;
};

}  // namespace zccl_support
