// The test job under zcclrun, without MPI: communicators made with zcclCommInitFromEnv (UCX),
// and one more kept by the harness for barriers and for collecting the results.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "support/comms.h"

namespace zccl_test {
namespace {

zcclComm_t harness = nullptr;

void check(zcclResult_t result, const char* what) {
  if (result == zcclSuccess) return;
  std::fprintf(stderr, "test harness: %s: %s\n", what, zcclGetLastError(harness));
  std::exit(1);
}

}  // namespace

int worldRank() {
  int rank = 0;
  check(zcclCommUserRank(harness, &rank), "zcclCommUserRank");
  return rank;
}

int worldSize() {
  int size = 0;
  check(zcclCommCount(harness, &size), "zcclCommCount");
  return size;
}

void barrier() {
  int32_t token = 0;
  check(zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, harness, nullptr), "barrier");
}

void sumOverRanks(double* values, int count) {
  check(zcclAllReduce(values, values, static_cast<size_t>(count), zcclFloat64, zcclSum, harness,
                      nullptr),
        "sum over ranks");
}

void broadcastBytes(void* data, size_t bytes, int root) {
  check(zcclBroadcast(data, data, bytes, zcclUint8, root, harness, nullptr), "broadcast");
}

zcclResult_t initWorldComm(const zcclConfig* config, zcclComm_t* comm) {
  return zcclCommInitFromEnv(comm, config);
}

}  // namespace zccl_test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // The harness's own communicator ignores the environment's emulated nodes and algorithm.
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.ranksPerNode = 0;
  config.algorithm = zcclAlgoAuto;
  config.timeoutSeconds = 900;
  zccl_test::check(zcclCommInitFromEnv(&zccl_test::harness, &config), "zcclCommInitFromEnv");
  const int result = zccl_test::runAllTests(zccl_test::worldRank());
  zcclCommDestroy(zccl_test::harness);
  return result;
}
