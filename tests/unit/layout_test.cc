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
  EXPECT_EQ(resolved.collective.algorithm, Algorithm::kNative);
  EXPECT_EQ(resolved.timeoutSeconds, 2.5);
  EXPECT_EQ(resolved.ranksPerNode, 4);
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = zcclAlgoRing;
  ASSERT_EQ(resolveConfig(&config, &resolved), Status::kSuccess);
  EXPECT_EQ(resolved.collective.algorithm, Algorithm::kRing) << "an explicit config field wins";
  setenv("ZCCL_TIMEOUT_S", "soon", 1);
  EXPECT_EQ(resolveConfig(nullptr, &resolved), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("ZCCL_TIMEOUT_S=soon"), std::string::npos);
  unsetenv("ZCCL_ALGO");
  unsetenv("ZCCL_TIMEOUT_S");
  unsetenv("ZCCL_RANKS_PER_NODE");
}

TEST(Config, QuantizationAndHierarchyFromEnvironmentConfigAndCallOptions) {
  setenv("ZCCL_QUANT", "int4", 1);
  setenv("ZCCL_QUANT_SCHEME", "asym", 1);
  setenv("ZCCL_QUANT_GROUP", "256", 1);
  setenv("ZCCL_HIERARCHY", "flat", 1);
  CommConfig resolved;
  ASSERT_EQ(resolveConfig(nullptr, &resolved), Status::kSuccess);
  EXPECT_EQ(resolved.wirePolicy.allGather, zcclWireInt4);
  EXPECT_EQ(resolved.wirePolicy.reduceScatter, zcclWireInt4);
  EXPECT_EQ(resolved.wirePolicy.allReduce, zcclWireInt4);
  EXPECT_EQ(resolved.collective.scheme, QuantScheme::kAsymmetric);
  EXPECT_EQ(resolved.collective.groupSize, 256u);
  EXPECT_EQ(resolved.collective.hierarchy, Hierarchy::kFlat);
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.wireFormat = zcclWireInt8;
  options.seed = 42;
  CollectiveOptions call;
  ASSERT_EQ(resolveCollOptions(&options, resolved, Collective::kAllGather, 4096, &call),
            Status::kSuccess);
  EXPECT_EQ(call.wire, WireFormat::kInt8) << "a per-call field wins";
  EXPECT_EQ(call.groupSize, 256u) << "an undefined per-call field keeps the communicator's";
  EXPECT_EQ(call.seed, 42u);
  options.quantGroupSize = 100;
  EXPECT_EQ(resolveCollOptions(&options, resolved, Collective::kAllGather, 4096, &call),
            Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("options.quantGroupSize=100"), std::string::npos);
  options.quantGroupSize = ZCCL_CONFIG_UNDEF_INT;
  options.hierarchy = 7;
  EXPECT_EQ(resolveCollOptions(&options, resolved, Collective::kAllGather, 4096, &call),
            Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("options.hierarchy=7"), std::string::npos);
  options.size = 8;
  EXPECT_EQ(resolveCollOptions(&options, resolved, Collective::kAllGather, 4096, &call),
            Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("ZCCL_COLL_OPTIONS_INITIALIZER"), std::string::npos);
  setenv("ZCCL_QUANT", "int3", 1);
  EXPECT_EQ(resolveConfig(nullptr, &resolved), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("ZCCL_QUANT=int3: expected none|int8|int4"), std::string::npos)
      << lastThreadError();
  for (const char* name : {"ZCCL_QUANT", "ZCCL_QUANT_SCHEME", "ZCCL_QUANT_GROUP", "ZCCL_HIERARCHY"})
    unsetenv(name);
}

// Every ZCCL_* variable of the configuration, alone and all together, changes its own field
// and no other (one parsed value once leaked into the variables read after it).
struct EnvCase {
  const char* name;
  const char* value;
  void (*expect)(CommConfig* c);  // sets the field the variable should have changed
};

const EnvCase kEnvCases[] = {
    {"ZCCL_ALGO", "direct", [](CommConfig* c) { c->collective.algorithm = Algorithm::kDirect; }},
    {"ZCCL_QUANT", "allow-int4",
     [](CommConfig* c) {
       c->wirePolicy.allGather = c->wirePolicy.reduceScatter = c->wirePolicy.allReduce =
           zcclWireAllowInt4;
     }},
    {"ZCCL_QUANT_SCHEME", "asym",
     [](CommConfig* c) { c->collective.scheme = QuantScheme::kAsymmetric; }},
    {"ZCCL_QUANT_GROUP", "512", [](CommConfig* c) { c->collective.groupSize = 512; }},
    {"ZCCL_QUANT_STOCHASTIC", "1",
     [](CommConfig* c) { c->collective.rounding = Rounding::kStochastic; }},
    {"ZCCL_HIERARCHY", "two-level",
     [](CommConfig* c) { c->collective.hierarchy = Hierarchy::kTwoLevel; }},
    {"ZCCL_RANKS_PER_NODE", "3", [](CommConfig* c) { c->ranksPerNode = 3; }},
    {"ZCCL_TIMEOUT_S", "7.5", [](CommConfig* c) { c->timeoutSeconds = 7.5; }},
    {"ZCCL_CHECK", "1", [](CommConfig* c) { c->checkCalls = true; }},
    {"ZCCL_TRANSPORT", "ucx", [](CommConfig* c) { c->transport = TransportKind::kUcx; }},
    {"ZCCL_QUANT_ISA", "scalar", [](CommConfig*) {}},  // read by the kernels, checked here
};

