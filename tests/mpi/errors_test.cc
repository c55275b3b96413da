// Every bad argument returns zcclInvalidArgument (or zcclInvalidUsage), and the last error
// names the argument and its value. Nothing aborts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness/gtest.h"
#ifdef ZCCL_TEST_MPI
#include "zccl/zccl_mpi.h"
#endif

namespace zccl_harness {
namespace {

class Errors : public ::testing::Test {
 protected:
  void SetUp() override { comm_ = makeComm(zcclAlgoAuto); }
  void TearDown() override { EXPECT_EQ(zcclCommDestroy(comm_), zcclSuccess); }

  void expectError(zcclResult_t got, zcclResult_t want, const std::string& mentions,
                   zcclComm_t comm) {
    EXPECT_EQ(got, want) << zcclGetErrorString(got);
    const std::string message = zcclGetLastError(comm);
    EXPECT_NE(message.find(mentions), std::string::npos)
        << "last error \"" << message << "\" does not mention \"" << mentions << "\"";
  }

  zcclComm_t comm_ = nullptr;
  std::vector<float> a_ = std::vector<float>(64), b_ = std::vector<float>(64 * 64);
};

TEST_F(Errors, NullComm) {
  expectError(zcclAllReduce(a_.data(), a_.data(), 4, zcclFloat32, zcclSum, nullptr, nullptr),
              zcclInvalidArgument, "comm=NULL", nullptr);
  int count = 0;
  expectError(zcclCommCount(nullptr, &count), zcclInvalidArgument, "comm=NULL", nullptr);
}

TEST_F(Errors, NullBufferWithElements) {
  expectError(zcclAllGather(nullptr, b_.data(), 4, zcclFloat32, comm_, nullptr),
              zcclInvalidArgument, "sendbuff=NULL with sendcount=4", comm_);
  expectError(zcclBroadcast(a_.data(), nullptr, 3, zcclFloat32, 0, comm_, nullptr),
              zcclInvalidArgument, "recvbuff=NULL with count=3", comm_);
  // Count 0 with null buffers is a valid no-op.
  EXPECT_EQ(zcclAllReduce(nullptr, nullptr, 0, zcclFloat32, zcclSum, comm_, nullptr), zcclSuccess);
}

TEST_F(Errors, UnknownTypeAndOp) {
  expectError(zcclAllReduce(a_.data(), a_.data(), 4, static_cast<zcclDataType_t>(42), zcclSum,
                            comm_, nullptr),
              zcclInvalidArgument, "datatype=42", comm_);
  expectError(zcclAllReduce(a_.data(), a_.data(), 4, zcclFloat32, static_cast<zcclRedOp_t>(-3),
                            comm_, nullptr),
              zcclInvalidArgument, "op=-3", comm_);
}

TEST_F(Errors, CountOverflow) {
  const size_t huge = SIZE_MAX / 2;
  expectError(zcclAllGather(a_.data(), b_.data(), huge, zcclFloat64, comm_, nullptr),
              zcclInvalidArgument, "sendcount=" + std::to_string(huge), comm_);
  expectError(zcclAllReduce(a_.data(), a_.data(), huge, zcclInt32, zcclSum, comm_, nullptr),
              zcclInvalidArgument, "count=" + std::to_string(huge), comm_);
}

TEST_F(Errors, PeerAndRootOutOfRange) {
  const int n = worldSize();
  expectError(zcclSend(a_.data(), 4, zcclFloat32, n, comm_, nullptr), zcclInvalidArgument,
              "peer=" + std::to_string(n), comm_);
  expectError(zcclRecv(a_.data(), 4, zcclFloat32, -1, comm_, nullptr), zcclInvalidArgument,
              "peer=-1", comm_);
  expectError(zcclBroadcast(a_.data(), a_.data(), 4, zcclFloat32, n + 5, comm_, nullptr),
              zcclInvalidArgument, "root=" + std::to_string(n + 5), comm_);
  expectError(zcclReduce(a_.data(), a_.data(), 4, zcclFloat32, zcclSum, -2, comm_, nullptr),
              zcclInvalidArgument, "root=-2", comm_);
  expectError(zcclGather(a_.data(), b_.data(), 4, zcclFloat32, n, comm_, nullptr),
              zcclInvalidArgument, "root=" + std::to_string(n), comm_);
  expectError(zcclScatter(b_.data(), a_.data(), 4, zcclFloat32, n, comm_, nullptr),
              zcclInvalidArgument, "root=" + std::to_string(n), comm_);
}

// The buffers every rank uses are checked on every rank; the root's own only on the root.
TEST_F(Errors, RootedCollectivesCheckTheBuffersEachRankUses) {
  expectError(zcclGather(nullptr, b_.data(), 3, zcclFloat32, 0, comm_, nullptr),
              zcclInvalidArgument, "sendbuff=NULL with sendcount=3", comm_);
  expectError(zcclScatter(b_.data(), nullptr, 3, zcclFloat32, 0, comm_, nullptr),
              zcclInvalidArgument, "recvbuff=NULL with recvcount=3", comm_);
  expectError(zcclReduce(nullptr, a_.data(), 3, zcclFloat32, zcclMax, 0, comm_, nullptr),
              zcclInvalidArgument, "sendbuff=NULL with count=3", comm_);
  expectError(zcclReduce(a_.data(), a_.data(), 3, zcclInt32, static_cast<zcclRedOp_t>(9), 0, comm_,
                         nullptr),
              zcclInvalidArgument, "op=9", comm_);
}

TEST_F(Errors, StreamWithHostMemory) {
  int fakeStream = 0;
  expectError(zcclAllReduce(a_.data(), a_.data(), 4, zcclFloat32, zcclSum, comm_, &fakeStream),
              zcclInvalidArgument, "stream=0x", comm_);
}

TEST_F(Errors, InPlaceLayoutTheOperationCannotDo) {
  const int rank = worldRank();
  // All-gather: sendbuff inside recvbuff but not at this rank's slot.
  float* wrongSlot = b_.data() + 4 * rank + 1;
  expectError(zcclAllGather(wrongSlot, b_.data(), 4, zcclFloat32, comm_, nullptr),
              zcclInvalidArgument, "not the in-place layout", comm_);
  // Reduce-scatter: recvbuff overlapping sendbuff off its slot.
  expectError(zcclReduceScatter(b_.data(), b_.data() + 4 * rank + 2, 4, zcclFloat32, zcclSum, comm_,
                                nullptr),
              zcclInvalidArgument, "sendbuff=", comm_);
  // All-reduce: partially overlapping buffers.
  expectError(zcclAllReduce(a_.data(), a_.data() + 1, 8, zcclFloat32, zcclSum, comm_, nullptr),
              zcclInvalidArgument, "overlaps", comm_);
}

TEST_F(Errors, CollectiveInsideGroupIsInvalidUsage) {
  ASSERT_EQ(zcclGroupStart(), zcclSuccess);
  expectError(zcclAllReduce(a_.data(), a_.data(), 4, zcclFloat32, zcclSum, comm_, nullptr),
              zcclInvalidUsage, "zcclGroupStart", comm_);
  ASSERT_EQ(zcclGroupEnd(), zcclSuccess);
  expectError(zcclGroupEnd(), zcclInvalidUsage, "without a matching", nullptr);
}

TEST_F(Errors, RecvFromAnyRefusesWhatItCannotDo) {
  int32_t value = 0;
  int source = -1;
  expectError(zcclRecvFromAny(&value, 1, zcclInt32, nullptr, comm_), zcclInvalidArgument,
              "source=NULL", comm_);
  expectError(zcclRecvFromAny(&value, 0, zcclInt32, &source, comm_), zcclInvalidArgument, "count=0",
              comm_);
  expectError(zcclRecvFromAny(nullptr, 4, zcclInt32, &source, comm_), zcclInvalidArgument,
              "recvbuff=NULL", comm_);
  ASSERT_EQ(zcclGroupStart(), zcclSuccess);
  expectError(zcclRecvFromAny(&value, 1, zcclInt32, &source, comm_), zcclInvalidUsage,
              "inside a group", comm_);
  ASSERT_EQ(zcclGroupEnd(), zcclSuccess);
}

TEST_F(Errors, BadConfigAndEnvironment) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  zcclComm_t comm = nullptr;
  expectError(initWorldComm(&config, &comm), zcclInvalidArgument, "magic=0x0", nullptr);
  EXPECT_EQ(comm, nullptr);
  config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = 17;
  expectError(initWorldComm(&config, &comm), zcclInvalidArgument, "config.algorithm=17", nullptr);
  setenv("ZCCL_ALGO", "fastest", 1);
  expectError(initWorldComm(nullptr, &comm), zcclInvalidArgument, "ZCCL_ALGO=fastest", nullptr);
  unsetenv("ZCCL_ALGO");
  setenv("ZCCL_RANKS_PER_NODE", "0", 1);
  expectError(initWorldComm(nullptr, &comm), zcclInvalidArgument, "ZCCL_RANKS_PER_NODE=0", nullptr);
  unsetenv("ZCCL_RANKS_PER_NODE");
  setenv("ZCCL_DEVICE_BACKEND", "gpu", 1);
  expectError(initWorldComm(nullptr, &comm), zcclInvalidArgument,
              "ZCCL_DEVICE_BACKEND=gpu: expected auto|staged|nccl", nullptr);
  unsetenv("ZCCL_DEVICE_BACKEND");
  setenv("ZCCL_STAGED_CHUNK_BYTES", "100", 1);
  expectError(initWorldComm(nullptr, &comm), zcclInvalidArgument, "ZCCL_STAGED_CHUNK_BYTES=100",
              nullptr);
  unsetenv("ZCCL_STAGED_CHUNK_BYTES");
  for (const char* variable : {"ZCCL_TUNE", "ZCCL_DEVICE_BLOCKING"}) {
    setenv(variable, "yes", 1);
    expectError(initWorldComm(nullptr, &comm), zcclInvalidArgument, std::string(variable) + "=yes",
                nullptr);
    unsetenv(variable);
  }
#ifdef ZCCL_TEST_MPI
  expectError(zcclCommInitMPI(MPI_COMM_NULL, nullptr, &comm), zcclInvalidArgument,
              "mpiComm=MPI_COMM_NULL", nullptr);
#endif
}

// Settings that shape the wire must agree: one rank with another wire format (its own
// ZCCL_QUANT, say) fails the creation on every rank, naming the setting.
TEST_F(Errors, ConfigurationsThatDifferBetweenRanks) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  if (worldRank() == worldSize() - 1) config.wireFormat = zcclWireInt8;
  zcclComm_t comm = nullptr;
  expectError(initWorldComm(&config, &comm), zcclInvalidUsage,
              "ZCCL_QUANT (config.wireFormat) is none on rank 0 and int8", nullptr);
  EXPECT_EQ(comm, nullptr);
  config = ZCCL_CONFIG_INITIALIZER;
  if (worldRank() == 0) setenv("ZCCL_HIERARCHY", "flat", 1);
  expectError(initWorldComm(&config, &comm), zcclInvalidUsage, "ZCCL_HIERARCHY", nullptr);
  unsetenv("ZCCL_HIERARCHY");
  if (worldRank() == 0) setenv("ZCCL_STAGED_CHUNK_BYTES", "65536", 1);
  expectError(initWorldComm(&config, &comm), zcclInvalidUsage,
              "ZCCL_STAGED_CHUNK_BYTES is 65536 on rank 0 and 1048576", nullptr);
  unsetenv("ZCCL_STAGED_CHUNK_BYTES");
  if (worldRank() == 0) setenv("ZCCL_TUNE", "0", 1);  // the ranks would choose paths apart
  expectError(initWorldComm(&config, &comm), zcclInvalidUsage, "ZCCL_TUNE is 0 on rank 0 and 1",
              nullptr);
  unsetenv("ZCCL_TUNE");
  ASSERT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST_F(Errors, OutputPointers) {
  expectError(zcclCommCount(comm_, nullptr), zcclInvalidArgument, "count=NULL", comm_);
  expectError(zcclCommUserRank(comm_, nullptr), zcclInvalidArgument, "rank=NULL", comm_);
  expectError(zcclCommGetStats(comm_, nullptr), zcclInvalidArgument, "stats=NULL", comm_);
  expectError(zcclGetVersion(nullptr), zcclInvalidArgument, "version=NULL", nullptr);
  expectError(initWorldComm(nullptr, nullptr), zcclInvalidArgument, "comm=NULL", nullptr);
}

TEST_F(Errors, ErrorStringsAndVersion) {
  EXPECT_STREQ(zcclGetErrorString(zcclTimeout), "timeout");
  EXPECT_STREQ(zcclGetErrorString(static_cast<zcclResult_t>(99)), "unknown result code");
  int version = 0;
  ASSERT_EQ(zcclGetVersion(&version), zcclSuccess);
  EXPECT_EQ(version, ZCCL_VERSION_CODE);
}

TEST_F(Errors, SplitGivesWorkingSubCommunicators) {
  const int rank = worldRank();
  zcclComm_t half = nullptr;
  ASSERT_EQ(zcclCommSplit(comm_, rank % 2, -rank, &half, nullptr), zcclSuccess);
  ASSERT_NE(half, nullptr);
  int count = 0, myRank = -1;
  ASSERT_EQ(zcclCommCount(half, &count), zcclSuccess);
  ASSERT_EQ(zcclCommUserRank(half, &myRank), zcclSuccess);
  const int n = worldSize();
  EXPECT_EQ(count, rank % 2 == 0 ? (n + 1) / 2 : n / 2);
  // key = -rank reverses the order: the highest world rank of each half is rank 0.
  EXPECT_EQ(myRank, count - 1 - rank / 2);
  std::vector<int32_t> value(1, rank);
  ASSERT_EQ(zcclAllReduce(value.data(), value.data(), 1, zcclInt32, zcclSum, half, nullptr),
            zcclSuccess);
  int expected = 0;
  for (int r = rank % 2; r < n; r += 2) expected += r;
  EXPECT_EQ(value[0], expected);
  EXPECT_EQ(zcclCommDestroy(half), zcclSuccess);
  zcclComm_t none = reinterpret_cast<zcclComm_t>(&value);
  ASSERT_EQ(zcclCommSplit(comm_, rank == 0 ? ZCCL_SPLIT_NOCOLOR : 1, 0, &none, nullptr),
            zcclSuccess);
  EXPECT_EQ(none == nullptr, rank == 0);
  if (none != nullptr) {
    EXPECT_EQ(zcclCommDestroy(none), zcclSuccess);
  }
}

}  // namespace
}  // namespace zccl_harness
