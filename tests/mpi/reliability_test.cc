// What a user sees when calls go wrong: mismatched calls never poison later ones nor write
// outside the caller's buffers, a rank whose setup fails fails it everywhere, dead handles
// are refused, late data after an abort lands nowhere, and abort releases a blocked thread.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness/gtest.h"

namespace zccl_harness {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

zcclComm_t commWithTimeout(double seconds, int algorithm = zcclAlgoAuto) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.timeoutSeconds = seconds;
  config.algorithm = algorithm;
  zcclComm_t comm = nullptr;
  EXPECT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
  return comm;
}

void sleepFor(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// A buffer of `count` floats between two guard regions that must never be written.
class Guarded {
 public:
  explicit Guarded(size_t count) : data_(count + 2 * kGuard) {
    for (size_t i = 0; i < kGuard; ++i) data_[i] = data_[data_.size() - 1 - i] = kPattern;
  }
  float* data() { return data_.data() + kGuard; }
  bool guardsIntact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (data_[i] != kPattern || data_[data_.size() - 1 - i] != kPattern) return false;
    }
    return true;
  }

 private:
  static constexpr size_t kGuard = 4096;
  static constexpr float kPattern = -12345.0f;
  std::vector<float> data_;
};

TEST(Reliability, MismatchedBroadcastLeavesTheNextCollectiveExact) {
  const int rank = worldRank(), n = worldSize();
  zcclComm_t comm = commWithTimeout(20);
  // Every rank believes it is the root: each sends, nobody receives. The messages left
  // behind must not match the next, correctly matched call.
  std::vector<float> wrong(1000, static_cast<float>(rank + 100));
  const zcclResult_t broadcast =
      zcclBroadcast(wrong.data(), wrong.data(), wrong.size(), zcclFloat32, rank, comm, nullptr);
  if (broadcast != zcclSuccess) {
    // Only a timeout would be acceptable here; then the communicator is done.
    EXPECT_EQ(broadcast, zcclTimeout) << zcclGetLastError(comm);
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
    return;
  }
  std::vector<float> values(1000);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(rank * 1000 + i);
  ASSERT_EQ(zcclAllReduce(values.data(), values.data(), values.size(), zcclFloat32, zcclSum, comm,
                          nullptr),
            zcclSuccess)
      << zcclGetLastError(comm);
  size_t wrongValues = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    double expected = 0;
    for (int r = 0; r < n; ++r) expected += r * 1000.0 + static_cast<double>(i);
    wrongValues += values[i] != static_cast<float>(expected) ? 1 : 0;
  }
  EXPECT_EQ(wrongValues, 0u);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

// zccl's own algorithms; MPI's collectives (ZCCL_ALGO=native) take mismatched calls as
// undefined behaviour (Open MPI 4.1 corrupts its own heap), which ZCCL_CHECK=1 prevents.
TEST(Reliability, CountMismatchNeverWritesOutsideTheBuffersNorAborts) {
  const int rank = worldRank();
  for (int algorithm : {zcclAlgoRing, zcclAlgoDirect}) {
    zcclComm_t comm = commWithTimeout(3, algorithm);
    const size_t count = rank == 0 ? 1000 : 2000;
    Guarded send(2000), recv(2000);
    for (size_t i = 0; i < count; ++i) send.data()[i] = 1.0f;
    const zcclResult_t result =
        zcclAllReduce(send.data(), recv.data(), count, zcclFloat32, zcclSum, comm, nullptr);
    EXPECT_TRUE(send.guardsIntact() && recv.guardsIntact()) << "algorithm " << algorithm;
    if (result != zcclSuccess) {
      const std::string message = zcclGetLastError(comm);
      // A rank whose peer already aborted on its own error sees that peer gone (remote error).
      EXPECT_TRUE(result == zcclInvalidUsage || result == zcclTimeout ||
                  result == zcclRemoteError || result == zcclSystemError)
          << zcclGetErrorString(result) << ": " << message;
    }
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
    barrier();
  }
}

