// CUDA kernels for quantization. Quantize: one warp per group, eight groups per thread block;
// the warp reduces the group's statistics with shuffles, every lane chooses the same scale
// with the CPU's code (group_math.h), then the lanes encode the group's elements in
// coalesced strides, a byte of codes per lane. Dequantize: a grid-stride loop over the
// payload's bytes (one INT8 code, two INT4 or four INT2; a group never splits a byte). Smoothing: a
// block per group rotates it in shared memory, a butterfly stage at a time, with the CPU's
// additions (group_math.h), into float32 scratch that the quantize kernel then reads (decoding: the
// other way round). Compiled with
// --fmad=false so that nothing is contracted into FMA and the results match the CPU bit for
// bit.
#include <cuda_runtime.h>

#include <climits>

#include "common/cuda_status.h"
#include "common/half.h"
#include "quant/group_math.h"
#include "quant/quantize_cuda.h"

namespace zccl {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpSize = 32;
constexpr int kGroupsPerBlock = kThreads / kWarpSize;

// The CPU's own conversions (common/half.h), so that NaN payloads match too.
__device__ float loadFloat(const float* p, size_t i) { return p[i]; }
__device__ float loadFloat(const float16_t* p, size_t i) { return toFloat(p[i]); }
__device__ float loadFloat(const bfloat16_t* p, size_t i) { return toFloat(p[i]); }

__device__ void storeFloat(float* p, size_t i, float v) { p[i] = v; }
__device__ void storeFloat(float16_t* p, size_t i, float v) { p[i] = toFloat16(v); }
__device__ void storeFloat(bfloat16_t* p, size_t i, float v) { p[i] = toBfloat16(v); }

// Parameters arrays are 4-byte aligned within the message, but the message itself may not be.
__device__ void storeParameter(unsigned char* base, size_t i, float v) {
  memcpy(base + 4 * i, &v, sizeof(v));
}
__device__ float loadParameter(const unsigned char* base, size_t i) {
  float v;
  memcpy(&v, base + 4 * i, sizeof(v));
  return v;
}

struct QuantizeArgs {
  QuantHeader header;
  QuantLayout layout;
  uint64_t seed;  // params.seed, folded per group by groupSeed()
  bool stochastic;
};

// Reduces the warp's partial statistics; the result is valid in every lane.
__device__ GroupStats warpStats(GroupStats mine) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    mine.absmax = fmaxf(mine.absmax, __shfl_xor_sync(0xffffffffu, mine.absmax, offset));
    mine.min = fminf(mine.min, __shfl_xor_sync(0xffffffffu, mine.min, offset));
    mine.max = fmaxf(mine.max, __shfl_xor_sync(0xffffffffu, mine.max, offset));
    mine.nonFinite |= __shfl_xor_sync(0xffffffffu, static_cast<int>(mine.nonFinite), offset);
  }
  return mine;
}

template <typename T>
__global__ void quantizeKernel(const T* in, QuantizeArgs args, unsigned char* out) {
  const QuantHeader& h = args.header;
  const int bits = h.bits;
  const QuantScheme scheme = static_cast<QuantScheme>(h.scheme);
  unsigned char* payload = out + sizeof(QuantHeader);
  unsigned char* scales = out + args.layout.parametersOffset;
  unsigned char* offsets = scales + 4 * args.layout.groups;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    memcpy(out, &h, sizeof(h));
    for (size_t b = sizeof(QuantHeader) + args.layout.payloadBytes;
         b < args.layout.parametersOffset; ++b) {
      out[b] = 0;
    }
  }
  const uint64_t group =
      static_cast<uint64_t>(blockIdx.x) * kGroupsPerBlock + threadIdx.x / kWarpSize;
  if (group >= args.layout.groups) return;  // a whole warp: its shuffles stay complete
  const uint32_t lane = threadIdx.x % kWarpSize;
  const uint64_t first = group * h.groupSize;
  const uint32_t n =
      static_cast<uint32_t>(h.count - first < h.groupSize ? h.count - first : h.groupSize);

  GroupStats mine{0.0f, INFINITY, -INFINITY, false};
  for (uint32_t i = lane; i < n; i += kWarpSize) {
    const float v = loadFloat(in, first + i);
    mine.nonFinite |= !isFiniteBits(v);
    mine.absmax = fmaxf(mine.absmax, fabsf(v));
    mine.min = fminf(mine.min, v);
    mine.max = fmaxf(mine.max, v);
  }
  const GroupStats stats = warpStats(mine);
  GroupScale gs = nonFiniteScale();
  if (!stats.nonFinite) gs = chooseScale(stats, bits, scheme);
  if (lane == 0) {
    storeParameter(scales, group, gs.scale);
    if (scheme == QuantScheme::kAsymmetric) storeParameter(offsets, group, gs.offset);
  }

  const int lo = codeLow(bits, scheme), hi = codeHigh(bits, scheme);
  const float center = centerOf(bits, scheme);
  const uint32_t seed = groupSeed(args.seed, first);
  auto code = [&](uint32_t i) -> uint8_t {
    if (stats.nonFinite) return 0;
    const float x = loadFloat(in, first + i) * gs.prescale;
    const uint32_t index = static_cast<uint32_t>(first) + i;
    return args.stochastic
               ? codeStochastic(x, gs.prescaledOffset, gs.inv, center, lo, hi, seed, index)
               : codeNearest(x, gs.prescaledOffset, gs.inv, center, lo, hi);
  };
  // codesPerByte(bits) codes a byte, the first in the lowest bits; groups start on a byte.
  const uint32_t perByte = codesPerByte(bits);
  for (uint32_t j = lane; perByte * j < n; j += kWarpSize) {
    uint8_t byte = 0;
    for (uint32_t slot = 0; slot < perByte && perByte * j + slot < n; ++slot)
      byte |= packedCode(code(perByte * j + slot), slot, bits);
    payload[first / perByte + j] = byte;
  }
}

