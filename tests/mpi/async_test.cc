// Queued host calls: a call with a request returns once its work is queued on the
// communicator's own thread, which moves the bytes while the caller computes; requests
// complete in call order with the call's own result (a timeout naming the peer), abort
// releases every one of them, and a non-blocking communicator (config.blocking = 0) answers
// zcclInProgress as NCCL's does.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "harness/gtest.h"

namespace zccl_harness {
namespace {

zcclComm_t commWith(double timeoutSeconds, int blocking = ZCCL_CONFIG_UNDEF_INT) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.timeoutSeconds = timeoutSeconds;
  config.blocking = blocking;
  zcclComm_t comm = nullptr;
  EXPECT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
  return comm;
}

zcclCollOptions withRequest(zcclRequest_t* request) {
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.request = request;
  return options;
}

// Work the compiler cannot drop, that calls nothing of zccl.
double compute(int iterations) {
  volatile double x = 1.0;
  for (int i = 0; i < iterations; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

TEST(Async, ARequestCompletesWhileTheCallerComputes) {
  zcclComm_t comm = commWith(120);
  const int n = worldSize();
  const size_t count = size_t{1} << 20;  // 4 MiB per rank
  std::vector<float> mine(count, static_cast<float>(worldRank() + 1));
  std::vector<float> all(count * static_cast<size_t>(n), -1.0f);
  zcclRequest_t request = nullptr;
  const zcclCollOptions options = withRequest(&request);
  ASSERT_EQ(zcclAllGatherEx(mine.data(), all.data(), count, zcclFloat32, comm, nullptr, &options),
            zcclSuccess)
      << zcclGetLastError(comm);
  ASSERT_NE(request, nullptr);
  // Nothing here drives zccl: zcclTest only looks. The request must finish anyway.
  int done = 0;
  long rounds = 0;
  const auto start = std::chrono::steady_clock::now();
  while (done == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(120)) {
    compute(20000);
    ++rounds;
    ASSERT_EQ(zcclTest(request, &done), zcclSuccess) << zcclGetLastError(nullptr);
  }
  ASSERT_EQ(done, 1) << "the all-gather did not advance while the caller computed";
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(all[static_cast<size_t>(r) * count], static_cast<float>(r + 1));
    EXPECT_EQ(all[static_cast<size_t>(r) * count + count - 1], static_cast<float>(r + 1));
  }
  barrier();
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(Async, QueuedCallsRunInCallOrderBeforeTheNextBlockingOne) {
  zcclComm_t comm = commWith(120);
  const int n = worldSize();
  // Each all-reduce reads what the one before it wrote: only call order gives n^k.
  std::vector<double> value(1024, 1.0);
  std::vector<zcclRequest_t> requests(3, nullptr);
  for (zcclRequest_t& request : requests) {
    const zcclCollOptions options = withRequest(&request);
    ASSERT_EQ(zcclAllReduceEx(value.data(), value.data(), value.size(), zcclFloat64, zcclSum, comm,
                              nullptr, &options),
              zcclSuccess);
  }
  // A blocking call waits for the queued ones first.
  ASSERT_EQ(
      zcclAllReduce(value.data(), value.data(), value.size(), zcclFloat64, zcclSum, comm, nullptr),
      zcclSuccess)
      << zcclGetLastError(comm);
  for (zcclRequest_t request : requests) EXPECT_EQ(zcclWait(request), zcclSuccess);
  EXPECT_EQ(value[0], static_cast<double>(n) * n * n * n);
  EXPECT_EQ(value[1023], static_cast<double>(n) * n * n * n);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(Async, EveryCollectiveTakesARequest) {
  zcclComm_t comm = commWith(120);
  const int n = worldSize();
  const int rank = worldRank();
  const size_t count = 333;
  std::vector<int32_t> send(count * static_cast<size_t>(n)), recv(count * static_cast<size_t>(n));
  for (size_t i = 0; i < send.size(); ++i) send[i] = rank * 1000 + static_cast<int32_t>(i);
  zcclRequest_t request = nullptr;
  const zcclCollOptions options = withRequest(&request);
  ASSERT_EQ(
      zcclBroadcastEx(send.data(), recv.data(), count, zcclInt32, n - 1, comm, nullptr, &options),
      zcclSuccess);
  ASSERT_EQ(zcclWait(request), zcclSuccess) << zcclGetLastError(nullptr);
  EXPECT_EQ(recv[5], (n - 1) * 1000 + 5);
  ASSERT_EQ(zcclAllToAllEx(send.data(), recv.data(), count, zcclInt32, comm, nullptr, &options),
            zcclSuccess);
  ASSERT_EQ(zcclWait(request), zcclSuccess) << zcclGetLastError(nullptr);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(recv[static_cast<size_t>(r) * count],
              r * 1000 + static_cast<int32_t>(static_cast<size_t>(rank) * count));
  }
  ASSERT_EQ(zcclGatherEx(send.data(), recv.data(), count, zcclInt32, 0, comm, nullptr, &options),
            zcclSuccess);
  ASSERT_EQ(zcclWait(request), zcclSuccess) << zcclGetLastError(nullptr);
  if (rank == 0) {
    EXPECT_EQ(recv[count * static_cast<size_t>(n - 1)], (n - 1) * 1000);
  }
  ASSERT_EQ(zcclScatterEx(send.data(), recv.data(), count, zcclInt32, 0, comm, nullptr, &options),
            zcclSuccess);
  ASSERT_EQ(zcclWait(request), zcclSuccess) << zcclGetLastError(nullptr);
  EXPECT_EQ(recv[0], static_cast<int32_t>(static_cast<size_t>(rank) * count));
  ASSERT_EQ(
      zcclReduceEx(send.data(), recv.data(), count, zcclInt32, zcclMax, 0, comm, nullptr, &options),
      zcclSuccess);
  ASSERT_EQ(zcclWait(request), zcclSuccess) << zcclGetLastError(nullptr);
  if (rank == 0) {
    EXPECT_EQ(recv[7], (n - 1) * 1000 + 7);
  }
  ASSERT_EQ(zcclReduceScatterEx(send.data(), recv.data(), count, zcclInt32, zcclSum, comm, nullptr,
                                &options),
            zcclSuccess);
  ASSERT_EQ(zcclWait(request), zcclSuccess) << zcclGetLastError(nullptr);
  int32_t expected = 0;
  for (int r = 0; r < n; ++r) {
    expected += r * 1000 + static_cast<int32_t>(static_cast<size_t>(rank) * count);
  }
  EXPECT_EQ(recv[0], expected);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(Async, ATimeoutArrivesThroughTheRequestNamingThePeer) {
  zcclComm_t comm = commWith(1.0);
  std::vector<float> data(1 << 16, 1.0f);
  if (worldRank() == 0) {
    // Every other rank stays silent.
    zcclRequest_t request = nullptr;
    const zcclCollOptions options = withRequest(&request);
    ASSERT_EQ(zcclAllReduceEx(data.data(), data.data(), data.size(), zcclFloat32, zcclSum, comm,
                              nullptr, &options),
              zcclSuccess);
    EXPECT_EQ(zcclWait(request), zcclTimeout);
    const std::string message = zcclGetLastError(nullptr);
    EXPECT_NE(message.find("zcclAllReduce"), std::string::npos) << message;
    EXPECT_NE(message.find("ZCCL_TIMEOUT_S"), std::string::npos) << message;
    EXPECT_NE(message.find("from rank"), std::string::npos) << message;
    // The communicator then refuses further work, through a request too.
    ASSERT_EQ(
        zcclAllReduceEx(data.data(), data.data(), 4, zcclFloat32, zcclSum, comm, nullptr, &options),
        zcclSuccess);
    EXPECT_EQ(zcclWait(request), zcclTimeout);
    EXPECT_EQ(zcclAllReduce(data.data(), data.data(), 4, zcclFloat32, zcclSum, comm, nullptr),
              zcclTimeout);
  }
  barrier();
  EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
}

TEST(Async, AbortReleasesEveryRequestInFlightOrQueued) {
  zcclComm_t comm = commWith(300);
  std::vector<float> data(1 << 16, 1.0f);
  if (worldRank() == 0) {
    // The others never join: the first request waits in the transport, the others in the
    // queue, until another thread aborts the communicator. (Over MPI's transport below
    // MPI_THREAD_MULTIPLE the first call runs its work itself, until the abort; the calls
    // after it then find the communicator gone.)
    std::thread aborter([comm] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
    });
    std::vector<zcclRequest_t> requests;
    for (int call = 0; call < 4; ++call) {
      zcclRequest_t request = nullptr;
      const zcclCollOptions options = withRequest(&request);
      const zcclResult_t result = zcclAllReduceEx(data.data(), data.data(), data.size(),
                                                  zcclFloat32, zcclSum, comm, nullptr, &options);
      if (result != zcclSuccess) {
        EXPECT_EQ(result, zcclInvalidUsage) << "only a communicator already aborted refuses";
        break;
      }
      requests.push_back(request);
    }
    ASSERT_FALSE(requests.empty());
    for (zcclRequest_t request : requests) {
      EXPECT_EQ(zcclWait(request), zcclRemoteError);
      const std::string message = zcclGetLastError(nullptr);
      EXPECT_NE(message.find("abort"), std::string::npos) << message;
    }
    aborter.join();
  }
  barrier();
  if (worldRank() != 0) {
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
  }
}

TEST(Async, ANonBlockingCommunicatorAnswersInProgress) {
  zcclComm_t comm = commWith(120, /*blocking=*/0);
  const int n = worldSize();
  std::vector<double> value(1 << 16, 1.0);
  EXPECT_EQ(
      zcclAllReduce(value.data(), value.data(), value.size(), zcclFloat64, zcclSum, comm, nullptr),
      zcclInProgress);
  // Sends and receives around the ring, in a group, queued behind it.
  const int next = (worldRank() + 1) % n;
  const int prev = (worldRank() + n - 1) % n;
  double out = worldRank(), in = -1;
  ASSERT_EQ(zcclGroupStart(), zcclSuccess);
  ASSERT_EQ(zcclSend(&out, 1, zcclFloat64, next, comm, nullptr), zcclSuccess);
  ASSERT_EQ(zcclRecv(&in, 1, zcclFloat64, prev, comm, nullptr), zcclSuccess);
  EXPECT_EQ(zcclGroupEnd(), zcclInProgress);
  zcclResult_t state = zcclInProgress;
  while (state == zcclInProgress) {
    ASSERT_EQ(zcclCommGetAsyncError(comm, &state), zcclSuccess);
    compute(1000);
  }
  EXPECT_EQ(state, zcclSuccess) << zcclGetLastError(comm);
  EXPECT_EQ(value[0], n);
  EXPECT_EQ(in, prev);
  EXPECT_EQ(zcclCommFinalize(comm), zcclSuccess);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(Async, BadRequestArgumentsAreNamed) {
  int done = 0;
  EXPECT_EQ(zcclWait(nullptr), zcclInvalidArgument);
  EXPECT_NE(std::string(zcclGetLastError(nullptr)).find("request=NULL"), std::string::npos);
  EXPECT_EQ(zcclTest(nullptr, &done), zcclInvalidArgument);
  zcclComm_t comm = commWith(120);
  float x = 1;
  zcclRequest_t request = reinterpret_cast<zcclRequest_t>(0x1);
  const zcclCollOptions options = withRequest(&request);
  // A call rejected by its checks hands out no request.
  EXPECT_EQ(zcclAllReduceEx(&x, nullptr, 1, zcclFloat32, zcclSum, comm, nullptr, &options),
            zcclInvalidArgument);
  EXPECT_EQ(request, nullptr);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

}  // namespace
}  // namespace zccl_harness