// Without ZCCL_CHECK: the last rank passes recvbuff=NULL (or its framework rejects the call,
// zcclCommRejectCollective), the others valid buffers. The others' calls fail naming that
// rank and why (its notice reaches them at once; with a timeout of 600 s they would otherwise
// wait that long), and the rank keeps its own error.
TEST(Reliability, ArgumentErrorOnOneRankReachesTheOthers) {
  const int rank = worldRank(), n = worldSize();
  const bool rejecting = rank == n - 1;
  for (bool byFramework : {false, true}) {
    for (int algorithm : {zcclAlgoRing, zcclAlgoDirect}) {
      zcclComm_t comm = commWithTimeout(600, algorithm);
      std::vector<float> send(1000, 1.0f), recv(1000);
      const char* why = byFramework ? "tensors is sparse" : "recvbuff=NULL";
      zcclResult_t result = zcclSuccess;
      if (rejecting && byFramework) {
        EXPECT_EQ(zcclCommRejectCollective(comm, why), zcclSuccess) << zcclGetLastError(comm);
      } else {
        result = zcclAllReduce(send.data(), rejecting ? nullptr : recv.data(), recv.size(),
                               zcclFloat32, zcclSum, comm, nullptr);
        const std::string message = zcclGetLastError(comm);
        EXPECT_EQ(result, rejecting ? zcclInvalidArgument : zcclInvalidUsage)
            << zcclGetErrorString(result) << ": " << message;
        EXPECT_NE(message.find(why), std::string::npos) << message;
        const std::string names = "rank " + std::to_string(n - 1) + " rejected its own arguments";
        EXPECT_TRUE(rejecting || message.find(names) != std::string::npos) << message;
      }
      EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
      barrier();
    }
  }
}

// Every rank rejecting the same call keeps its own error, and the communicator stays exact
// for the next call: the notices of a call every rank rejected fail nothing later.
TEST(Reliability, ArgumentErrorOnEveryRankLeavesTheNextCallExact) {
  const int n = worldSize();
  zcclComm_t comm = commWithTimeout(60);
  std::vector<float> values(1000, 1.0f);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(
        zcclAllReduce(values.data(), nullptr, values.size(), zcclFloat32, zcclSum, comm, nullptr),
        zcclInvalidArgument);
    std::fill(values.begin(), values.end(), 1.0f);
    ASSERT_EQ(zcclAllReduce(values.data(), values.data(), values.size(), zcclFloat32, zcclSum, comm,
                            nullptr),
              zcclSuccess)
        << zcclGetLastError(comm);
    size_t wrong = 0;
    for (float v : values) wrong += v != static_cast<float>(n) ? 1 : 0;
    EXPECT_EQ(wrong, 0u) << "round " << round;
  }
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

zcclComm_t checkingComm(int algorithm) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.timeoutSeconds = 30;
  config.algorithm = algorithm;
  config.checkCalls = 1;
  zcclComm_t comm = nullptr;
  EXPECT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
  return comm;
}

