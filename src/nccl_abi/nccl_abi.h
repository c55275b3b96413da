// NCCL's binary interface as the drop-in library sees it: the values of its enums and the
// layout of its structs, written from NCCL's documented API (nccl.h of NCCL 2.28). Kept in a
// namespace so that nccl_abi_check.cc can compare every value with the toolkit's own nccl.h.
// The exported functions use these types; their names are NCCL's (entry_points.cc).
#pragma once

#include <climits>
#include <cstddef>

struct ncclComm;           // the drop-in's communicator (nccl_comm.h); NCCL's opaque handle
struct CUstream_st;        // cudaStream_t
struct ncclWindow_vidmem;  // ncclWindow_t, never created here

namespace zccl::nccl {

using ncclComm_t = ::ncclComm*;
using cudaStream_t = ::CUstream_st*;
using ncclWindow_t = ::ncclWindow_vidmem*;

constexpr int kUniqueIdBytes = 128;
struct ncclUniqueId {
  char internal[kUniqueIdBytes];
};

enum ncclResult_t : int {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
};

// Built-in operations; ncclRedOpCreatePreMulSum hands out values from ncclNumOps upward.
enum ncclRedOp_t : int {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = INT_MAX
};

enum ncclDataType_t : int {
  ncclInt8 = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclFloat64 = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
};

enum ncclScalarResidence_t : int { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 };

constexpr int kSplitNoColor = -1;
constexpr unsigned kConfigMagic = 0xcafebeefu;
constexpr unsigned kSimInfoMagic = 0x74685283u;
constexpr int kConfigUndefInt = INT_MIN;

// Every NCCL version's ncclConfig_t starts with size, magic and version, and then adds fields
// at the end; a reader takes the fields that `size` covers (nccl_config.h).
struct ncclConfigHeader {
  size_t size;
  unsigned int magic;
  unsigned int version;
};

// ncclConfig_t of NCCL 2.28 (ncclConfig_v22800), the newest layout this library knows.
struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
};
using ncclConfig_t = ncclConfig_v22800;

struct ncclSimInfo_t {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
};

// NCCL_VERSION(X, Y, Z) of nccl.h: the encoding changed at 2.9.
constexpr int ncclVersionCode(int major, int minor, int patch) {
  return (major <= 2 && minor <= 8) ? major * 1000 + minor * 100 + patch
                                    : major * 10000 + minor * 100 + patch;
}
// The NCCL version whose API this library implements (what ncclGetVersion reports).
constexpr int kImplementedVersion = ncclVersionCode(2, 28, 9);

}  // namespace zccl::nccl
