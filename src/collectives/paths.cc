// The names of the paths' vocabulary (paths.h), and where lossy formats apply.
#include "collectives/paths.h"

namespace zccl {

const char* collectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kReduceScatter:
      return "reduce-scatter";
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kReduce:
      return "reduce";
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
  }
  return "unknown";
}

const char* algorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kAuto:
      return "auto";
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kDirect:
      return "direct";
    case Algorithm::kNative:
      return "native";
    case Algorithm::kPairwise:
      return "pairwise";
    case Algorithm::kPipelined:
      return "pipelined";
    case Algorithm::kTwoLevel:
      return "two-level";
  }
  return "unknown";
}

const char* wireFormatName(WireFormat wire) {
  switch (wire) {
    case WireFormat::kNone:
    case WireFormat::kInt8:
    case WireFormat::kInt4:
    case WireFormat::kInt2:
      return kWireFormatNames[static_cast<int>(wire)];
  }
  return "unknown";
}

bool wireApplies(Collective collective, DataType type, RedOp op) {
  const bool floating =
      type == DataType::kFloat32 || type == DataType::kFloat16 || type == DataType::kBfloat16;
  switch (collective) {
    case Collective::kAllGather:
      return floating;
    case Collective::kReduceScatter:
    case Collective::kAllReduce:
    case Collective::kReduce:
      return floating && (op == RedOp::kSum || op == RedOp::kAvg);
    default:
      return false;
  }
}

}  // namespace zccl