// With ZCCL_CHECK=1 every mismatch is zcclInvalidUsage on every rank, naming the field and
// the ranks, and the communicator stays usable: nothing was sent.
TEST(Reliability, CheckedCallsNameTheMismatch) {
  const int rank = worldRank();
  for (int algorithm : {zcclAlgoAuto, zcclAlgoNative}) {
    zcclComm_t comm = checkingComm(algorithm);
    std::vector<float> a(4096, 1.0f), b(4096 * 4);
    const auto expectMismatch = [&](zcclResult_t result, const std::string& mentions) {
      EXPECT_EQ(result, zcclInvalidUsage) << zcclGetErrorString(result);
      const std::string message = zcclGetLastError(comm);
      EXPECT_NE(message.find(mentions), std::string::npos) << message;
    };
    expectMismatch(zcclAllReduce(a.data(), b.data(), rank == 0 ? 1000 : 2000, zcclFloat32, zcclSum,
                                 comm, nullptr),
                   "count: rank 0 has 1000, rank 1 has 2000");
    expectMismatch(
        rank == 0 ? zcclAllGather(a.data(), b.data(), 100, zcclFloat32, comm, nullptr)
                  : zcclReduceScatter(b.data(), a.data(), 100, zcclFloat32, zcclSum, comm, nullptr),
        "operation: rank 0 has all-gather, rank 1 has reduce-scatter");
    expectMismatch(zcclAllReduce(a.data(), b.data(), 100, rank == 0 ? zcclFloat32 : zcclInt32,
                                 zcclSum, comm, nullptr),
                   "datatype: rank 0 has float32, rank 1 has int32");
    expectMismatch(zcclAllReduce(a.data(), b.data(), 100, zcclFloat32,
                                 rank == 0 ? zcclSum : zcclMax, comm, nullptr),
                   "op: rank 0 has sum, rank 1 has max");
    expectMismatch(zcclBroadcast(a.data(), a.data(), 100, zcclFloat32, rank, comm, nullptr),
                   "root: rank 0 has 0, rank 1 has 1");
    // Arguments one rank rejects: it keeps its own error, the others fail at once naming it
    // (without the check they would wait for it until the timeout).
    const zcclResult_t rejected = zcclAllReduce(a.data(), rank == 0 ? nullptr : b.data(), 100,
                                                zcclFloat32, zcclSum, comm, nullptr);
    if (rank == 0) {
      EXPECT_EQ(rejected, zcclInvalidArgument);
      EXPECT_NE(std::string(zcclGetLastError(comm)).find("recvbuff=NULL with count=100"),
                std::string::npos)
          << zcclGetLastError(comm);
    } else {
      expectMismatch(rejected, "rank(s) 0 rejected their own arguments");
    }
    // Still usable: a matched call is exact.
    std::vector<float> x(1000, 1.0f);
    ASSERT_EQ(zcclAllReduce(x.data(), x.data(), x.size(), zcclFloat32, zcclSum, comm, nullptr),
              zcclSuccess)
        << zcclGetLastError(comm);
    EXPECT_EQ(x[999], static_cast<float>(worldSize()));
    EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
  }
}

TEST(Reliability, SetupFailingOnOneRankFailsOnEveryRankNamingIt) {
  const int rank = worldRank();
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.timeoutSeconds = 30;
  if (rank == 1) config.algorithm = 99;
  zcclComm_t comm = nullptr;
  const auto start = Clock::now();
  const zcclResult_t result = initWorldComm(&config, &comm);
  EXPECT_LT(secondsSince(start), 20.0);
  EXPECT_NE(result, zcclSuccess);
  EXPECT_EQ(comm, nullptr);
  const std::string message = zcclGetLastError(nullptr);
  if (rank == 1) {
    EXPECT_NE(message.find("config.algorithm=99"), std::string::npos) << message;
  } else {
    EXPECT_NE(message.find("rank 1 could not set up the communicator: "), std::string::npos)
        << message;
    EXPECT_NE(message.find("config.algorithm=99"), std::string::npos) << message;
  }
}

TEST(Reliability, DeadHandlesAreRefused) {
  zcclComm_t destroyed = commWithTimeout(30);
  zcclComm_t aborted = commWithTimeout(30);
  ASSERT_EQ(zcclCommDestroy(destroyed), zcclSuccess);
  ASSERT_EQ(zcclCommAbort(aborted), zcclSuccess);
  int count = 0;
  for (zcclComm_t dead : {destroyed, aborted}) {
    EXPECT_EQ(zcclCommCount(dead, &count), zcclInvalidUsage);
    EXPECT_NE(std::string(zcclGetLastError(nullptr)).find("not a live communicator"),
              std::string::npos);
    std::vector<float> x(4);
    EXPECT_EQ(zcclAllReduce(x.data(), x.data(), 4, zcclFloat32, zcclSum, dead, nullptr),
              zcclInvalidUsage);
    EXPECT_EQ(zcclCommDestroy(dead), zcclInvalidUsage);
    EXPECT_EQ(zcclCommAbort(dead), zcclInvalidUsage);
  }
  int never = 0;
  EXPECT_EQ(zcclCommUserRank(reinterpret_cast<zcclComm_t>(&never), &count), zcclInvalidUsage);
}

