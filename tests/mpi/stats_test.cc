// zcclCommGetStats must equal, byte for byte, what each algorithm's definition says a rank
// sends to each peer, folded into link classes with an emulated node map (2 ranks a node).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "harness/gtest.h"
#include "harness/values.h"

namespace zccl_harness {
namespace {

constexpr int kRanksPerNode = 2;

struct Expected {
  uint64_t bytes[zcclNumLinkClasses] = {};
  uint64_t messages[zcclNumLinkClasses] = {};
};

class Stats : public ::testing::Test {
 protected:
  void SetUp() override {
    ring_ = makeComm(zcclAlgoRing, kRanksPerNode);
    direct_ = makeComm(zcclAlgoDirect, kRanksPerNode);
    native_ = makeComm(zcclAlgoNative, kRanksPerNode);
  }
  void TearDown() override {
    for (zcclComm_t comm : {ring_, direct_, native_}) EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
  }

  zcclLinkClass_t linkTo(int peer) const {
    if (peer == rank_) return zcclLinkSelf;
    return peer / kRanksPerNode == rank_ / kRanksPerNode ? zcclLinkIntraNode : zcclLinkInterNode;
  }
  void expectSend(Expected* e, int peer, uint64_t bytes, uint64_t messages = 1) const {
    if (bytes == 0) return;  // zero-byte blocks are never sent
    e->bytes[linkTo(peer)] += bytes;
    e->messages[linkTo(peer)] += messages;
  }
  // Block sizes of `count` elements cut over the ranks, the larger blocks first.
  uint64_t block(size_t count, int index) const {
    return count / n_ + (static_cast<size_t>(index) < count % n_ ? 1 : 0);
  }

  void expectStats(zcclComm_t comm, const Expected& e, const char* what) const {
    zcclStats stats;
    ASSERT_EQ(zcclCommGetStats(comm, &stats), zcclSuccess);
    for (int link = 0; link < zcclNumLinkClasses; ++link) {
      EXPECT_EQ(stats.bytesSent[link], e.bytes[link])
          << what << " link " << link << " rank " << rank_;
      EXPECT_EQ(stats.messagesSent[link], e.messages[link])
          << what << " link " << link << " rank " << rank_;
    }
  }

