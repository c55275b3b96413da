// The quantization driver: message layout, per-group scale selection and the loops over
// groups; the element work is done by the active QuantKernels.
#include "quant/quantize.h"

#include <cstring>

#include "common/env.h"
#include "common/log.h"
#include "quant/kernels.h"
#include "quant/rotation.h"

namespace zccl {
namespace {

// Largest count whose message size cannot overflow size_t arithmetic below.
constexpr uint64_t kMaxCount = uint64_t{1} << 56;

bool isPowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

const QuantKernels& chooseKernels() {
  // Values other than scalar, avx2 and avx512 (the best) are refused at communicator setup.
  const auto forced = envString("ZCCL_QUANT_ISA");
  const QuantKernels* best = avx512QuantKernels();
  if (best == nullptr || (forced && *forced == "avx2")) best = avx2QuantKernels();
  if (forced && *forced == "scalar") best = nullptr;
  const QuantKernels& chosen = best != nullptr ? *best : scalarQuantKernels();
  ZCCL_LOG(kInfo, "quantization kernels: %s", chosen.name);
  return chosen;
}

// Element i of the message's parameter arrays.
float loadParameter(const unsigned char* base, size_t i) {
  float v;
  std::memcpy(&v, base + 4 * i, sizeof(v));
  return v;
}
void storeParameter(unsigned char* base, size_t i, float v) {
  std::memcpy(base + 4 * i, &v, sizeof(v));
}

// A group's codes one to a byte: INT8's payload itself, else unpacked into `codes`.
const uint8_t* unpackGroup(const QuantKernels& k, int bits, QuantScheme scheme,
                           const uint8_t* packed, size_t n, uint8_t* codes) {
  const bool isSigned = scheme == QuantScheme::kSymmetric;
  if (bits == 8) return packed;
  if (bits == 4) {
    k.unpackNibbles(packed, n, isSigned, codes);
  } else {
    k.unpackCrumbs(packed, n, isSigned, codes);
  }
  return codes;
}

// Walks the groups of a decoded message: decodes each group's float32 values to
// `target(first)` (a staging buffer when it returns nullptr), then hands them to `sink`.
template <typename Target, typename Sink>
Status decodeGroups(const void* message, size_t bytes, size_t count, Target&& target, Sink&& sink) {
  QuantHeader h{};
  ZCCL_CHECK(readQuantHeader(message, bytes, &h));
  if (h.count != count) {
    return fail(Status::kInvalidArgument, "count=%zu but the message holds %llu elements", count,
                static_cast<unsigned long long>(h.count));
  }
  const QuantScheme scheme = static_cast<QuantScheme>(h.scheme);
  const QuantLayout l = quantLayoutOf(h.count, h.bits, scheme, h.groupSize);
  const QuantKernels& k = activeQuantKernels();
  const auto* base = static_cast<const unsigned char*>(message);
  const unsigned char* payload = base + sizeof(QuantHeader);
  const unsigned char* scales = base + l.parametersOffset;
  const unsigned char* offsets = scales + 4 * l.groups;
  alignas(64) float staging[kMaxGroupSize];
  alignas(64) uint8_t codes[kMaxGroupSize];
  for (size_t g = 0; g < l.groups; ++g) {
    const size_t first = g * h.groupSize;
    const size_t n = std::min<size_t>(h.groupSize, count - first);
    float* values = target(first);
    if (values == nullptr) values = staging;
    const uint8_t* groupCodes =
        unpackGroup(k, h.bits, scheme, payload + first * h.bits / 8, n, codes);
    const float scale = loadParameter(scales, g);
    if (scheme == QuantScheme::kSymmetric) {
      k.decodeSigned(reinterpret_cast<const int8_t*>(groupCodes), n, scale, values);
    } else {
      k.decodeUnsigned(groupCodes, n, scale, loadParameter(offsets, g), centerOf(h.bits, scheme),
                       values);
    }
    if ((h.flags & kQuantSmoothed) != 0 && n == h.groupSize) {
      unsmoothGroupHost(values, h.groupSize, h.smoothingSeed, first);
    }
    sink(first, n, values);
  }
  return Status::kSuccess;
}

}  // namespace

const QuantKernels& activeQuantKernels() {
  static const QuantKernels& kernels = chooseKernels();
  return kernels;
}

const char* quantKernelName() { return activeQuantKernels().name; }

Status checkQuantizableType(DataType type, const char* name) {
  if (type != DataType::kFloat32 && type != DataType::kFloat16 && type != DataType::kBfloat16) {
    return fail(Status::kInvalidArgument, "%s=%s: quantization takes float32, float16 or bfloat16",
                name, dataTypeName(type));
  }
  return Status::kSuccess;
}

Status checkQuantParams(const QuantParams& p) {
  if (p.bits != 8 && p.bits != 4 && p.bits != 2) {
    return fail(Status::kInvalidArgument, "bits=%d: quantization takes 8, 4 or 2", p.bits);
  }
  if (p.scheme != QuantScheme::kSymmetric && p.scheme != QuantScheme::kAsymmetric) {
    return fail(Status::kInvalidArgument, "scheme=%d: expected symmetric (0) or asymmetric (1)",
                static_cast<int>(p.scheme));
  }
  if (!isPowerOfTwo(p.groupSize) || p.groupSize < kMinGroupSize || p.groupSize > kMaxGroupSize) {
    return fail(Status::kInvalidArgument, "groupSize=%u: expected a power of two in [%u, %u]",
                p.groupSize, kMinGroupSize, kMaxGroupSize);
  }
  if (p.rounding != Rounding::kNearestEven && p.rounding != Rounding::kStochastic) {
    return fail(Status::kInvalidArgument,
                "rounding=%d: expected nearest-even (0) or stochastic (1)",
                static_cast<int>(p.rounding));
  }
  return Status::kSuccess;
}

size_t quantizedBytes(size_t count, const QuantParams& params) {
  return quantLayoutOf(count, params.bits, params.scheme, params.groupSize).totalBytes;
}

Status quantize(const void* in, DataType type, size_t count, const QuantParams& params, void* out,
                size_t capacity) {
  ZCCL_CHECK(checkQuantParams(params));
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  if (count > kMaxCount)
    return fail(Status::kInvalidArgument, "count=%zu: too large to quantize", count);
  if (in == nullptr && count > 0)
    return fail(Status::kInvalidArgument, "in=NULL with count=%zu", count);
  const QuantLayout l = quantLayoutOf(count, params.bits, params.scheme, params.groupSize);
  if (out == nullptr || capacity < l.totalBytes) {
    return fail(Status::kInvalidArgument, "capacity=%zu: the message needs %zu bytes", capacity,
                l.totalBytes);
  }
  auto* base = static_cast<unsigned char*>(out);
  const uint32_t smoothingSeed = static_cast<uint32_t>(params.seed);
  const QuantHeader header{kQuantMagic,
                           kQuantVersion,
                           static_cast<uint8_t>(params.bits),
                           static_cast<uint8_t>(params.scheme),
                           params.smoothing ? kQuantSmoothed : uint8_t{0},
                           params.groupSize,
                           params.smoothing ? smoothingSeed : 0,
                           count};
  std::memcpy(base, &header, sizeof(header));
  unsigned char* payload = base + sizeof(QuantHeader);
  std::memset(payload + l.payloadBytes, 0,
              l.parametersOffset - sizeof(QuantHeader) - l.payloadBytes);
  unsigned char* scales = base + l.parametersOffset;
  unsigned char* offsets = scales + 4 * l.groups;

  const QuantKernels& k = activeQuantKernels();
  const int lo = codeLow(params.bits, params.scheme), hi = codeHigh(params.bits, params.scheme);
  const float center = centerOf(params.bits, params.scheme);
  const size_t es = elementSize(type);
  alignas(64) float staged[kMaxGroupSize];
  alignas(64) uint8_t codes[kMaxGroupSize];
  for (size_t g = 0; g < l.groups; ++g) {
    const size_t first = g * params.groupSize;
    const size_t n = std::min<size_t>(params.groupSize, count - first);
    const void* source = static_cast<const char*>(in) + first * es;
    const float* x = staged;
    if (type == DataType::kFloat32) {
      x = static_cast<const float*>(source);
    } else if (type == DataType::kFloat16) {
      k.widenFloat16(static_cast<const uint16_t*>(source), n, staged);
    } else {
      k.widenBfloat16(static_cast<const uint16_t*>(source), n, staged);
    }
    // A short last group is not smoothed: the rotation needs a power of two.
    if (params.smoothing && n == params.groupSize) {
      if (x != staged) std::memcpy(staged, x, n * sizeof(float));
      smoothGroupHost(staged, params.groupSize, smoothingSeed, first);
      x = staged;
    }
    GroupStats s;
    k.stats(x, n, &s);
    uint8_t* groupCodes = params.bits == 8 ? payload + first : codes;
    GroupScale gs = nonFiniteScale();
    if (s.nonFinite) {
      std::memset(groupCodes, 0, n);
    } else {
      gs = chooseScale(s, params.bits, params.scheme);
      if (gs.prescale != 1.0f) {
        for (size_t i = 0; i < n; ++i) staged[i] = x[i] * gs.prescale;
        x = staged;
      }
      if (params.rounding == Rounding::kNearestEven) {
        k.codesNearest(x, n, gs.prescaledOffset, gs.inv, center, lo, hi, groupCodes);
      } else {
        k.codesStochastic(x, n, gs.prescaledOffset, gs.inv, center, lo, hi,
                          groupSeed(params.seed, first), static_cast<uint32_t>(first), groupCodes);
      }
    }
    if (params.bits == 4) k.packNibbles(groupCodes, n, payload + first / 2);
    if (params.bits == 2) k.packCrumbs(groupCodes, n, payload + first / 4);
    storeParameter(scales, g, gs.scale);
    if (params.scheme == QuantScheme::kAsymmetric) storeParameter(offsets, g, gs.offset);
  }
  return Status::kSuccess;
}

Status readQuantHeader(const void* message, size_t bytes, QuantHeader* header) {
  if (message == nullptr) return fail(Status::kInvalidArgument, "message=NULL");
  if (bytes < sizeof(QuantHeader)) {
    return fail(Status::kInvalidArgument, "bytes=%zu: shorter than the %zu-byte header", bytes,
                sizeof(QuantHeader));
  }
  QuantHeader h;
  std::memcpy(&h, message, sizeof(h));
  if (h.magic != kQuantMagic || h.version != kQuantVersion) {
    return fail(Status::kInvalidArgument, "magic=0x%08x version=%u: not a zccl quantized message",
                h.magic, h.version);
  }
  QuantParams p;
  p.bits = h.bits;
  p.scheme = static_cast<QuantScheme>(h.scheme);
  p.groupSize = h.groupSize;
  ZCCL_CHECK(checkQuantParams(p));
  if ((h.flags & ~kQuantSmoothed) != 0) {
    return fail(Status::kInvalidArgument, "flags=0x%x in the header: unknown", h.flags);
  }
  if (h.count > kMaxCount) {
    return fail(Status::kInvalidArgument, "count=%llu in the header: implausibly large",
                static_cast<unsigned long long>(h.count));
  }
  const size_t need = quantLayoutOf(h.count, h.bits, p.scheme, h.groupSize).totalBytes;
  if (bytes < need) {
    return fail(Status::kInvalidArgument,
                "bytes=%zu: the header announces %llu elements, which need %zu bytes", bytes,
                static_cast<unsigned long long>(h.count), need);
  }
  *header = h;
  return Status::kSuccess;
}

Status dequantize(const void* message, size_t bytes, void* out, DataType type, size_t count) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  if (out == nullptr && count > 0)
    return fail(Status::kInvalidArgument, "out=NULL with count=%zu", count);
  const QuantKernels& k = activeQuantKernels();
  // float32 output is decoded in place; half types go through a staging group.
  const auto target = [&](size_t first) {
    return type == DataType::kFloat32 ? static_cast<float*>(out) + first : nullptr;
  };
  return decodeGroups(message, bytes, count, target,
                      [&](size_t first, size_t n, const float* values) {
                        if (type == DataType::kFloat16) {
                          k.narrowFloat16(values, n, static_cast<uint16_t*>(out) + first);
                        } else if (type == DataType::kBfloat16) {
                          k.narrowBfloat16(values, n, static_cast<uint16_t*>(out) + first);
                        }
                      });
}

