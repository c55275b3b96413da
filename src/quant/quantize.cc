// The quantization driver: message layout, per-group scale selection and the loops over
// groups; the element work is done by the active QuantKernels.
#include "quant/quantize.h"

#include <algorithm>
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

// n elements of x (float32, float16 or bfloat16) from element `first`, as float32 in `out`.
void widenAs(const QuantKernels& k, DataType type, const void* x, size_t first, size_t n,
             float* out) {
  if (type == DataType::kFloat32) {
    const float* from = static_cast<const float*>(x) + first;
    if (from != out) std::memmove(out, from, n * sizeof(float));
  } else if (type == DataType::kFloat16) {
    k.widenFloat16(static_cast<const uint16_t*>(x) + first, n, out);
  } else {
    k.widenBfloat16(static_cast<const uint16_t*>(x) + first, n, out);
  }
}

// n float32 values rounded once to `type`, into `out` from element `first`.
void narrowAs(const QuantKernels& k, DataType type, const float* values, size_t n, void* out,
              size_t first) {
  if (type == DataType::kFloat32) {
    float* to = static_cast<float*>(out) + first;
    if (to != values) std::memmove(to, values, n * sizeof(float));
  } else if (type == DataType::kFloat16) {
    k.narrowFloat16(values, n, static_cast<uint16_t*>(out) + first);
  } else {
    k.narrowBfloat16(values, n, static_cast<uint16_t*>(out) + first);
  }
}

// Where a message's codes and group parameters lie, and how they were made (its header's).
struct MessageParts {
  unsigned char* payload;
  unsigned char* scales;
  unsigned char* offsets;
  QuantHeader header;
  size_t groups;
};

MessageParts partsOf(const QuantHeader& h, const void* message) {
  const QuantLayout l =
      quantLayoutOf(h.count, h.bits, static_cast<QuantScheme>(h.scheme), h.groupSize);
  // The parts are written when quantizing and only read when decoding.
  auto* base = static_cast<unsigned char*>(const_cast<void*>(message));
  unsigned char* scales = base + l.parametersOffset;
  return {base + sizeof(QuantHeader), scales, scales + 4 * l.groups, h, l.groups};
}

size_t groupLength(const MessageParts& m, size_t g) {
  return std::min<size_t>(m.header.groupSize, m.header.count - g * m.header.groupSize);
}

// Group g of a message, decoded into `values` (float32).
void decodeGroup(const QuantKernels& k, const MessageParts& m, size_t g, float* values) {
  const QuantHeader& h = m.header;
  const auto scheme = static_cast<QuantScheme>(h.scheme);
  const size_t first = g * h.groupSize;
  const size_t n = groupLength(m, g);
  alignas(64) uint8_t codes[kMaxGroupSize];
  const uint8_t* groupCodes =
      unpackGroup(k, h.bits, scheme, m.payload + first * h.bits / 8, n, codes);
  const float scale = loadParameter(m.scales, g);
  if (scheme == QuantScheme::kSymmetric) {
    k.decodeSigned(reinterpret_cast<const int8_t*>(groupCodes), n, scale, values);
  } else {
    k.decodeUnsigned(groupCodes, n, scale, loadParameter(m.offsets, g), centerOf(h.bits, scheme),
                     values);
  }
  if ((h.flags & kQuantSmoothed) != 0 && n == h.groupSize) {
    unsmoothGroupHost(values, h.groupSize, h.smoothingSeed, first);
  }
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
  const MessageParts m = partsOf(h, message);
  const QuantKernels& k = activeQuantKernels();
  alignas(64) float staging[kMaxGroupSize];
  for (size_t g = 0; g < m.groups; ++g) {
    const size_t first = g * h.groupSize;
    float* values = target(first);
    if (values == nullptr) values = staging;
    decodeGroup(k, m, g, values);
    sink(first, groupLength(m, g), values);
  }
  return Status::kSuccess;
}

