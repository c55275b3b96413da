// The host's memory for the optimizer's state, and the host's loops of its element-wise work.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "zero/working_math.h"

namespace zccl::zero {

void toWorking(Precision precision, const float* in, size_t count, void* out) {
  auto* bits = static_cast<uint16_t*>(out);
  switch (precision) {
    case Precision::kFloat32:
      std::memcpy(out, in, count * sizeof(float));
      return;
    case Precision::kBfloat16:
      for (size_t i = 0; i < count; ++i) bits[i] = toBfloat16(in[i]).bits;
      return;
    case Precision::kFloat16:
      for (size_t i = 0; i < count; ++i) bits[i] = toFloat16(in[i]).bits;
      return;
  }
}

void fromWorking(Precision precision, const void* in, size_t count, float* out) {
  const auto* bits = static_cast<const uint16_t*>(in);
  switch (precision) {
    case Precision::kFloat32:
      std::memcpy(out, in, count * sizeof(float));
      return;
    case Precision::kBfloat16:
      for (size_t i = 0; i < count; ++i) out[i] = toFloat(bfloat16_t{bits[i]});
      return;
    case Precision::kFloat16:
      for (size_t i = 0; i < count; ++i) out[i] = toFloat(float16_t{bits[i]});
      return;
  }
}

void adamUpdate(const AdamStep& step, Precision precision, const void* grads, size_t count,
                float* params, float* moment1, float* moment2) {
  // The gradients in float32 first, so that the update's loop vectorizes.
  static thread_local std::vector<float> g;
  g.resize(count);
  fromWorking(precision, grads, count, g.data());
  const AdamStep s = step;
  for (size_t i = 0; i < count; ++i) adamElement(s, g[i], &params[i], &moment1[i], &moment2[i]);
}

namespace {

class HostStateMemory final : public StateMemory {
 public:
  const char* name() const override { return "host"; }
  bool host() const override { return true; }
  zcclStream_t stream() const override { return nullptr; }
  zcclResult_t allocate(size_t bytes, void** data) override {
    *data = std::calloc(bytes > 0 ? bytes : 1, 1);
    if (*data != nullptr) return zcclSuccess;
    error_ = "cannot allocate " + std::to_string(bytes) + " bytes of model state";
    return zcclSystemError;
  }
  void release(void* data) override { std::free(data); }
  zcclResult_t upload(void* to, const void* hostFrom, size_t bytes) override {
    return copy(to, hostFrom, bytes);
  }
  zcclResult_t download(void* hostTo, const void* from, size_t bytes) override {
    return copy(hostTo, from, bytes);
  }
  zcclResult_t copy(void* to, const void* from, size_t bytes) override {
    if (to != from && bytes > 0) std::memcpy(to, from, bytes);
    return zcclSuccess;
  }
  zcclResult_t toWorking(Precision precision, const float* in, size_t count, void* out) override {
    zero::toWorking(precision, in, count, out);
    return zcclSuccess;
  }
  zcclResult_t adam(const AdamStep& step, Precision precision, const void* grads, size_t count,
                    float* params, float* moment1, float* moment2) override {
    adamUpdate(step, precision, grads, count, params, moment1, moment2);
    return zcclSuccess;
  }
  const char* lastError() const override { return error_.c_str(); }

 private:
  std::string error_;
};

}  // namespace

StateMemory& hostStateMemory() {
  static HostStateMemory memory;
  return memory;
}

}  // namespace zccl::zero
