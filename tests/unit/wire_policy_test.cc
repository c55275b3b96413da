// A communicator's wire policy (zcclWirePolicy): which format a call that names none takes,
// by collective and buffer size, and where the planner keeps it exact (integer types,
// reductions other than sum and avg).
#include <gtest/gtest.h>

#include "collectives/planner.h"
#include "core/config.h"

namespace zccl {
namespace {

CommConfig zeroPlusPlusPolicy() {
  CommConfig config;
  config.wirePolicy = {zcclWireInt8, zcclWireInt4, zcclWireAllowInt4, 1024};
  return config;
}

WireFormat planned(const CommConfig& config, Collective collective, DataType type, RedOp op,
                   size_t bytes) {
  CollectiveOptions options;
  EXPECT_EQ(resolveCollOptions(nullptr, config, collective, bytes, &options), Status::kSuccess);
  return planCollective(collective, type, op, bytes, options, nullptr, nullptr).wire;
}

TEST(WirePolicy, EachCollectiveTakesItsOwnFormat) {
  const CommConfig config = zeroPlusPlusPolicy();
  CollectiveOptions options;
  ASSERT_EQ(resolveCollOptions(nullptr, config, Collective::kAllGather, 4096, &options),
            Status::kSuccess);
  EXPECT_EQ(options.wire, WireFormat::kInt8);
  EXPECT_FALSE(options.wireAllowedOnly);
  ASSERT_EQ(resolveCollOptions(nullptr, config, Collective::kReduceScatter, 4096, &options),
            Status::kSuccess);
  EXPECT_EQ(options.wire, WireFormat::kInt4);
  for (Collective allReduceLike : {Collective::kAllReduce, Collective::kReduce}) {
    ASSERT_EQ(resolveCollOptions(nullptr, config, allReduceLike, 4096, &options), Status::kSuccess);
    EXPECT_EQ(options.wire, WireFormat::kInt4);
    EXPECT_TRUE(options.wireAllowedOnly);  // the planner decides
  }
  ASSERT_EQ(resolveCollOptions(nullptr, config, Collective::kBroadcast, 4096, &options),
            Status::kSuccess);
  EXPECT_EQ(options.wire, WireFormat::kNone);
}

TEST(WirePolicy, SmallerCallsThanMinBytesStayExact) {
  const CommConfig config = zeroPlusPlusPolicy();
  EXPECT_EQ(planned(config, Collective::kAllGather, DataType::kBfloat16, RedOp::kSum, 1023),
            WireFormat::kNone);
  EXPECT_EQ(planned(config, Collective::kAllGather, DataType::kBfloat16, RedOp::kSum, 1024),
            WireFormat::kInt8);
}

TEST(WirePolicy, ThePlannerKeepsWhatCannotBeQuantizedExact) {
  const CommConfig config = zeroPlusPlusPolicy();
  EXPECT_EQ(planned(config, Collective::kReduceScatter, DataType::kFloat32, RedOp::kSum, 4096),
            WireFormat::kInt4);
  EXPECT_EQ(planned(config, Collective::kReduceScatter, DataType::kFloat32, RedOp::kAvg, 4096),
            WireFormat::kInt4);
  for (RedOp op : {RedOp::kMax, RedOp::kMin, RedOp::kProd}) {
    EXPECT_EQ(planned(config, Collective::kReduceScatter, DataType::kFloat32, op, 4096),
              WireFormat::kNone);
  }
  EXPECT_EQ(planned(config, Collective::kReduceScatter, DataType::kInt32, RedOp::kSum, 4096),
            WireFormat::kNone);
}

TEST(WirePolicy, ACallsOwnFormatWinsOverThePolicy) {
  const CommConfig config = zeroPlusPlusPolicy();
  zcclCollOptions asked = ZCCL_COLL_OPTIONS_INITIALIZER;
  asked.wireFormat = zcclWireNone;
  CollectiveOptions options;
  ASSERT_EQ(resolveCollOptions(&asked, config, Collective::kAllGather, 4096, &options),
            Status::kSuccess);
  EXPECT_EQ(options.wire, WireFormat::kNone);
}

TEST(WirePolicy, NamesRoundTripAndAnUnknownNameIsRefusedNamingIt) {
  for (int format = 0; format < zcclNumWireFormats; ++format) {
    const char* name = zcclWireFormatName(static_cast<zcclWireFormat_t>(format));
    ASSERT_NE(name, nullptr);
    zcclWireFormat_t back = zcclWireNone;
    ASSERT_EQ(zcclWireFormatFromName(name, &back), zcclSuccess);
    EXPECT_EQ(back, format);
  }
  EXPECT_EQ(zcclWireFormatName(static_cast<zcclWireFormat_t>(zcclNumWireFormats)), nullptr);
  zcclWireFormat_t format = zcclWireNone;
  EXPECT_EQ(zcclWireFormatFromName("int5", &format), zcclInvalidArgument);
  EXPECT_STREQ(zcclGetLastError(nullptr),
               "invalid argument: name=\"int5\": not a wire format "
               "(none|int8|int4|allow-int8|allow-int4|int2)");
}

TEST(WirePolicy, AFieldOutOfRangeIsNamed) {
  zcclWirePolicy policy = ZCCL_WIRE_POLICY_INITIALIZER;
  policy.reduceScatter = 9;
  EXPECT_EQ(checkWirePolicy(policy), Status::kInvalidArgument);
  EXPECT_NE(lastThreadError().find("policy.reduceScatter=9"), std::string::npos)
      << lastThreadError();
}

}  // namespace
}  // namespace zccl
