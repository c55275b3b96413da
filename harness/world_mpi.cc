// The MPI half of the harness's world (programs built with MPI, run under mpiexec):
// MPI_COMM_WORLD carries the harness's exchanges, and communicators come from
// zcclCommInitMPI.
#include <mpi.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/world.h"
#include "zccl/zccl_mpi.h"

namespace zccl_harness {
namespace {

// MPICH's blocking calls spin without giving up the core: with more ranks than cores, a rank
// waiting in the harness's own exchange starved the ranks still computing. Its exchanges
// wait yielding instead.
void waitYielding(MPI_Request* request) {
  for (int done = 0; MPI_Test(request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0;) {
    sched_yield();
  }
}

MPI_Op mpiOp(zcclRedOp_t op) { return op == zcclMin ? MPI_MIN : op == zcclMax ? MPI_MAX : MPI_SUM; }

class MpiExchange final : public Exchange {
 public:
  MpiExchange() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  }
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  void barrier() override {
    MPI_Request request;
    MPI_Ibarrier(MPI_COMM_WORLD, &request);
    waitYielding(&request);
  }
  void allReduce(double* values, int count, zcclRedOp_t op) override {
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, mpiOp(op), MPI_COMM_WORLD, &request);
    waitYielding(&request);
  }
  void broadcastBytes(void* data, size_t bytes, int root) override {
    MPI_Request request;
    MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request);
    waitYielding(&request);
  }
  void allGatherBytes(const void* mine, size_t bytes, void* all) override {
    MPI_Request request;
    MPI_Iallgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE,
                   MPI_COMM_WORLD, &request);
    waitYielding(&request);
  }

 private:
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace

namespace mpi {

bool available() { return true; }

std::unique_ptr<Exchange> start(int* argc, char*** argv) {
  // Serialized: a test may abort a communicator from another thread while one is blocked.
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "harness: MPI_Init_thread failed\n");
    return nullptr;
  }
  return std::make_unique<MpiExchange>();
}

void finish() { MPI_Finalize(); }

zcclResult_t worldComm(const zcclConfig* config, World::Engine engine, zcclComm_t* comm) {
  if (engine == World::Engine::kDefault) return zcclCommInitMPI(MPI_COMM_WORLD, config, comm);
  const char* previous = std::getenv("ZCCL_TRANSPORT");
  const std::string saved = previous != nullptr ? previous : "";
  setenv("ZCCL_TRANSPORT", "mpi", 1);
  const zcclResult_t result = zcclCommInitMPI(MPI_COMM_WORLD, config, comm);
  if (previous != nullptr) {
    setenv("ZCCL_TRANSPORT", saved.c_str(), 1);
  } else {
    unsetenv("ZCCL_TRANSPORT");
  }
  return result;
}

}  // namespace mpi
}  // namespace zccl_harness