Status checkSumTarget(const SumTarget& target, size_t count) {
  ZCCL_CHECK(checkQuantizableType(target.type, "type"));
  if ((target.x == nullptr || target.out == nullptr) && count > 0) {
    return fail(Status::kInvalidArgument, "x or out NULL with count=%zu", count);
  }
  return Status::kSuccess;
}

// Elements [first, first + n) of the target (n at most kMaxGroupSize): x + changes in float32,
// rounded once to the type, stored in out and copy. bfloat16 in one kernel's pass (the weight
// differences' gathers); float16 through `staged`.
void storeGroupSum(const QuantKernels& k, const SumTarget& target, size_t first, size_t n,
                   const float* changes, float* staged) {
  if (target.type == DataType::kBfloat16) {
    auto* copy = static_cast<uint16_t*>(target.copy);
    k.sumIntoBfloat16(static_cast<const uint16_t*>(target.x) + first, changes, n,
                      static_cast<uint16_t*>(target.out) + first,
                      copy != nullptr ? copy + first : nullptr);
    return;
  }
  if (target.type == DataType::kFloat32) {
    // The sum needs no rounding to the type: formed where it is stored.
    float* out = static_cast<float*>(target.out) + first;
    const float* x = static_cast<const float*>(target.x) + first;
    if (out != x) std::memmove(out, x, n * sizeof(float));
    k.accumulate(out, changes, n);
  } else {
    widenAs(k, target.type, target.x, first, n, staged);
    k.accumulate(staged, changes, n);
    narrowAs(k, target.type, staged, n, target.out, first);
  }
  if (target.copy != nullptr) {
    const size_t es = elementSize(target.type);
    std::memcpy(static_cast<char*>(target.copy) + first * es,
                static_cast<const char*>(target.out) + first * es, n * es);
  }
}

// Asks for the float32 group from `first`, ahead of its use. The statistics stop at every
// group for the scale, and the hardware's prefetcher alone then leaves the next group's loads
// waiting on memory: 12-20% faster with this (AVX2 and AVX-512, Intel). Half-precision input
// ran no faster with it, widened in one pass as before and a group ahead as now (AVX2, AMD).
void prefetchGroupAt(const float* in, size_t count, size_t first, size_t groupSize) {
  constexpr size_t kFloatsPerLine = 64 / sizeof(float);
  const size_t end = std::min(count, first + groupSize);
  for (size_t i = first; i < end; i += kFloatsPerLine) __builtin_prefetch(in + i);
}

// Input this small may still lie in L2, where the hints only cost: 32 -> 35 GB/s without them
// in L2 (AVX-512, AMD).
constexpr size_t kPrefetchFromBytes = size_t{1} << 20;

// Checks a quantization's arguments and writes the message's header and padding.
Status startMessage(const void* in, DataType type, size_t count, const QuantParams& params,
                    void* out, size_t capacity, MessageParts* parts) {
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
  const uint32_t smoothingSeed = static_cast<uint32_t>(params.seed);
  const QuantHeader header{kQuantMagic,
                           kQuantVersion,
                           static_cast<uint8_t>(params.bits),
                           static_cast<uint8_t>(params.scheme),
                           params.smoothing ? kQuantSmoothed : uint8_t{0},
                           params.groupSize,
                           params.smoothing ? smoothingSeed : 0,
                           count};
  std::memcpy(out, &header, sizeof(header));
  *parts = partsOf(header, out);
  std::memset(parts->payload + l.payloadBytes, 0,
              l.parametersOffset - sizeof(QuantHeader) - l.payloadBytes);
  return Status::kSuccess;
}

GroupStats statsOf(const QuantKernels& k, QuantScheme scheme, const float* x, size_t n) {
  GroupStats s;
  (scheme == QuantScheme::kSymmetric ? k.absmaxStats : k.stats)(x, n, &s);
  return s;
}

