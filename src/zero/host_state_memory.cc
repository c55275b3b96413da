// The host's memory for the optimizer's state, and the host's loops of its element-wise work.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/target.h"
#include "zero/working_math.h"

namespace zccl::zero {

namespace {

namespace baseline {
#include "zero/host_loops.inc"
}  // namespace baseline

// AVX2 (no FMA: without contraction the update stays the GPU's bits) doubles the conversions'
// rate; AVX-512 adds nothing to these memory-bound loops.
ZCCL_BEGIN_TARGET("avx2")
namespace avx2 {
#include "zero/host_loops.inc"
}  // namespace avx2
ZCCL_END_TARGET

const HostLoops& bestHostLoops() {
  static const HostLoops& best = firstSupported({avx2HostLoops()}, baselineHostLoops());
  return best;
}

}  // namespace

const HostLoops& baselineHostLoops() { return baseline::kLoops; }

const HostLoops* avx2HostLoops() { return cpuHasAvx2() ? &avx2::kLoops : nullptr; }

void toWorking(Precision precision, const float* in, size_t count, void* out) {
  bestHostLoops().toWorking(precision, in, count, out);
}

void fromWorking(Precision precision, const void* in, size_t count, float* out) {
  bestHostLoops().fromWorking(precision, in, count, out);
}

void adamUpdate(const AdamStep& step, Precision precision, const void* grads, size_t count,
                float* params, float* moment1, float* moment2, void* working) {
  bestHostLoops().adamUpdate(step, precision, grads, count, params, moment1, moment2, working);
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
    adamUpdate(step, precision, grads, count, params, moment1, moment2, nullptr);
    return zcclSuccess;
  }
  zcclResult_t adamAndPublish(const AdamStep& step, Precision precision, const void* grads,
                              size_t count, float* params, float* moment1, float* moment2,
                              void* working) override {
    adamUpdate(step, precision, grads, count, params, moment1, moment2, working);
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
