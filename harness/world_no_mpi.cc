// The harness's world in programs built without MPI (they run under zcclrun only): no MPI
// half to start.
#include <cstdio>

#include "harness/world.h"

namespace zccl_harness::mpi {

bool available() { return false; }

std::unique_ptr<Exchange> start(int*, char***) { return nullptr; }

void finish() {}

zcclResult_t worldComm(const zcclConfig*, World::Engine, zcclComm_t*) {
  std::fprintf(stderr, "harness: this program was built without MPI; run it under zcclrun\n");
  return zcclInvalidUsage;
}

}  // namespace zccl_harness::mpi
