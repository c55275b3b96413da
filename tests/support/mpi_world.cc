// The test job under mpiexec: MPI_COMM_WORLD, communicators made with zcclCommInitMPI.
#include <mpi.h>
#include <sched.h>

#include "support/comms.h"
#include "zccl/zccl_mpi.h"

namespace zccl_test {

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int worldSize() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

namespace {

// MPICH's blocking calls spin without giving up the core: with more ranks than cores, a rank
// waiting in the test's own exchange starved the ranks still computing (the ZeRO suite ran
// 3x slower than under zcclrun). The test's exchanges wait yielding instead.
void waitYielding(MPI_Request* request) {
  for (int done = 0; MPI_Test(request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done == 0;) {
    sched_yield();
  }
}

}  // namespace

void barrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  waitYielding(&request);
}

void sumOverRanks(double* values, int count) {
  MPI_Request request;
  MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &request);
  waitYielding(&request);
}

void broadcastBytes(void* data, size_t bytes, int root) {
  MPI_Request request;
  MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD, &request);
  waitYielding(&request);
}

zcclResult_t initWorldComm(const zcclConfig* config, zcclComm_t* comm) {
  return zcclCommInitMPI(MPI_COMM_WORLD, config, comm);
}

}  // namespace zccl_test

int main(int argc, char** argv) {
  // Serialized: a test may abort a communicator from another thread while one is blocked.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = zccl_test::runAllTests(zccl_test::worldRank());
  MPI_Finalize();
  return result;
}