// The group after the one being coded, whose statistics are read during its coding. Float32
// input is read where it lies; half-precision input is widened into `widened` on the way.
struct NextGroup {
  DataType type;
  const void* in;  // the message's input
  size_t first, n;
  float* widened;  // kMaxGroupSize floats, for half-precision input
  GroupStats* stats;

  bool isHalf() const { return type != DataType::kFloat32; }
  const float* values() const { return isHalf() ? widened : static_cast<const float*>(in) + first; }
  const uint16_t* halves() const { return static_cast<const uint16_t*>(in) + first; }
};

// The group's values (widened where they are half-precision) and their statistics, alone.
void readGroup(const QuantKernels& k, QuantScheme scheme, const NextGroup& group) {
  if (group.isHalf()) widenAs(k, group.type, group.in, group.first, group.n, group.widened);
  *group.stats = statsOf(k, scheme, group.values(), group.n);
}

// Codes group g of the message from its float32 values `x` (which it does not change) and
// their statistics; `staged` (kMaxGroupSize floats) is the group's scratch and may be x. With
// `next`, also finds the next group's statistics: in the same pass as the codes where the
// kernels have one (symmetric, nearest), else before the codes, so that the wait on its loads
// overlaps the scale's divisions.
void codeGroup(const QuantKernels& k, const QuantParams& params, const MessageParts& m, size_t g,
               const float* x, const GroupStats& s, float* staged, const NextGroup* next) {
  const size_t first = g * params.groupSize;
  const size_t n = groupLength(m, g);
  const bool nearest = params.rounding == Rounding::kNearestEven;
  const bool statsBesideCodes =
      next != nullptr && !s.nonFinite && nearest && params.scheme == QuantScheme::kSymmetric;
  if (next != nullptr && !statsBesideCodes) readGroup(k, params.scheme, *next);
  alignas(64) uint8_t codes[kMaxGroupSize];
  uint8_t* groupCodes = params.bits == 8 ? m.payload + first : codes;
  GroupScale gs = nonFiniteScale();
  if (s.nonFinite) {
    std::memset(groupCodes, 0, n);
  } else {
    gs = chooseScale(s, params.bits, params.scheme);
    if (gs.prescale != 1.0f) {
      for (size_t i = 0; i < n; ++i) staged[i] = x[i] * gs.prescale;
      x = staged;
    }
    const int lo = codeLow(params.bits, params.scheme), hi = codeHigh(params.bits, params.scheme);
    const float center = centerOf(params.bits, params.scheme);
    if (statsBesideCodes && next->isHalf()) {
      k.codesSymmetricBesideWidenAbsmax(x, n, gs.inv, lo, hi, groupCodes, next->halves(),
                                        next->type == DataType::kBfloat16, next->n, next->widened,
                                        next->stats);
    } else if (statsBesideCodes) {
      k.codesSymmetricBesideAbsmax(x, n, gs.inv, lo, hi, groupCodes, next->values(), next->n,
                                   next->stats);
    } else if (nearest) {
      k.codesNearest(x, n, gs.prescaledOffset, gs.inv, center, lo, hi, groupCodes);
    } else {
      k.codesStochastic(x, n, gs.prescaledOffset, gs.inv, center, lo, hi,
                        groupSeed(params.seed, first), static_cast<uint32_t>(first), groupCodes);
    }
  }
  if (params.bits == 4) k.packNibbles(groupCodes, n, m.payload + first / 2);
  if (params.bits == 2) k.packCrumbs(groupCodes, n, m.payload + first / 4);
  storeParameter(m.scales, g, gs.scale);
  if (params.scheme == QuantScheme::kAsymmetric) storeParameter(m.offsets, g, gs.offset);
}

