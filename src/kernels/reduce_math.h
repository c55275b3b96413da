// The element arithmetic of every reduction, shared by the CPU (kernels/reduce.cc) and the
// CUDA kernels (kernels/reduce_cuda.cu) so that both give the same bits: integers wrap like
// unsigned arithmetic of their width, half precision is computed in float32, max/min
// propagate NaN, an average divides once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/half.h"
#include "common/host_device.h"
#include "common/types.h"

namespace zccl {

// Storage type T is reduced in Accumulator type; Traits converts between them.
template <typename T>
struct Traits {
  using Accumulator = T;
  ZCCL_HOST_DEVICE static Accumulator load(T value) { return value; }
  ZCCL_HOST_DEVICE static T store(Accumulator value) { return value; }
};
template <>
struct Traits<float16_t> {
  using Accumulator = float;
  ZCCL_HOST_DEVICE static float load(float16_t value) { return toFloat(value); }
  ZCCL_HOST_DEVICE static float16_t store(float value) { return toFloat16(value); }
};
template <>
struct Traits<bfloat16_t> {
  using Accumulator = float;
  ZCCL_HOST_DEVICE static float load(bfloat16_t value) { return toFloat(value); }
  ZCCL_HOST_DEVICE static bfloat16_t store(float value) { return toBfloat16(value); }
};

template <typename A>
ZCCL_HOST_DEVICE A applyOp(RedOp op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    // Promote to at least unsigned int so that narrow types cannot overflow a signed int.
    using Wide = std::common_type_t<U, unsigned>;
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg:
        return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
      case RedOp::kProd:
        return static_cast<A>(static_cast<Wide>(a) * static_cast<Wide>(b));
      case RedOp::kMax:
        return a < b ? b : a;
      case RedOp::kMin:
        return b < a ? b : a;
      case RedOp::kCount:
        break;
    }
  } else {
    switch (op) {
      case RedOp::kSum:
      case RedOp::kAvg:
        return a + b;
      case RedOp::kProd:
        return a * b;
      case RedOp::kMax:
        return (a > b || a != a) ? a : b;
      case RedOp::kMin:
        return (a < b || a != a) ? a : b;
      case RedOp::kCount:
        break;
    }
  }
  return a;
}

// Division by a rank count that may not fit the narrow type itself (int8 with 200 ranks).
template <typename A>
ZCCL_HOST_DEVICE A divideBy(A value, int divisor) {
  if constexpr (std::is_integral_v<A>) {
    using Wide = std::conditional_t<std::is_signed_v<A>, int64_t, uint64_t>;
    return static_cast<A>(static_cast<Wide>(value) / static_cast<Wide>(divisor));
  } else {
    return value / static_cast<A>(divisor);
  }
}

// Calls fn(T{}) with T the storage type of `type` and returns what it returns. Callers
// validate `type` first; kCount gives the result type's default.
template <typename Fn>
auto withType(DataType type, Fn&& fn) -> decltype(fn(float{})) {
  switch (type) {
    case DataType::kInt8:
      return fn(int8_t{});
    case DataType::kUint8:
      return fn(uint8_t{});
    case DataType::kInt32:
      return fn(int32_t{});
    case DataType::kUint32:
      return fn(uint32_t{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kUint64:
      return fn(uint64_t{});
    case DataType::kFloat16:
      return fn(float16_t{});
    case DataType::kBfloat16:
      return fn(bfloat16_t{});
    case DataType::kFloat32:
      return fn(float{});
    case DataType::kFloat64:
      return fn(double{});
    case DataType::kCount:
      break;
  }
  return decltype(fn(float{}))();
}

// Calls fn(std::integral_constant<RedOp, op>{}), so that each kernel is instantiated per op
// (branch-free inner loops). Callers validate `op` first; kCount gives the default result.
template <typename Fn>
auto withOp(RedOp op, Fn&& fn) -> decltype(fn(std::integral_constant<RedOp, RedOp::kSum>{})) {
  switch (op) {
    case RedOp::kSum:
      return fn(std::integral_constant<RedOp, RedOp::kSum>{});
    case RedOp::kProd:
      return fn(std::integral_constant<RedOp, RedOp::kProd>{});
    case RedOp::kMax:
      return fn(std::integral_constant<RedOp, RedOp::kMax>{});
    case RedOp::kMin:
      return fn(std::integral_constant<RedOp, RedOp::kMin>{});
    case RedOp::kAvg:
      return fn(std::integral_constant<RedOp, RedOp::kAvg>{});
    case RedOp::kCount:
      break;
  }
  return decltype(fn(std::integral_constant<RedOp, RedOp::kSum>{}))();
}

}  // namespace zccl
