// The ZeRO optimizer with its state in device memory (ZeroOptions::memory): every stage and
// the ZeRO++ options train exactly as with host memory, step by step (the same loss to the
// bit, the same bytes across and within nodes) and to the same master weights, while the
// state lives on a device whose collectives take the library's device path. On the emulated
// device (harness/emulated_device.h), whose state memory runs the host's element-wise
// work queued on its stream, and on a GPU where one is visible (makeCudaStateMemory: CUDA's
// kernels, which must give the host's bits). Under zcclrun as 2 nodes x 2 and at 3 ranks.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "harness/emulated_device.h"
#include "harness/gtest.h"
#include "zero/modules.h"
#include "zero/working_math.h"

namespace zccl_harness {
namespace {

using zccl::zero::AdamStep;
using zccl::zero::Precision;
using zccl::zero::StateMemory;
using zccl::zero::ZeroOptimizer;
using zccl::zero::ZeroOptions;

// The emulated device's memory for the optimizer: as a GPU's, copies, conversions and
// updates are queued on its stream (the host's loops run there), uploads and downloads wait
// for it, and memory is released once the work queued before has run.
class EmulatedStateMemory final : public StateMemory {
 public:
  explicit EmulatedStateMemory(EmulatedDevice& device) : device_(device) {}
  const char* name() const override { return "emulated device"; }
  bool host() const override { return false; }
  zcclStream_t stream() const override { return device_.stream(); }
  zcclResult_t allocate(size_t bytes, void** data) override {
    *data = device_.allocate(bytes);
    std::memset(device_.onHost(*data, bytes), 0, bytes);
    return zcclSuccess;
  }
  void release(void* data) override {
    device_.emulatedStream().enqueue([this, data] { device_.release(data); });
  }
  zcclResult_t upload(void* to, const void* hostFrom, size_t bytes) override {
    device_.synchronize();
    device_.upload(to, hostFrom, bytes);
    return zcclSuccess;
  }
  zcclResult_t download(void* hostTo, const void* from, size_t bytes) override {
    device_.download(hostTo, from, bytes);
    return zcclSuccess;
  }
  zcclResult_t copy(void* to, const void* from, size_t bytes) override {
    device_.copyOnStream(to, from, bytes);
    return zcclSuccess;
  }
  zcclResult_t toWorking(Precision precision, const float* in, size_t count, void* out) override {
    device_.emulatedStream().enqueue(
        [=] { zccl::zero::toWorking(precision, onHost(in), count, onHost(out)); });
    return zcclSuccess;
  }
  zcclResult_t adam(const AdamStep& step, Precision precision, const void* grads, size_t count,
                    float* params, float* moment1, float* moment2) override {
    device_.emulatedStream().enqueue([=] {
      zccl::zero::adamUpdate(step, precision, onHost(grads), count, onHost(params), onHost(moment1),
                             onHost(moment2), nullptr);
    });
    return zcclSuccess;
  }
  const char* lastError() const override { return ""; }

 private:
  // The host loops reach device memory through its alias (the start's: an allocation is
  // contiguous there too).
  template <typename T>
  T* onHost(T* data) const {
    return device_.onHost(data, 1);
  }

  EmulatedDevice& device_;
};

struct Setting {
  const char* name;
  int stage;
  bool qwz, hpz, qgz;
  Precision precision;
};

// Every stage, ZeRO++, and float16's loss scaling (its overflow check reads the gradients).
const Setting kSettings[] = {
    {"ZeRO-1 bf16", 1, false, false, false, Precision::kBfloat16},
    {"ZeRO-2 fp32 +qgZ", 2, false, false, true, Precision::kFloat32},
    {"ZeRO-3 fp16", 3, false, false, false, Precision::kFloat16},
    {"ZeRO++ bf16", 3, true, true, true, Precision::kBfloat16},
};

struct Trace {
  std::vector<double> losses;
  std::vector<uint64_t> interBytes, intraBytes;
  std::vector<float> master;
  size_t peakBytes = 0;
};

class ZeroOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = makeComm(zcclAlgoAuto);
    ASSERT_NE(comm_, nullptr);
  }
  // The communicator's device path holds the emulated device's copier and kernels: it goes
  // first.
  void TearDown() override {
    EXPECT_EQ(zcclCommDestroy(comm_), zcclSuccess);
    zccl::installDeviceRuntime(nullptr);
  }