TEST(Reliability, LateDataAfterATimeoutAndAbortLandsNowhere) {
  const int rank = worldRank();
  zcclComm_t comm = commWithTimeout(1);
  constexpr size_t kCount = size_t{2} << 20;  // 8 MiB of float32 per rank
  const size_t total = kCount * static_cast<size_t>(worldSize());
  const auto start = Clock::now();
  if (rank == 0) {
    // The others come late: this rank gives up, aborts, and frees its receive buffer;
    // memory allocated afterwards must keep what the program writes into it.
    auto* recv = static_cast<float*>(std::malloc(total * sizeof(float)));
    std::vector<float> send(kCount, 1.0f);
    EXPECT_EQ(zcclAllGather(send.data(), recv, kCount, zcclFloat32, comm, nullptr), zcclTimeout);
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
    std::free(recv);
    auto* fresh = static_cast<float*>(std::malloc(total * sizeof(float)));
    for (size_t i = 0; i < total; ++i) fresh[i] = -1.0f;
    sleepFor(6.0 - secondsSince(start));  // the late ranks have sent and given up by now
    size_t changed = 0;
    for (size_t i = 0; i < total; ++i) changed += fresh[i] != -1.0f ? 1 : 0;
    EXPECT_EQ(changed, 0u);
    std::free(fresh);
  } else {
    sleepFor(3.0);
    std::vector<float> send(kCount, static_cast<float>(rank)), recv(total);
    const zcclResult_t late =
        zcclAllGather(send.data(), recv.data(), kCount, zcclFloat32, comm, nullptr);
    EXPECT_NE(late, zcclSuccess) << "rank 0 left before this call";
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
  }
  barrier();
}

TEST(Reliability, AbortFromAnotherThreadReleasesABlockedCollective) {
  const int rank = worldRank();
  zcclComm_t comm = commWithTimeout(60);
  if (rank == 0) {
    // No other rank joins: the collective blocks until the abort.
    zcclResult_t result = zcclSuccess;
    std::vector<float> x(1 << 16, 1.0f);
    const auto start = Clock::now();
    std::thread blocked([&] {
      result = zcclAllReduce(x.data(), x.data(), x.size(), zcclFloat32, zcclSum, comm, nullptr);
    });
    sleepFor(0.5);
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
    blocked.join();
    EXPECT_EQ(result, zcclRemoteError);
    EXPECT_LT(secondsSince(start), 20.0);
  } else {
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
  }
  barrier();
}

#ifdef ZCCL_TEST_MPI
TEST(Reliability, NativeTimeoutIsAnErrorNotAnAbort) {
  const int rank = worldRank();
  zcclComm_t comm = commWithTimeout(1, zcclAlgoNative);
  std::vector<float> x(1024, 1.0f);
  if (rank == 0) {
    EXPECT_EQ(zcclAllReduce(x.data(), x.data(), x.size(), zcclFloat32, zcclSum, comm, nullptr),
              zcclTimeout);
    EXPECT_NE(std::string(zcclGetLastError(comm)).find("native collective"), std::string::npos);
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
  } else {
    // Joins late, so that MPI's collective can still complete (rank 0 progresses it in the
    // barrier below).
    sleepFor(2.0);
    zcclAllReduce(x.data(), x.data(), x.size(), zcclFloat32, zcclSum, comm, nullptr);
    EXPECT_EQ(zcclCommAbort(comm), zcclSuccess);
  }
  barrier();
}
#endif

}  // namespace
}  // namespace zccl_harness
