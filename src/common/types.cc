// Element sizes and names of types and operators (types.h).
#include "common/types.h"

namespace zccl {

size_t elementSize(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUint8:
      return 1;
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64:
      return 8;
    case DataType::kCount:
      break;
  }
  return 0;
}

const char* dataTypeName(DataType type) {
  static const char* const names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                      "uint64", "float16", "bfloat16", "float32", "float64"};
  const int index = static_cast<int>(type);
  return index >= 0 && index < static_cast<int>(DataType::kCount) ? names[index] : "invalid";
}

const char* redOpName(RedOp op) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg"};
  const int index = static_cast<int>(op);
  return index >= 0 && index < static_cast<int>(RedOp::kCount) ? names[index] : "invalid";
}

bool isHalfPrecision(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kBfloat16;
}

bool isFloatingPoint(DataType type) {
  return isHalfPrecision(type) || type == DataType::kFloat32 || type == DataType::kFloat64;
}

}  // namespace zccl
