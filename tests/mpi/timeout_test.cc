// A peer that stops answering gives zcclTimeout naming it, not a hang; the communicator
// then refuses further work with zcclRemoteError until it is aborted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/gtest.h"

namespace zccl_harness {
namespace {

TEST(Timeout, SilentPeerGivesTimeoutError) {
  const int rank = worldRank();
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.timeoutSeconds = 1.0;
  zcclComm_t comm = nullptr;
  ASSERT_EQ(initWorldComm(&config, &comm), zcclSuccess);
  std::vector<float> data(1 << 16, 1.0f);
  if (rank == 0) {
    // Every other rank stays silent: rank 0 must give up on its own.
    const zcclResult_t result =
        zcclAllReduce(data.data(), data.data(), data.size(), zcclFloat32, zcclSum, comm, nullptr);
    EXPECT_EQ(result, zcclTimeout) << zcclGetErrorString(result);
    const std::string message = zcclGetLastError(comm);
    EXPECT_NE(message.find("ZCCL_TIMEOUT_S"), std::string::npos) << message;
    EXPECT_NE(message.find("receive from"), std::string::npos) << message;
    EXPECT_EQ(zcclAllReduce(data.data(), data.data(), 4, zcclFloat32, zcclSum, comm, nullptr),
              zcclRemoteError);
  }
  barrier();
  EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
}

}  // namespace
}  // namespace zccl_harness
