// What the CUDA tests share: device buffers, a CUDA assertion, and "the same value" for
// results that must match the CPU's bit for bit (NaN as NaN: hardware NaN payloads differ).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/types.h"

namespace zccl {

#define ASSERT_CUDA(call) ASSERT_EQ(cudaSuccess, (call)) << #call

// A device buffer that frees itself.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&data_, bytes > 0 ? bytes : 1) != cudaSuccess) data_ = nullptr;
  }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

inline bool sameValue(const unsigned char* a, const unsigned char* b, DataType type) {
  switch (type) {
    case DataType::kFloat32: {
      float x, y;
      std::memcpy(&x, a, 4);
      std::memcpy(&y, b, 4);
      return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, 4) == 0;
    }
    case DataType::kFloat64: {
      double x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      return (std::isnan(x) && std::isnan(y)) || std::memcmp(&x, &y, 8) == 0;
    }
    case DataType::kFloat16:
    case DataType::kBfloat16: {
      uint16_t x, y;
      std::memcpy(&x, a, 2);
      std::memcpy(&y, b, 2);
      const uint16_t exponent = type == DataType::kFloat16 ? 0x7c00 : 0x7f80;
      const auto isNan = [&](uint16_t v) {
        return (v & exponent) == exponent && (v & ~exponent & 0x7fff);
      };
      return (isNan(x) && isNan(y)) || x == y;
    }
    default:
      return std::memcmp(a, b, elementSize(type)) == 0;
  }
}

}  // namespace zccl
