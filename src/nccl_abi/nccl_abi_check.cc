// Built where the CUDA toolkit's nccl.h is found: every value and layout of nccl_abi.h
// against NCCL's own header, so that a program built with nccl.h and run on this library
// means the same thing by each number. Nothing here is linked into the library.
// nccl.h's own includes, first, so that they stay out of the namespace below.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <limits.h>

#include <cstddef>

namespace real {
#include <nccl.h>
constexpr ncclConfig_t kInitialConfig = NCCL_CONFIG_INITIALIZER;
}  // namespace real

#include "nccl_abi/nccl_abi.h"

namespace ours = zccl::nccl;

#define SAME_VALUE(name) \
  static_assert(static_cast<int>(real::name) == static_cast<int>(ours::name), #name)
#define SAME_FIELD(type, field) \
  static_assert(offsetof(real::type, field) == offsetof(ours::type, field), #type "." #field)

SAME_VALUE(ncclSuccess);
SAME_VALUE(ncclUnhandledCudaError);
SAME_VALUE(ncclSystemError);
SAME_VALUE(ncclInternalError);
SAME_VALUE(ncclInvalidArgument);
SAME_VALUE(ncclInvalidUsage);
SAME_VALUE(ncclRemoteError);
SAME_VALUE(ncclInProgress);
SAME_VALUE(ncclNumResults);
SAME_VALUE(ncclSum);
SAME_VALUE(ncclProd);
SAME_VALUE(ncclMax);
SAME_VALUE(ncclMin);
SAME_VALUE(ncclAvg);
SAME_VALUE(ncclNumOps);
SAME_VALUE(ncclInt8);
SAME_VALUE(ncclUint8);
SAME_VALUE(ncclInt32);
SAME_VALUE(ncclUint32);
SAME_VALUE(ncclInt64);
SAME_VALUE(ncclUint64);
SAME_VALUE(ncclFloat16);
SAME_VALUE(ncclFloat32);
SAME_VALUE(ncclFloat64);
SAME_VALUE(ncclBfloat16);
SAME_VALUE(ncclFloat8e4m3);
SAME_VALUE(ncclFloat8e5m2);
SAME_VALUE(ncclNumTypes);
SAME_VALUE(ncclScalarDevice);
SAME_VALUE(ncclScalarHostImmediate);
static_assert(NCCL_SPLIT_NOCOLOR == ours::kSplitNoColor, "NCCL_SPLIT_NOCOLOR");
static_assert(NCCL_CONFIG_UNDEF_INT == ours::kConfigUndefInt, "NCCL_CONFIG_UNDEF_INT");
static_assert(NCCL_UNIQUE_ID_BYTES == ours::kUniqueIdBytes, "NCCL_UNIQUE_ID_BYTES");
static_assert(sizeof(real::ncclUniqueId) == sizeof(ours::ncclUniqueId), "ncclUniqueId");
static_assert(sizeof(real::ncclResult_t) == sizeof(ours::ncclResult_t), "enum width");
static_assert(sizeof(real::ncclDataType_t) == sizeof(ours::ncclDataType_t), "enum width");
static_assert(sizeof(real::ncclRedOp_t) == sizeof(ours::ncclRedOp_t), "enum width");
static_assert(NCCL_VERSION(2, 28, 9) == ours::ncclVersionCode(2, 28, 9), "NCCL_VERSION");
static_assert(NCCL_VERSION(2, 8, 4) == ours::ncclVersionCode(2, 8, 4), "NCCL_VERSION < 2.9");

// The toolkit's config struct is the newest layout we know, or an older one (prefix).
static_assert(real::kInitialConfig.magic == ours::kConfigMagic, "config magic");
static_assert(real::kInitialConfig.blocking == ours::kConfigUndefInt, "config undefined");
static_assert(sizeof(real::ncclConfig_t) <= sizeof(ours::ncclConfig_v22800), "newer config");
SAME_FIELD(ncclConfig_t, size);
SAME_FIELD(ncclConfig_t, magic);
SAME_FIELD(ncclConfig_t, version);
SAME_FIELD(ncclConfig_t, blocking);
SAME_FIELD(ncclConfig_t, netName);
SAME_FIELD(ncclConfig_t, commName);
SAME_FIELD(ncclSimInfo_t, estimatedTime);
static_assert(sizeof(real::ncclSimInfo_t) == sizeof(ours::ncclSimInfo_t), "ncclSimInfo_t");
