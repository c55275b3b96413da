// Partitions of uneven counts, ring arithmetic and node maps.
#include <gtest/gtest.h>

#include <cstdlib>

#include "collectives/context.h"
#include "core/comm.h"
#include "topology/node_map.h"

namespace zccl {
namespace {

TEST(Partition, BlocksCoverTheCountContiguouslyLargestFirst) {
  for (size_t count : {0, 1, 2, 7, 1000003}) {
    for (int parts : {1, 2, 3, 4, 7}) {
      const Partition p{count, parts};
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        EXPECT_EQ(p.offset(i), next);
        EXPECT_LE(p.size(i), p.largest());
        EXPECT_LE(p.largest() - p.size(i), 1u);
        next += p.size(i);
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(Ring, BlockIndexWrapsBothWays) {
  EXPECT_EQ(ringBlock(0, 1, 4), 3);
  EXPECT_EQ(ringBlock(2, 5, 3), 0);
  EXPECT_EQ(ringBlock(1, 0, 2), 1);
}

TEST(NodeMap, DenseNumberingLocalRanksAndSubsets) {
  const NodeMap map({7, 7, 3, 3, 7, 9});
  EXPECT_EQ(map.numNodes(), 3);
  EXPECT_EQ(map.nodeOf(0), 0);
  EXPECT_EQ(map.nodeOf(2), 1);
  EXPECT_EQ(map.nodeOf(5), 2);
  EXPECT_EQ(map.localRank(4), 2);
  EXPECT_EQ(map.localSize(4), 3);
  EXPECT_TRUE(map.sameNode(1, 4));
  const NodeMap sub = map.subset({5, 4, 2});
  EXPECT_EQ(sub.numNodes(), 3);
  EXPECT_FALSE(sub.sameNode(0, 1));
}

TEST(Config, EnvironmentFillsWhatTheConfigLeavesUndefined) {
  setenv("ZCCL_ALGO", "Native", 1);
  setenv("ZCCL_TIMEOUT_S", "2.5", 1);
  setenv("ZCCL_RANKS_PER_NODE", "4", 1);
  CommConfig resolved;
  ASSERT_EQ(resolveConfig(nullptr, &resolved), Status::kSuccess);
  EXPECT_EQ(resolved.algorithm, Algorithm::kNative);
  EXPECT_EQ(resolved.timeoutSeconds, 2.5);
  EXPECT_EQ(resolved.ranksPerNode, 4);
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = zcclAlgoRing;
  ASSERT_EQ(resolveConfig(&config, &resolved), Status::kSuccess);
  EXPECT_EQ(resolved.algorithm, Algorithm::kRing) << "an explicit config field wins";
  setenv("ZCCL_TIMEOUT_S", "soon", 1);
  EXPECT_EQ(resolveConfig(nullptr, &resolved), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("ZCCL_TIMEOUT_S=soon"), std::string::npos);
  unsetenv("ZCCL_ALGO");
  unsetenv("ZCCL_TIMEOUT_S");
  unsetenv("ZCCL_RANKS_PER_NODE");
}

}  // namespace
}  // namespace zccl