// True in every thread of the block when the message's header is not `expected` byte for
// byte; then *mismatch is set.
__device__ bool headerDiffers(const unsigned char* message, const QuantHeader& expected,
                              int* mismatch) {
  __shared__ int differs;
  if (threadIdx.x == 0) {
    const auto* want = reinterpret_cast<const unsigned char*>(&expected);
    differs = 0;
    for (size_t b = 0; b < sizeof(QuantHeader); ++b) differs |= message[b] != want[b];
    if (differs) *mismatch = 1;
  }
  __syncthreads();
  return differs != 0;
}

// `mismatch` non-null: the header was not read on the host; each block checks it first.
template <typename T, bool Accumulate>
__global__ void dequantizeKernel(const unsigned char* message, QuantHeader h, QuantLayout layout,
                                 T* out, int* mismatch) {
  if (mismatch != nullptr && headerDiffers(message, h, mismatch)) return;
  const QuantScheme scheme = static_cast<QuantScheme>(h.scheme);
  const unsigned char* payload = message + sizeof(QuantHeader);
  const unsigned char* scales = message + layout.parametersOffset;
  const unsigned char* offsets = scales + 4 * layout.groups;
  const float center = centerOf(h.bits, scheme);
  const bool isSigned = scheme == QuantScheme::kSymmetric;
  const uint32_t perByte = codesPerByte(h.bits);
  const uint64_t bytes = (h.count + perByte - 1) / perByte;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t p = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < bytes;
       p += stride) {
    const uint64_t group = perByte * p / h.groupSize;  // a group never splits a byte
    const float scale = loadParameter(scales, group);
    const float offset = isSigned ? 0.0f : loadParameter(offsets, group);
    const uint8_t packed = payload[p];
    for (uint32_t slot = 0; slot < perByte && perByte * p + slot < h.count; ++slot) {
      const uint8_t c = unpackCode(packed, slot, h.bits, isSigned);
      const float v = isSigned ? decodeSignedCode(static_cast<int8_t>(c), scale)
                               : decodeUnsignedCode(c, scale, offset, center);
      const uint64_t e = perByte * p + slot;
      if constexpr (Accumulate) {
        out[e] += v;
      } else {
        storeFloat(out, e, v);
      }
    }
  }
}

// One butterfly stage after another over a group of n values in shared memory: the pairs of
// each stage are independent, and each is the CPU's a + b, a - b (walshHadamard()).
__device__ void walshHadamardShared(float* v, uint32_t n) {
  for (uint32_t half = 1; half < n; half *= 2) {
    __syncthreads();
    for (uint32_t p = threadIdx.x; p < n / 2; p += blockDim.x) {
      const uint32_t i = (p / half) * 2 * half + p % half;
      const float a = v[i];
      const float b = v[i + half];
      v[i] = a + b;
      v[i + half] = a - b;
    }
  }
  __syncthreads();
}

