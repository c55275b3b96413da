// The test job under mpiexec: MPI_COMM_WORLD, communicators made with zcclCommInitMPI.
#include <mpi.h>

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

void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

void sumOverRanks(double* values, int count) {
  MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}

void broadcastBytes(void* data, size_t bytes, int root) {
  MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
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