Status dequantizeAccumulate(const void* message, size_t bytes, float* accumulator, size_t count) {
  if (accumulator == nullptr && count > 0) {
    return fail(Status::kInvalidArgument, "accumulator=NULL with count=%zu", count);
  }
  const QuantKernels& k = activeQuantKernels();
  return decodeGroups(
      message, bytes, count, [](size_t) -> float* { return nullptr; },
      [&](size_t first, size_t n, const float* values) {
        k.accumulate(accumulator + first, values, n);
      });
}

Status accumulateAsFloat(const void* x, DataType type, size_t count, float* accumulator) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  const QuantKernels& k = activeQuantKernels();
  if (type == DataType::kFloat32) {
    k.accumulate(accumulator, static_cast<const float*>(x), count);
    return Status::kSuccess;
  }
  alignas(64) float staged[kMaxGroupSize];
  const auto* halves = static_cast<const uint16_t*>(x);
  for (size_t first = 0; first < count; first += kMaxGroupSize) {
    const size_t n = std::min<size_t>(kMaxGroupSize, count - first);
    if (type == DataType::kFloat16) {
      k.widenFloat16(halves + first, n, staged);
    } else {
      k.widenBfloat16(halves + first, n, staged);
    }
    k.accumulate(accumulator + first, staged, n);
  }
  return Status::kSuccess;
}

Status convertToFloat(const void* x, DataType type, size_t count, float* out) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  const QuantKernels& k = activeQuantKernels();
  if (type == DataType::kFloat32) {
    if (count > 0 && out != x) std::memmove(out, x, count * sizeof(float));
  } else if (type == DataType::kFloat16) {
    k.widenFloat16(static_cast<const uint16_t*>(x), count, out);
  } else {
    k.widenBfloat16(static_cast<const uint16_t*>(x), count, out);
  }
  return Status::kSuccess;
}

Status storeFloatAs(float* values, size_t count, int divisor, DataType type, void* out) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  if (divisor != 1) {
    const float d = static_cast<float>(divisor);
    for (size_t i = 0; i < count; ++i) values[i] /= d;
  }
  const QuantKernels& k = activeQuantKernels();
  if (type == DataType::kFloat32) {
    if (out != values) std::memcpy(out, values, count * sizeof(float));
  } else if (type == DataType::kFloat16) {
    k.narrowFloat16(values, count, static_cast<uint16_t*>(out));
  } else {
    k.narrowBfloat16(values, count, static_cast<uint16_t*>(out));
  }
  return Status::kSuccess;
}

}  // namespace zccl