// y = H D x / n for every full group of `in` into float32 `out` (smoothGroup()); a short last
// group is widened only. A block per group, the group in dynamic shared memory.
template <typename T>
__global__ void smoothKernel(const T* in, uint64_t count, uint32_t groupSize, uint32_t seed,
                             float* out) {
  extern __shared__ float group[];
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * groupSize;
  const uint32_t n = static_cast<uint32_t>(count - first < groupSize ? count - first : groupSize);
  if (n < groupSize) {
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
      out[first + i] = loadFloat(in, first + i);
    return;
  }
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = loadFloat(in, first + i);
    group[i] = smoothingFlips(seed, first, i) ? -v : v;
  }
  walshHadamardShared(group, n);
  const float inverse = 1.0f / static_cast<float>(n);
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) out[first + i] = group[i] * inverse;
}

// x = D H y for every full group of the decoded float32 `in` (unsmoothGroup()), stored to
// `out` or added to float32 `out`. With `mismatch`, a message whose header is not `h` leaves
// `out` untouched (its decode wrote nothing).
template <typename T, bool Accumulate>
__global__ void unsmoothKernel(const float* in, const unsigned char* message, QuantHeader h,
                               int* mismatch, T* out) {
  extern __shared__ float group[];
  if (mismatch != nullptr && headerDiffers(message, h, mismatch)) return;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * h.groupSize;
  const uint32_t n =
      static_cast<uint32_t>(h.count - first < h.groupSize ? h.count - first : h.groupSize);
  const bool full = n == h.groupSize;
  if (full) {
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) group[i] = in[first + i];
    walshHadamardShared(group, n);
  }
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    float v = full ? group[i] : in[first + i];
    if (full && smoothingFlips(h.smoothingSeed, first, i)) v = -v;
    if constexpr (Accumulate) {
      out[first + i] += v;
    } else {
      storeFloat(out, first + i, v);
    }
  }
}

Status checkGroupCount(size_t groups) {
  if (groups > static_cast<size_t>(INT_MAX)) {
    return fail(Status::kInvalidArgument, "groups=%zu: more than a CUDA grid holds", groups);
  }
  return Status::kSuccess;
}

// Copies the header to the host and validates it against the message length.
Status readDeviceHeader(const void* message, size_t bytes, size_t count, DeviceStream stream,
                        QuantHeader* h) {
  if (message == nullptr) return fail(Status::kInvalidArgument, "message=NULL");
  unsigned char host[sizeof(QuantHeader)] = {};
  const size_t copied = bytes < sizeof(host) ? bytes : sizeof(host);
  ZCCL_CUDA_CHECK(cudaMemcpyAsync(host, message, copied, cudaMemcpyDeviceToHost, stream));
  ZCCL_CUDA_CHECK(cudaStreamSynchronize(stream));
  ZCCL_CHECK(readQuantHeader(host, bytes, h));
  if (h->count != count) {
    return fail(Status::kInvalidArgument, "count=%zu but the message holds %llu elements", count,
                static_cast<unsigned long long>(h->count));
  }
  return checkGroupCount(
      quantLayoutOf(h->count, h->bits, static_cast<QuantScheme>(h->scheme), h->groupSize).groups);
}

template <typename T, bool Accumulate>
Status launchDequantize(const void* message, const QuantHeader& h, void* out, int* mismatch,
                        DeviceStream stream) {
  const QuantLayout layout =
      quantLayoutOf(h.count, h.bits, static_cast<QuantScheme>(h.scheme), h.groupSize);
  if (layout.groups == 0) return Status::kSuccess;
  // Enough blocks to fill any GPU; the grid-stride loop covers the rest.
  const uint64_t blocks = (layout.payloadBytes + kThreads - 1) / kThreads;
  constexpr uint64_t kMaxBlocks = uint64_t{1} << 16;
  dequantizeKernel<T, Accumulate>
      <<<static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks), kThreads, 0, stream>>>(
          static_cast<const unsigned char*>(message), h, layout, static_cast<T*>(out), mismatch);
  ZCCL_CUDA_CHECK(cudaGetLastError());
  return Status::kSuccess;
}

QuantHeader headerOf(const QuantParams& params, size_t count) {
  return QuantHeader{kQuantMagic,
                     kQuantVersion,
                     static_cast<uint8_t>(params.bits),
                     static_cast<uint8_t>(params.scheme),
                     params.smoothing ? kQuantSmoothed : uint8_t{0},
                     params.groupSize,
                     params.smoothing ? static_cast<uint32_t>(params.seed) : 0,
                     count};
}

