// The main of every nccl-tests-style binary; CMake builds it once per collective with
// ZCCL_PERF_COLLECTIVE set (all_gather_perf: kAllGather, ...).
#include "nccl_tests/harness.h"

int main(int argc, char** argv) {
  return zccl_perf::runPerf(argc, argv, zccl_perf::Collective::ZCCL_PERF_COLLECTIVE);
}