void expectConfig(const CommConfig& want, const CommConfig& got, const std::string& context) {
  EXPECT_EQ(got.collective.algorithm, want.collective.algorithm) << context;
  EXPECT_EQ(got.collective.wire, want.collective.wire) << context;
  EXPECT_EQ(got.collective.wireAllowedOnly, want.collective.wireAllowedOnly) << context;
  EXPECT_EQ(got.wirePolicy.allGather, want.wirePolicy.allGather) << context;
  EXPECT_EQ(got.wirePolicy.reduceScatter, want.wirePolicy.reduceScatter) << context;
  EXPECT_EQ(got.wirePolicy.allReduce, want.wirePolicy.allReduce) << context;
  EXPECT_EQ(got.wirePolicy.minBytes, want.wirePolicy.minBytes) << context;
  EXPECT_EQ(got.collective.scheme, want.collective.scheme) << context;
  EXPECT_EQ(got.collective.groupSize, want.collective.groupSize) << context;
  EXPECT_EQ(got.collective.rounding, want.collective.rounding) << context;
  EXPECT_EQ(got.collective.hierarchy, want.collective.hierarchy) << context;
  EXPECT_EQ(got.ranksPerNode, want.ranksPerNode) << context;
  EXPECT_EQ(got.timeoutSeconds, want.timeoutSeconds) << context;
  EXPECT_EQ(got.checkCalls, want.checkCalls) << context;
  EXPECT_EQ(got.transport, want.transport) << context;
}

TEST(Config, EachVariableAloneAndTogetherSetsOnlyItsOwnField) {
  for (const EnvCase& alone : kEnvCases) {
    setenv(alone.name, alone.value, 1);
    CommConfig want;
    alone.expect(&want);
    CommConfig got;
    ASSERT_EQ(resolveConfig(nullptr, &got), Status::kSuccess) << lastThreadError();
    expectConfig(want, got, std::string(alone.name) + " alone");
    unsetenv(alone.name);
  }
  CommConfig want;
  for (const EnvCase& each : kEnvCases) {
    setenv(each.name, each.value, 1);
    each.expect(&want);
  }
  CommConfig got;
  ASSERT_EQ(resolveConfig(nullptr, &got), Status::kSuccess) << lastThreadError();
  expectConfig(want, got, "all together");
  for (const EnvCase& each : kEnvCases) unsetenv(each.name);
}

TEST(Config, MalformedValuesAreErrorsNamingTheVariable) {
  for (const auto& [name, value] :
       {std::pair<const char*, const char*>{"ZCCL_QUANT_ISA", "garbage"},
        {"ZCCL_CHECK", "2"},
        {"ZCCL_TRANSPORT", "tcp"},
        {"ZCCL_QUANT_GROUP", "100"},
        {"ZCCL_TIMEOUT_S", "-1"}}) {
    setenv(name, value, 1);
    CommConfig got;
    EXPECT_EQ(resolveConfig(nullptr, &got), Status::kInvalidArgument) << name;
    EXPECT_NE(lastThreadError().find(std::string(name) + "=" + value), std::string::npos)
        << lastThreadError();
    unsetenv(name);
  }
}

TEST(NodeMap, FromHostIdentitiesAndEmulatedNodes) {
  // Hosts interleaved in rank order: ranks of one host form a node, numbered by lowest rank.
  const NodeMap hosts = nodeMapFromHosts({7, 9, 7, 9, 7}, 0);
  EXPECT_EQ(hosts.numNodes(), 2);
  EXPECT_EQ(hosts.nodeOf(4), 0);
  EXPECT_EQ(hosts.nodeOf(3), 1);
  // Two ranks per emulated node cut each host by its ranks' order on it.
  const NodeMap emulated = nodeMapFromHosts({7, 9, 7, 9, 7}, 2);
  EXPECT_EQ(emulated.numNodes(), 3);
  EXPECT_TRUE(emulated.sameNode(0, 2));
  EXPECT_FALSE(emulated.sameNode(2, 4));
  EXPECT_TRUE(emulated.sameNode(1, 3));
  EXPECT_EQ(localHostIdentity(), localHostIdentity());
  setenv("ZCCL_HOSTID", "node-a", 1);
  const uint64_t a = localHostIdentity();
  setenv("ZCCL_HOSTID", "node-b", 1);
  EXPECT_NE(a, localHostIdentity());
  unsetenv("ZCCL_HOSTID");
}

TEST(NodeMap, UniformityAndRankAt) {
  const NodeMap uneven({0, 0, 1});
  EXPECT_FALSE(uneven.isUniform());
  const NodeMap interleaved({0, 1, 0, 1, 0, 1});
  EXPECT_TRUE(interleaved.isUniform());
  EXPECT_EQ(interleaved.rankAt(1, 2), 5);
  EXPECT_EQ(interleaved.rankAt(0, 1), 2);
}

TEST(BlockBytes, OffsetsFollowTwoBlockSizes) {
  const Partition blocks{1000003, 6};
  const auto bytesOf = [](size_t k) { return 24 + k / 2 + 4 * ((k + 31) / 32); };
  const BlockBytes layout = BlockBytes::of(blocks, bytesOf);
  size_t next = 0;
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(layout.offset(r), next);
    EXPECT_EQ(layout.size(r), bytesOf(blocks.size(r)));
    next += layout.size(r);
  }
  EXPECT_EQ(layout.total(), next);
}

}  // namespace
}  // namespace zccl