// Float32 scratch on the stream, freed on it after the kernels that use it.
class StreamScratch {
 public:
  StreamScratch(size_t count, DeviceStream stream) : stream_(stream) {
    if (count > 0) status_ = cudaMallocAsync(&data_, count * sizeof(float), stream);
  }
  ~StreamScratch() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  Status status() const {
    ZCCL_CUDA_CHECK(status_);
    return Status::kSuccess;
  }
  float* get() const { return static_cast<float*>(data_); }

 private:
  DeviceStream stream_;
  void* data_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

size_t sharedGroupBytes(uint32_t groupSize) { return groupSize * sizeof(float); }

template <typename T>
void launchSmooth(const void* in, size_t count, const QuantLayout& layout, uint32_t groupSize,
                  uint32_t seed, float* out, DeviceStream stream) {
  smoothKernel<T>
      <<<static_cast<unsigned>(layout.groups), kThreads, sharedGroupBytes(groupSize), stream>>>(
          static_cast<const T*>(in), count, groupSize, seed, out);
}

// Decodes a smoothed message into scratch, then rotates it back into `out`.
template <typename T, bool Accumulate>
Status launchDequantizeSmoothed(const void* message, const QuantHeader& h, void* out, int* mismatch,
                                DeviceStream stream) {
  const QuantLayout layout =
      quantLayoutOf(h.count, h.bits, static_cast<QuantScheme>(h.scheme), h.groupSize);
  if (layout.groups == 0) return Status::kSuccess;
  StreamScratch decoded(h.count, stream);
  ZCCL_CHECK(decoded.status());
  ZCCL_CHECK((launchDequantize<float, false>(message, h, decoded.get(), mismatch, stream)));
  unsmoothKernel<T, Accumulate>
      <<<static_cast<unsigned>(layout.groups), kThreads, sharedGroupBytes(h.groupSize), stream>>>(
          decoded.get(), static_cast<const unsigned char*>(message), h, mismatch,
          static_cast<T*>(out));
  ZCCL_CUDA_CHECK(cudaGetLastError());
  return Status::kSuccess;
}

Status launchDequantizeAs(DataType type, const void* message, const QuantHeader& h, void* out,
                          int* mismatch, DeviceStream stream) {
  if ((h.flags & kQuantSmoothed) != 0) {
    if (type == DataType::kFloat32) {
      return launchDequantizeSmoothed<float, false>(message, h, out, mismatch, stream);
    }
    if (type == DataType::kFloat16) {
      return launchDequantizeSmoothed<float16_t, false>(message, h, out, mismatch, stream);
    }
    return launchDequantizeSmoothed<bfloat16_t, false>(message, h, out, mismatch, stream);
  }
  if (type == DataType::kFloat32) {
    return launchDequantize<float, false>(message, h, out, mismatch, stream);
  }
  if (type == DataType::kFloat16) {
    return launchDequantize<float16_t, false>(message, h, out, mismatch, stream);
  }
  return launchDequantize<bfloat16_t, false>(message, h, out, mismatch, stream);
}

}  // namespace

bool quantCudaAvailable() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