// Encodes group g of the message from its float32 values `x` (which it does not change);
// `staged` (kMaxGroupSize floats) is the group's scratch and may be x.
void encodeGroup(const QuantKernels& k, const QuantParams& params, const MessageParts& m, size_t g,
                 const float* x, float* staged) {
  const size_t n = groupLength(m, g);
  // A short last group is not smoothed: the rotation needs a power of two.
  if (params.smoothing && n == params.groupSize) {
    if (x != staged) std::memcpy(staged, x, n * sizeof(float));
    smoothGroupHost(staged, params.groupSize, m.header.smoothingSeed, g * params.groupSize);
    x = staged;
  }
  codeGroup(k, params, m, g, x, statsOf(k, params.scheme, x, n), staged, nullptr);
}

// Input that is not smoothed: each group's statistics are read a group ahead of its codes,
// during the previous group's coding (codeGroup), so that the wait on memory overlaps work and,
// for symmetric groups, the loops run as one. Float32 groups are coded where they lie, with
// hints two groups ahead of the statistics (at 16 MiB, 26 GB/s against 25 one group ahead,
// AVX-512); half-precision groups are widened into two buffers in turn, a group staying in its
// buffer while the next is widened beside its codes (bfloat16 INT8, AVX2: 7.5 -> 9.2 GB/s against
// widening, statistics and codes one after the other).
void encodeGroupsAhead(const QuantKernels& k, const QuantParams& params, const MessageParts& m,
                       DataType type, const void* in, float* staged) {
  const size_t count = m.header.count, groupSize = params.groupSize;
  const bool prefetch = type == DataType::kFloat32 && count * sizeof(float) >= kPrefetchFromBytes;
  alignas(64) float widened[2][kMaxGroupSize];
  GroupStats next;
  const auto groupAt = [&](size_t g) {
    return NextGroup{type, in, g * groupSize, groupLength(m, g), widened[g % 2], &next};
  };
  const NextGroup firstGroup = groupAt(0);
  readGroup(k, params.scheme, firstGroup);
  const float* current = firstGroup.values();
  const size_t last = m.groups - 1;  // m.groups > 0: the caller's check
  for (size_t g = 0; g < last; ++g) {
    const GroupStats stats = next;
    if (prefetch) {
      prefetchGroupAt(static_cast<const float*>(in), count, (g + 3) * groupSize, groupSize);
    }
    const NextGroup ahead = groupAt(g + 1);
    codeGroup(k, params, m, g, current, stats, staged, &ahead);
    current = ahead.values();
  }
  codeGroup(k, params, m, last, current, next, staged, nullptr);
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
  MessageParts m{};
  ZCCL_CHECK(startMessage(in, type, count, params, out, capacity, &m));
  const QuantKernels& k = activeQuantKernels();
  alignas(64) float staged[kMaxGroupSize];
  if (!params.smoothing) {
    if (m.groups > 0) encodeGroupsAhead(k, params, m, type, in, staged);
    return Status::kSuccess;
  }
  for (size_t g = 0; g < m.groups; ++g) {
    const size_t first = g * params.groupSize;
    const float* x = staged;
    if (type == DataType::kFloat32) {
      prefetchGroupAt(static_cast<const float*>(in), count, first + params.groupSize,
                      params.groupSize);
      x = static_cast<const float*>(in) + first;
    } else {
      widenAs(k, type, in, first, groupLength(m, g), staged);
    }
    encodeGroup(k, params, m, g, x, staged);
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
                        if (type != DataType::kFloat32) narrowAs(k, type, values, n, out, first);
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
  for (size_t first = 0; first < count; first += kMaxGroupSize) {
    const size_t n = std::min<size_t>(kMaxGroupSize, count - first);
    widenAs(k, type, x, first, n, staged);
    k.accumulate(accumulator + first, staged, n);
  }
  return Status::kSuccess;
}

Status convertToFloat(const void* x, DataType type, size_t count, float* out) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  if (count > 0) widenAs(activeQuantKernels(), type, x, 0, count, out);
  return Status::kSuccess;
}

