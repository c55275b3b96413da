// The drop-in's parts that need no communicator: the config reader over NCCL's layouts, the
// policy's decisions, and the loader of the real NCCL (which must never take the drop-in for
// it). Each loader case runs in a child process: the library is loaded once per process.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "nccl_abi/nccl_functions.h"
#include "nccl_compat/nccl_config.h"
#include "nccl_compat/policy.h"

namespace zccl::nccl {
namespace {

ncclConfig_v22800 initialConfig() {
  ncclConfig_v22800 config{};
  config.size = sizeof(config);
  config.magic = kConfigMagic;
  config.version = kImplementedVersion;
  config.blocking = kConfigUndefInt;
  return config;
}

TEST(NcclConfig, NullIsTheDefaults) {
  CommSettings settings;
  std::string error;
  ASSERT_EQ(readConfig(nullptr, &settings, &error), ncclSuccess);
  EXPECT_TRUE(settings.blocking);
  EXPECT_TRUE(settings.rawConfig.empty());
}

TEST(NcclConfig, ReadsTheNewestLayoutAndKeepsItForTheRealNccl) {
  ncclConfig_v22800 config = initialConfig();
  config.blocking = 0;
  config.commName = "trainer";
  CommSettings settings;
  std::string error;
  ASSERT_EQ(readConfig(&config, &settings, &error), ncclSuccess) << error;
  EXPECT_FALSE(settings.blocking);
  EXPECT_EQ(settings.name, "trainer");
  EXPECT_EQ(settings.rawConfig.size(), sizeof(config));
}

TEST(NcclConfig, AnOlderLayoutIsReadUpToItsSize) {
  // NCCL 2.14's struct ends after netName: commName is not there and must not be read.
  struct {
    ncclConfig_v22800 prefix;
  } storage{initialConfig()};
  storage.prefix.size = offsetof(ncclConfig_v22800, splitShare);
  storage.prefix.commName = reinterpret_cast<const char*>(0x1);  // would crash if read
  CommSettings settings;
  std::string error;
  ASSERT_EQ(readConfig(&storage.prefix, &settings, &error), ncclSuccess) << error;
  EXPECT_TRUE(settings.name.empty());
  EXPECT_EQ(settings.rawConfig.size(), storage.prefix.size);
}

TEST(NcclConfig, WrongSizeMagicOrBlockingAreErrorsNamingTheField) {
  CommSettings settings;
  std::string error;
  ncclConfig_v22800 config = initialConfig();
  config.size = 3;
  EXPECT_EQ(readConfig(&config, &settings, &error), ncclInvalidArgument);
  EXPECT_NE(error.find("config->size=3"), std::string::npos) << error;
  config = initialConfig();
  config.magic = 0xdeadbeef;
  EXPECT_EQ(readConfig(&config, &settings, &error), ncclInvalidArgument);
  EXPECT_NE(error.find("config->magic=0xdeadbeef"), std::string::npos) << error;
  config = initialConfig();
  config.blocking = 7;
  EXPECT_EQ(readConfig(&config, &settings, &error), ncclInvalidArgument);
  EXPECT_NE(error.find("config->blocking=7"), std::string::npos) << error;
}

TEST(NcclPolicy, DeviceBuffersTakeZcclUnlessAskedForTheRealNccl) {
  Policy policy;
  std::string error;
  unsetenv("ZCCL_NCCL_DEVICE");
  ASSERT_EQ(policyFromEnvironment(&policy, &error), ncclSuccess) << error;
  EXPECT_TRUE(policy.deviceOverZccl);
  setenv("ZCCL_NCCL_DEVICE", "nccl", 1);
  ASSERT_EQ(policyFromEnvironment(&policy, &error), ncclSuccess) << error;
  EXPECT_FALSE(policy.deviceOverZccl);
  setenv("ZCCL_NCCL_DEVICE", "gpu", 1);
  EXPECT_EQ(policyFromEnvironment(&policy, &error), ncclInvalidArgument);
  EXPECT_EQ(error, "ZCCL_NCCL_DEVICE=gpu: expected zccl|nccl");
  unsetenv("ZCCL_NCCL_DEVICE");
}

TEST(NcclPolicy, TheQuantVariablesMakeTheWirePolicy) {
  setenv("ZCCL_NCCL_QUANT_ALLGATHER", "int8", 1);
  setenv("ZCCL_NCCL_QUANT_REDUCESCATTER", "INT4", 1);
  setenv("ZCCL_NCCL_QUANT_MIN_BYTES", "1024", 1);
  Policy policy;
  std::string error;
  ASSERT_EQ(policyFromEnvironment(&policy, &error), ncclSuccess) << error;
  EXPECT_EQ(policy.wire.allGather, zcclWireInt8);
  EXPECT_EQ(policy.wire.reduceScatter, zcclWireInt4);
  EXPECT_EQ(policy.wire.allReduce, zcclWireNone);  // not asked for
  EXPECT_EQ(policy.wire.minBytes, 1024u);
  setenv("ZCCL_NCCL_QUANT_ALLREDUCE", "int5", 1);
  EXPECT_EQ(policyFromEnvironment(&policy, &error), ncclInvalidArgument);
  EXPECT_NE(error.find("ZCCL_NCCL_QUANT_ALLREDUCE=int5"), std::string::npos) << error;
  EXPECT_NE(error.find("none|int8|int4|allow-int8|allow-int4"), std::string::npos) << error;
  for (const char* name : {"ZCCL_NCCL_QUANT_ALLGATHER", "ZCCL_NCCL_QUANT_REDUCESCATTER",
                           "ZCCL_NCCL_QUANT_ALLREDUCE", "ZCCL_NCCL_QUANT_MIN_BYTES"}) {
    unsetenv(name);
  }
}

// In a child: loads the real NCCL as the drop-in would, says what happened, exits 0 if it
// loaded.
void loadAndReport(const char* library) {
  if (library != nullptr) setenv("ZCCL_NCCL_LIB", library, 1);
  std::string error;
  const NcclFunctions* real = loadNcclFunctions(NcclUser::kDropIn, &error);
  int version = 0;
  if (real != nullptr) real->getVersion(&version);
  std::fprintf(stderr, "%s\n",
               real != nullptr ? ("loaded " + std::to_string(version)).c_str() : error.c_str());
  std::exit(real != nullptr ? 0 : 1);
}

TEST(NcclFunctions, NeverTakesTheDropInForNccl) {
  EXPECT_EXIT(loadAndReport(ZCCL_NCCL_DROP_IN), ::testing::ExitedWithCode(1),
              "is zccl's NCCL drop-in itself, not NCCL");
  EXPECT_EXIT(loadAndReport(ZCCL_NCCL_DROP_IN_AS_LIBNCCL), ::testing::ExitedWithCode(1),
              "is zccl's NCCL drop-in itself, not NCCL");
}

TEST(NcclFunctions, ALibraryThatDoesNotLoadIsNamed) {
  EXPECT_EXIT(loadAndReport("/nonexistent/libnccl.so.2"), ::testing::ExitedWithCode(1),
              "ZCCL_NCCL_LIB=/nonexistent/libnccl.so.2: .*cannot open");
}

TEST(NcclFunctions, LoadsTheToolkitsNccl) {
#ifdef ZCCL_REAL_NCCL
  EXPECT_EXIT(loadAndReport(ZCCL_REAL_NCCL), ::testing::ExitedWithCode(0), "loaded 2[0-9]+");
#else
  GTEST_SKIP() << "no NCCL library was found at configure time";
#endif
}

}  // namespace
}  // namespace zccl::nccl