  // `steps` steps of the small MLP on this rank's share of a global batch of 24.
  Trace train(const Setting& setting, StateMemory* memory, int steps) {
    auto model = zccl::zero::makeMlp(13, 32, 2);
    ZeroOptions options;
    options.stage = setting.stage;
    options.quantizedWeights = setting.qwz;
    options.hierarchicalPartition = setting.hpz;
    options.quantizedGradients = setting.qgz;
    options.precision = setting.precision;
    options.initialLossScale = 1 << 20;  // float16 overflows at first, and skips steps
    options.memory = memory;
    // A device's hpZ all-gathers inside the node: the host's does too here, so that the bytes
    // and the peaks compare (zero_test checks the host's shared node copy against the gather).
    options.sharedNodeCopy = false;
    std::unique_ptr<ZeroOptimizer> zero;
    Trace trace;
    EXPECT_EQ(ZeroOptimizer::create(comm_, model.get(), options, &zero), zcclSuccess);
    if (zero == nullptr) return trace;
    const int local = 24 / worldSize();
    for (int step = 0; step < steps; ++step) {
      const auto batch =
          zccl::zero::modularAdditionBatch(13, false, 7, step, worldRank() * local, local, 0.0f);
      zccl::zero::StepStats stats;
      EXPECT_EQ(zero->step(batch, &stats), zcclSuccess)
          << zero->lastError() << " " << zcclGetLastError(comm_);
      trace.losses.push_back(stats.loss);
      trace.interBytes.push_back(stats.interNodeBytes);
      trace.intraBytes.push_back(stats.intraNodeBytes);
    }
    EXPECT_EQ(zero->gatherMasterParameters(&trace.master), zcclSuccess) << zero->lastError();
    trace.peakBytes = zero->peakModelStateBytes();
    return trace;
  }

  void expectAlike(const Trace& host, const Trace& device, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(device.losses, host.losses) << "losses step by step";
    EXPECT_EQ(device.interBytes, host.interBytes) << "inter-node bytes step by step";
    EXPECT_EQ(device.intraBytes, host.intraBytes) << "intra-node bytes step by step";
    ASSERT_EQ(device.master.size(), host.master.size());
    EXPECT_EQ(0, std::memcmp(device.master.data(), host.master.data(),
                             host.master.size() * sizeof(float)))
        << "the master weights differ";
    EXPECT_EQ(device.peakBytes, host.peakBytes) << "peak model-state bytes";
  }

  EmulatedDevice device_;
  zcclComm_t comm_ = nullptr;
};

TEST_F(ZeroOnDevice, EmulatedDeviceTrainsAsTheHost) {
  zccl::installDeviceRuntime(device_.runtime());
  EmulatedStateMemory memory(device_);
  for (const Setting& setting : kSettings) {
    const Trace host = train(setting, nullptr, 6);
    const Trace onDevice = train(setting, &memory, 6);
    expectAlike(host, onDevice, setting.name);
  }
  device_.synchronize();  // the releases queued last
}

// A GPU shared by the ranks (staged) or one each: CUDA's conversions and Adam update give the
// host's bits.
TEST_F(ZeroOnDevice, GpuTrainsAsTheHost) {
  std::string why;
  std::unique_ptr<StateMemory> memory = zccl::zero::makeCudaStateMemory(-1, &why);
  if (memory == nullptr) GTEST_SKIP() << why;
  for (const Setting& setting : kSettings) {
    const Trace host = train(setting, nullptr, 6);
    const Trace onDevice = train(setting, memory.get(), 6);
    expectAlike(host, onDevice, setting.name);
  }
}

}  // namespace
}  // namespace zccl_harness