  const int rank_ = worldRank();
  const int n_ = worldSize();
  const int next_ = (worldRank() + 1) % worldSize();
  zcclComm_t ring_ = nullptr, direct_ = nullptr, native_ = nullptr;
};

TEST_F(Stats, RingAllGatherSendsEveryBlockButNextsToNext) {
  const size_t count = 1000;
  std::vector<float> send(count, 1.0f), recv(count * n_);
  ASSERT_EQ(zcclCommResetStats(ring_), zcclSuccess);
  ASSERT_EQ(zcclAllGather(send.data(), recv.data(), count, zcclFloat32, ring_, nullptr),
            zcclSuccess);
  Expected e;
  expectSend(&e, next_, (n_ - 1) * count * 4, n_ - 1);
  expectStats(ring_, e, "ring all-gather");
}

TEST_F(Stats, RingReduceScatterSendsEveryBlockButMineToNext) {
  const size_t count = 999;
  std::vector<int32_t> send(count * n_, 1), recv(count);
  ASSERT_EQ(zcclCommResetStats(ring_), zcclSuccess);
  ASSERT_EQ(zcclReduceScatter(send.data(), recv.data(), count, zcclInt32, zcclSum, ring_, nullptr),
            zcclSuccess);
  Expected e;
  expectSend(&e, next_, (n_ - 1) * count * 4, n_ - 1);
  expectStats(ring_, e, "ring reduce-scatter");
}

TEST_F(Stats, DirectReduceScatterSendsEachPeerItsBlock) {
  const size_t count = 777;
  std::vector<uint16_t> send(count * n_, 0x3f80), recv(count);
  ASSERT_EQ(zcclCommResetStats(direct_), zcclSuccess);
  ASSERT_EQ(
      zcclReduceScatter(send.data(), recv.data(), count, zcclBfloat16, zcclSum, direct_, nullptr),
      zcclSuccess);
  Expected e;
  for (int peer = 0; peer < n_; ++peer) {
    if (peer != rank_) expectSend(&e, peer, count * 2);
  }
  expectStats(direct_, e, "direct reduce-scatter");
}

TEST_F(Stats, RingAllReduceWithUnevenBlocks) {
  const size_t count = 1000003;  // divides by none of 2, 3, 4
  std::vector<double> data(count, 1.0);
  ASSERT_EQ(zcclCommResetStats(ring_), zcclSuccess);
  ASSERT_EQ(zcclAllReduce(data.data(), data.data(), count, zcclFloat64, zcclSum, ring_, nullptr),
            zcclSuccess);
  // Reduce-scatter: every block but mine goes to next; all-gather: every block but next's.
  Expected e;
  for (int b = 0; b < n_; ++b) {
    if (b != rank_) expectSend(&e, next_, block(count, b) * 8);
  }
  for (int b = 0; b < n_; ++b) {
    if (b != next_) expectSend(&e, next_, block(count, b) * 8);
  }
  expectStats(ring_, e, "ring all-reduce");
  EXPECT_EQ(data[0], n_);
  EXPECT_EQ(data[count - 1], n_);
}

TEST_F(Stats, PairwiseAllToAllSendsEachPeerOneBlock) {
  const size_t count = 4096;
  std::vector<uint8_t> send(count * n_, 7), recv(count * n_);
  ASSERT_EQ(zcclCommResetStats(ring_), zcclSuccess);
  ASSERT_EQ(zcclAllToAll(send.data(), recv.data(), count, zcclUint8, ring_, nullptr), zcclSuccess);
  Expected e;
  for (int peer = 0; peer < n_; ++peer) {
    if (peer != rank_) expectSend(&e, peer, count);
  }
  expectStats(ring_, e, "pairwise all-to-all");
}

TEST_F(Stats, PipelinedBroadcastForwardsAlongTheChainInSegments) {
  const size_t bytes = 1300000;  // three 512 KiB segments
  const size_t segments = (bytes + (512 << 10) - 1) / (512 << 10);
  std::vector<uint8_t> data(bytes, static_cast<uint8_t>(rank_));
  const int root = 1 % n_;
  ASSERT_EQ(zcclCommResetStats(ring_), zcclSuccess);
  ASSERT_EQ(zcclBroadcast(data.data(), data.data(), bytes, zcclUint8, root, ring_, nullptr),
            zcclSuccess);
  Expected e;
  const int position = (rank_ - root + n_) % n_;
  if (position < n_ - 1) expectSend(&e, next_, bytes, segments);
  expectStats(ring_, e, "pipelined broadcast");
  EXPECT_EQ(data[bytes - 1], root);
}

TEST_F(Stats, SelfSendIsCountedAsSelf) {
  std::vector<int64_t> out(100, rank_), in(100, -1);
  ASSERT_EQ(zcclCommResetStats(ring_), zcclSuccess);
  ASSERT_EQ(zcclGroupStart(), zcclSuccess);
  ASSERT_EQ(zcclSend(out.data(), out.size(), zcclInt64, rank_, ring_, nullptr), zcclSuccess);
  ASSERT_EQ(zcclRecv(in.data(), in.size(), zcclInt64, rank_, ring_, nullptr), zcclSuccess);
  ASSERT_EQ(zcclGroupEnd(), zcclSuccess);
  Expected e;
  expectSend(&e, rank_, 800);
  expectStats(ring_, e, "self send");
  EXPECT_EQ(in[99], rank_);
}

TEST_F(Stats, NativeCollectivesAreChargedAsEstimatesNotLinks) {
  const size_t count = 1000;
  std::vector<float> send(count, 1.0f), recv(count * n_);
  ASSERT_EQ(zcclCommResetStats(native_), zcclSuccess);
  ASSERT_EQ(zcclAllGather(send.data(), recv.data(), count, zcclFloat32, native_, nullptr),
            zcclSuccess);
  zcclStats stats;
  ASSERT_EQ(zcclCommGetStats(native_, &stats), zcclSuccess);
#ifdef ZCCL_TEST_MPI
  expectStats(native_, Expected{}, "native all-gather");
  EXPECT_EQ(stats.nativeCalls, 1u);
  EXPECT_EQ(stats.nativeBytesEstimated, (n_ - 1) * count * 4u);
#else
  // UCX has no collectives of its own: zccl's ring ran, counted per link like any other.
  EXPECT_EQ(stats.nativeCalls, 0u);
  uint64_t sent = 0;
  for (int link = 0; link < zcclNumLinkClasses; ++link) sent += stats.bytesSent[link];
  EXPECT_EQ(sent, (n_ - 1) * count * 4u);
#endif
}

TEST_F(Stats, ResetClearsEverything) {
  std::vector<float> data(64, 1.0f);
  ASSERT_EQ(
      zcclAllReduce(data.data(), data.data(), data.size(), zcclFloat32, zcclSum, ring_, nullptr),
      zcclSuccess);
  ASSERT_EQ(zcclCommResetStats(ring_), zcclSuccess);
  expectStats(ring_, Expected{}, "after reset");
}

}  // namespace
}  // namespace zccl_harness