Status differenceAsFloat(const void* x, const void* reference, DataType type, size_t count,
                         float* out) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  const QuantKernels& k = activeQuantKernels();
  alignas(64) float staged[kMaxGroupSize];
  for (size_t first = 0; first < count; first += kMaxGroupSize) {
    const size_t n = std::min<size_t>(kMaxGroupSize, count - first);
    float* change = out + first;
    widenAs(k, type, reference, first, n, change);
    widenAs(k, type, x, first, n, staged);
    for (size_t i = 0; i < n; ++i) change[i] = -change[i] + staged[i];
  }
  return Status::kSuccess;
}

Status storeFloatAs(float* values, size_t count, int divisor, DataType type, void* out) {
  ZCCL_CHECK(checkQuantizableType(type, "type"));
  const QuantKernels& k = activeQuantKernels();
  if (divisor != 1) k.divide(values, count, static_cast<float>(divisor));
  if (count > 0) narrowAs(k, type, values, count, out, 0);
  return Status::kSuccess;
}

SumTarget SumTarget::from(size_t first) const {
  const size_t skip = first * elementSize(type);
  return {static_cast<const char*>(x) + skip, type, static_cast<char*>(out) + skip,
          copy != nullptr ? static_cast<char*>(copy) + skip : nullptr};
}

Status storeSumAs(const void* x, DataType type, size_t count, const float* addend, void* out,
                  void* copy) {
  const SumTarget target{x, type, out, copy};
  ZCCL_CHECK(checkSumTarget(target, count));
  if (addend == nullptr && count > 0) {
    return fail(Status::kInvalidArgument, "addend=NULL with count=%zu", count);
  }
  const QuantKernels& k = activeQuantKernels();
  // A group's worth at a time, so that the sum and its narrowed copy stay in the cache.
  alignas(64) float staged[kMaxGroupSize];
  for (size_t first = 0; first < count; first += kMaxGroupSize) {
    storeGroupSum(k, target, first, std::min<size_t>(kMaxGroupSize, count - first), addend + first,
                  staged);
  }
  return Status::kSuccess;
}

Status dequantizeOnto(const void* message, size_t bytes, size_t count, const SumTarget& target) {
  ZCCL_CHECK(checkSumTarget(target, count));
  const QuantKernels& k = activeQuantKernels();
  // Groups decoded side by side into a batch of kMaxGroupSize (a multiple of every group size),
  // added to the target a batch at a time: fewer, longer kernel calls than a group at a time.
  alignas(64) float changes[kMaxGroupSize];
  alignas(64) float staged[kMaxGroupSize];
  size_t batchFirst = 0;
  return decodeGroups(
      message, bytes, count, [&](size_t first) { return changes + (first - batchFirst); },
      [&](size_t first, size_t n, const float*) {
        const size_t end = first + n;
        if (end - batchFirst < kMaxGroupSize && end < count) return;
        storeGroupSum(k, target, batchFirst, end - batchFirst, changes, staged);
        batchFirst = end;
      });
}

Residuals Residuals::at(size_t first, size_t owner) const {
  if (values == nullptr) return *this;
  // A message's blocks start at `first`, which need not be a multiple of kResidualBlock: its
  // block b takes scale first / kResidualBlock + owner + b. No two owners' blocks share one, as
  // the blocks of the owner before start below `first`, at scales up to one below this one's.
  float* blockScales = scales != nullptr ? scales + first / kResidualBlock + owner : nullptr;
  return {static_cast<char*>(values) + first * elementSize(type), type, blockScales};
}

Status checkResidualType(DataType type, const char* argument) {
  if (type != DataType::kFloat32 && type != DataType::kBfloat16 && type != DataType::kInt8) {
    return fail(Status::kInvalidArgument,
                "%s=%s: error feedback keeps its residuals in float32, bfloat16 or int8", argument,
                dataTypeName(type));
  }
  return Status::kSuccess;
}

