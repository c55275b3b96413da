// Element types and reduction operators as the layers below the API know them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace zccl {

// Values mirror zcclDataType_t and zcclRedOp_t (static_assert in core).
enum class DataType : int {
  kInt8 = 0,
  kUint8,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat16,
  kBfloat16,
  kFloat32,
  kFloat64,
  kCount
};

enum class RedOp : int { kSum = 0, kProd, kMax, kMin, kAvg, kCount };

// Where a collective's buffers live.
enum class MemoryKind : int { kHost = 0, kDevice = 1 };

size_t elementSize(DataType type);
const char* dataTypeName(DataType type);
const char* redOpName(RedOp op);
bool isFloatingPoint(DataType type);
bool isHalfPrecision(DataType type);

}  // namespace zccl
