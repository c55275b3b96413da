// The host implementation of Kernels: the CPU functions of common/ and quant/, which finish
// before they return.
#include <cstring>

#include "kernels/kernels.h"
#include "kernels/reduce.h"

namespace zccl {
namespace {

class HostKernels final : public Kernels {
 public:
  explicit HostKernels(bool fused) : fused_(fused) {}

  MemoryKind memory() const override { return MemoryKind::kHost; }

  Status copy(void* to, const void* from, size_t bytes) override {
    if (bytes > 0 && to != from) std::memmove(to, from, bytes);
    return Status::kSuccess;
  }
  Status zeroFloats(float* data, size_t count) override {
    if (count > 0) std::memset(data, 0, count * sizeof(float));
    return Status::kSuccess;
  }

  Status reduceInto(void* inout, const void* in, size_t count, DataType type, RedOp op) override {
    zccl::reduceInto(inout, in, count, type, op);
    return Status::kSuccess;
  }
  Status reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count,
                       DataType type, RedOp op) override {
    zccl::reduceOrdered(out, inputs, numInputs, count, type, op);
    return Status::kSuccess;
  }
  Status divideByCount(void* data, size_t count, DataType type, int divisor) override {
    zccl::divideByCount(data, count, type, divisor);
    return Status::kSuccess;
  }

  Status quantize(const void* in, DataType type, size_t count, const QuantParams& params, void* out,
                  size_t capacity) override {
    return zccl::quantize(in, type, count, params, out, capacity);
  }
  Status dequantize(const void* message, size_t bytes, const QuantParams& format, void* out,
                    DataType type, size_t count) override {
    ZCCL_CHECK(checkFormat(message, bytes, format, count));
    return zccl::dequantize(message, bytes, out, type, count);
  }
  Status dequantizeAccumulate(const void* message, size_t bytes, const QuantParams& format,
                              float* accumulator, size_t count) override {
    ZCCL_CHECK(checkFormat(message, bytes, format, count));
    return zccl::dequantizeAccumulate(message, bytes, accumulator, count);
  }
  Status negateFloats(float* data, size_t count) override {
    for (size_t i = 0; i < count; ++i) data[i] = -data[i];
    return Status::kSuccess;
  }
  Status accumulateAsFloat(const void* x, DataType type, size_t count,
                           float* accumulator) override {
    return zccl::accumulateAsFloat(x, type, count, accumulator);
  }
  Status convertToFloat(const void* x, DataType type, size_t count, float* out) override {
    return zccl::convertToFloat(x, type, count, out);
  }
  Status differenceAsFloat(const void* x, const void* reference, DataType type, size_t count,
                           float* out) override {
    if (!fused_) return Kernels::differenceAsFloat(x, reference, type, count, out);
    return zccl::differenceAsFloat(x, reference, type, count, out);
  }
  Status storeFloatAs(float* values, size_t count, int divisor, DataType type, void* out) override {
    return zccl::storeFloatAs(values, count, divisor, type, out);
  }
  Status storeSumAs(const void* x, DataType type, size_t count, float* addend, void* out,
                    void* copy) override {
    if (!fused_) return Kernels::storeSumAs(x, type, count, addend, out, copy);
    return zccl::storeSumAs(x, type, count, addend, out, copy);
  }
  Status dequantizeOnto(const void* message, size_t bytes, const QuantParams& format, size_t count,
                        const SumTarget& target, float* work) override {
    if (!fused_) return Kernels::dequantizeOnto(message, bytes, format, count, target, work);
    ZCCL_CHECK(checkFormat(message, bytes, format, count));
    return zccl::dequantizeOnto(message, bytes, count, target);
  }
  Status quantizeWithFeedback(const void* x, DataType type, size_t count, const QuantParams& params,
                              void* message, size_t capacity, const Residuals& residual,
                              float* work) override {
    if (!fused_) {
      return Kernels::quantizeWithFeedback(x, type, count, params, message, capacity, residual,
                                           work);
    }
    return zccl::quantizeWithFeedback(x, type, count, params, message, capacity, residual, work);
  }
  size_t pipelineElements() const override { return size_t{1} << 16; }

 private:
  const bool fused_;

  static Status checkFormat(const void* message, size_t bytes, const QuantParams& format,
                            size_t count) {
    QuantHeader header{};
    ZCCL_CHECK(readQuantHeader(message, bytes, &header));
    return checkMessageFormat(header, format, count);
  }
};

}  // namespace

Status checkMessageFormat(const QuantHeader& header, const QuantParams& format, size_t count) {
  const bool smoothed = (header.flags & kQuantSmoothed) != 0;
  if (header.bits == format.bits && header.scheme == static_cast<uint8_t>(format.scheme) &&
      header.groupSize == format.groupSize && header.count == count &&
      smoothed == format.smoothing) {
    return Status::kSuccess;
  }
  return fail(Status::kInvalidArgument,
              "a quantized message of %llu elements, INT%u scheme %u group %u%s, where the plan "
              "expects %zu elements, INT%d scheme %d group %u%s",
              static_cast<unsigned long long>(header.count), header.bits, header.scheme,
              header.groupSize, smoothed ? " smoothed" : "", count, format.bits,
              static_cast<int>(format.scheme), format.groupSize,
              format.smoothing ? " smoothed" : "");
}

Kernels& hostKernels() {
  static HostKernels kernels(true);
  return kernels;
}

Kernels& unfusedHostKernels() {
  static HostKernels kernels(false);
  return kernels;
}

}  // namespace zccl