Status quantizeCuda(const void* in, DataType type, size_t count, const QuantParams& params,
                    void* out, size_t capacity, DeviceStream stream) {
  ZCCL_CHECK(checkQuantParams(params));
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  if (in == nullptr && count > 0)
    return fail(Status::kInvalidArgument, "in=NULL with count=%zu", count);
  QuantizeArgs args;
  args.layout = quantLayoutOf(count, params.bits, params.scheme, params.groupSize);
  if (out == nullptr || capacity < args.layout.totalBytes) {
    return fail(Status::kInvalidArgument, "capacity=%zu: the message needs %zu bytes", capacity,
                args.layout.totalBytes);
  }
  ZCCL_CHECK(checkGroupCount(args.layout.groups));
  args.header = headerOf(params, count);
  args.seed = params.seed;
  args.stochastic = params.rounding == Rounding::kStochastic;
  // A warp per group; one block at least, which writes the header of an empty message.
  const unsigned blocks =
      static_cast<unsigned>((args.layout.groups + kGroupsPerBlock - 1) / kGroupsPerBlock) +
      (args.layout.groups == 0 ? 1 : 0);
  auto* message = static_cast<unsigned char*>(out);
  if (params.smoothing) {
    // The rotated groups, then the float32 kernel over them.
    StreamScratch rotated(count, stream);
    ZCCL_CHECK(rotated.status());
    const uint32_t seed = args.header.smoothingSeed;
    if (args.layout.groups > 0) {
      if (type == DataType::kFloat32) {
        launchSmooth<float>(in, count, args.layout, params.groupSize, seed, rotated.get(), stream);
      } else if (type == DataType::kFloat16) {
        launchSmooth<float16_t>(in, count, args.layout, params.groupSize, seed, rotated.get(),
                                stream);
      } else {
        launchSmooth<bfloat16_t>(in, count, args.layout, params.groupSize, seed, rotated.get(),
                                 stream);
      }
    }
    quantizeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(rotated.get()), args,
                                                    message);
    ZCCL_CUDA_CHECK(cudaGetLastError());
    return Status::kSuccess;
  }
  if (type == DataType::kFloat32) {
    quantizeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(in), args, message);
  } else if (type == DataType::kFloat16) {
    quantizeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const float16_t*>(in), args,
                                                    message);
  } else {
    quantizeKernel<<<blocks, kThreads, 0, stream>>>(static_cast<const bfloat16_t*>(in), args,
                                                    message);
  }
  ZCCL_CUDA_CHECK(cudaGetLastError());
  return Status::kSuccess;
}

Status preloadQuantizeKernelsCuda() {
  return preloadCudaKernels(quantizeKernel<float>, quantizeKernel<float16_t>,
                            quantizeKernel<bfloat16_t>, dequantizeKernel<float, false>,
                            dequantizeKernel<float16_t, false>, dequantizeKernel<bfloat16_t, false>,
                            dequantizeKernel<float, true>, smoothKernel<float>,
                            smoothKernel<float16_t>, smoothKernel<bfloat16_t>,
                            unsmoothKernel<float, false>, unsmoothKernel<float16_t, false>,
                            unsmoothKernel<bfloat16_t, false>, unsmoothKernel<float, true>);
}

Status dequantizeCuda(const void* message, size_t bytes, void* out, DataType type, size_t count,
                      DeviceStream stream) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  if (out == nullptr && count > 0)
    return fail(Status::kInvalidArgument, "out=NULL with count=%zu", count);
  QuantHeader h;
  ZCCL_CHECK(readDeviceHeader(message, bytes, count, stream, &h));
  return launchDequantizeAs(type, message, h, out, nullptr, stream);
}

Status dequantizeAccumulateCuda(const void* message, size_t bytes, float* accumulator, size_t count,
                                DeviceStream stream) {
  if (accumulator == nullptr && count > 0) {
    return fail(Status::kInvalidArgument, "accumulator=NULL with count=%zu", count);
  }
  QuantHeader h;
  ZCCL_CHECK(readDeviceHeader(message, bytes, count, stream, &h));
  if ((h.flags & kQuantSmoothed) != 0) {
    return launchDequantizeSmoothed<float, true>(message, h, accumulator, nullptr, stream);
  }
  return launchDequantize<float, true>(message, h, accumulator, nullptr, stream);
}

Status dequantizeKnownCuda(const void* message, size_t bytes, const QuantParams& format,
                           size_t count, void* out, DataType type, bool accumulate, int* mismatch,
                           DeviceStream stream) {
  ZCCL_CHECK(checkQuantParams(format));
  if (!accumulate) ZCCL_CHECK(checkQuantizableType(type, "type"));
  if (out == nullptr && count > 0)
    return fail(Status::kInvalidArgument, "out=NULL with count=%zu", count);
  if (message == nullptr) return fail(Status::kInvalidArgument, "message=NULL");
  const QuantHeader h = headerOf(format, count);
  const QuantLayout layout = quantLayoutOf(count, format.bits, format.scheme, format.groupSize);
  if (bytes < layout.totalBytes) {
    return fail(Status::kInvalidArgument, "bytes=%zu: a message of %zu elements needs %zu", bytes,
                count, layout.totalBytes);
  }
  ZCCL_CHECK(checkGroupCount(layout.groups));
  if (accumulate && format.smoothing) {
    return launchDequantizeSmoothed<float, true>(message, h, out, mismatch, stream);
  }
  if (accumulate) return launchDequantize<float, true>(message, h, out, mismatch, stream);
  return launchDequantizeAs(type, message, h, out, mismatch, stream);
}

}  // namespace zccl