namespace {

// int8 residuals' codes, then their blocks' scales from the next multiple of 4 bytes.
size_t int8CodeBytes(size_t count) { return (count + 3) / 4 * 4; }

// n int8 residuals (a message's, from its element `first`, a multiple of kResidualBlock) added
// to `values`.
void addInt8Residuals(const QuantKernels& k, const Residuals& r, size_t first, size_t n,
                      float* values) {
  k.addResidualBlocks(static_cast<const int8_t*>(r.values) + first,
                      r.scales + first / kResidualBlock, n, values);
}

// n values kept as the int8 residuals from element `first` (a multiple of kResidualBlock).
void narrowInt8Residuals(const QuantKernels& k, const float* lost, size_t first, size_t n,
                         const Residuals& r) {
  k.codeResidualBlocks(lost, n, static_cast<int8_t*>(r.values) + first,
                       r.scales + first / kResidualBlock);
}

}  // namespace

size_t residualBytes(DataType type, size_t count, size_t owners) {
  if (type != DataType::kInt8) return count * elementSize(type);
  return int8CodeBytes(count) + (count / kResidualBlock + 1 + owners) * sizeof(float);
}

Residuals residualsIn(void* storage, DataType type, size_t count) {
  if (type != DataType::kInt8) return {storage, type, nullptr};
  auto* scales = reinterpret_cast<float*>(static_cast<char*>(storage) + int8CodeBytes(count));
  return {storage, type, scales};
}

void accumulateInt8Residuals(const Residuals& residual, size_t count, float* values) {
  addInt8Residuals(activeQuantKernels(), residual, 0, count, values);
}

void keepInt8Residuals(const float* lost, size_t count, const Residuals& residual) {
  narrowInt8Residuals(activeQuantKernels(), lost, 0, count, residual);
}

Status quantizeWithFeedback(const void* x, DataType type, size_t count, const QuantParams& params,
                            void* message, size_t capacity, const Residuals& residual,
                            float* work) {
  if ((residual.values == nullptr || work == nullptr) && count > 0) {
    return fail(Status::kInvalidArgument, "residual or work NULL with count=%zu", count);
  }
  if (x == work && type != DataType::kFloat32) {
    return fail(Status::kInvalidArgument, "work=x with type=%s: work holds float32",
                dataTypeName(type));
  }
  ZCCL_CHECK(checkResidualType(residual.type, "residual type"));
  MessageParts m{};
  ZCCL_CHECK(startMessage(x, type, count, params, message, capacity, &m));
  const QuantKernels& k = activeQuantKernels();
  // float32 residuals are updated where they lie; others go through `kept`, in the cache.
  float* exact =
      residual.type == DataType::kFloat32 ? static_cast<float*>(residual.values) : nullptr;
  const bool int8 = residual.type == DataType::kInt8;
  // A group at a time, in the cache: the compensated values, their codes, what they lost.
  alignas(64) float compensated[kMaxGroupSize];
  alignas(64) float staged[kMaxGroupSize];
  alignas(64) float decoded[kMaxGroupSize];
  alignas(64) float kept[kMaxGroupSize];
  for (size_t g = 0; g < m.groups; ++g) {
    const size_t first = g * params.groupSize;
    const size_t n = groupLength(m, g);
    float* lost = exact != nullptr ? exact + first : kept;
    widenAs(k, type, x, first, n, compensated);
    if (int8) {
      addInt8Residuals(k, residual, first, n, compensated);
    } else {
      if (exact == nullptr) widenAs(k, residual.type, residual.values, first, n, kept);
      k.accumulate(compensated, lost, n);
    }
    encodeGroup(k, params, m, g, compensated, staged);
    decodeGroup(k, m, g, decoded);
    // -(-compensated + decoded) rather than compensated - decoded: the unfused steps' bits,
    // signed zeros too.
    for (size_t i = 0; i < n; ++i) lost[i] = -(-compensated[i] + decoded[i]);
    if (int8) {
      narrowInt8Residuals(k, kept, first, n, residual);
    } else if (exact == nullptr) {
      narrowAs(k, residual.type, kept, n, residual.values, first);
    }
  }
  return Status::kSuccess;
}

}  // namespace zccl
