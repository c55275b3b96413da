// Reading the launcher's environment (launch_environment.h).
#include "bootstrap/launch_environment.h"

#include <optional>

#include "common/env.h"

namespace zccl {

Status readLaunchEnvironment(LaunchEnvironment* launch) {
  const bool zcclrun = envString("ZCCL_RANK").has_value();
  const char* rankName = zcclrun ? "ZCCL_RANK" : "RANK";
  const char* sizeName = zcclrun ? "ZCCL_WORLD_SIZE" : "WORLD_SIZE";
  std::optional<long> rank, size;
  ZCCL_CHECK(envInt(rankName, 0, 1 << 24, &rank));
  ZCCL_CHECK(envInt(sizeName, 1, 1 << 24, &size));
  if (!rank || !size) {
    return fail(Status::kInvalidUsage,
                "zcclCommInitFromEnv: set ZCCL_RANK, ZCCL_WORLD_SIZE and ZCCL_ROOT_ADDR (zcclrun "
                "does), or RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (torchrun does)");
  }
  if (*rank >= *size) {
    return fail(Status::kInvalidArgument, "%s=%ld: outside [0, %s=%ld)", rankName, *rank, sizeName,
                *size);
  }
  launch->rank = static_cast<int>(*rank);
  launch->size = static_cast<int>(*size);
  if (zcclrun) {
    const auto root = envString("ZCCL_ROOT_ADDR");
    if (!root) return fail(Status::kInvalidUsage, "ZCCL_RANK is set but ZCCL_ROOT_ADDR is not");
    launch->root = *root;
    launch->job = envString("ZCCL_JOB_ID").value_or(*root);
    return Status::kSuccess;
  }
  const auto address = envString("MASTER_ADDR");
  std::optional<long> port;
  ZCCL_CHECK(envInt("MASTER_PORT", 1, 65534, &port));
  if (!address || !port) {
    return fail(Status::kInvalidUsage,
                "RANK and WORLD_SIZE are set but not MASTER_ADDR and "
                "MASTER_PORT");
  }
  const bool ipv6 = address->find(':') != std::string::npos;
  launch->root = (ipv6 ? "[" + *address + "]" : *address) + ":" + std::to_string(*port + 1);
  launch->job = envString("TORCHELASTIC_RUN_ID").value_or("torchrun " + launch->root) + " " +
                std::to_string(launch->size);
  return Status::kSuccess;
}

}  // namespace zccl
