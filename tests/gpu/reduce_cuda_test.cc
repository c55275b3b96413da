// The CUDA reductions against the CPU's: every type and op, reduce-into, ordered reductions
// of 1 to 33 inputs, the average's division, and the quantized paths' float32 accumulations,
// byte for byte (NaN as NaN) on random bit patterns (NaN, Inf, zeros of both signs and
// subnormals included). Skips (exit 77) when no CUDA device is visible.
#include "kernels/reduce_cuda.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/half.h"
#include "gpu/cuda_test_support.h"
#include "kernels/reduce.h"
#include "quant/quantize.h"

namespace zccl {
namespace {

constexpr DataType kTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                               DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                               DataType::kFloat16, DataType::kBfloat16, DataType::kFloat32,
                               DataType::kFloat64};
constexpr RedOp kOps[] = {RedOp::kSum, RedOp::kProd, RedOp::kMax, RedOp::kMin, RedOp::kAvg};
constexpr size_t kCount = 100003;  // several grid-stride rounds, divides by nothing

// Random element bytes; for floats, every fourth element a random bit pattern (specials of
// every kind) and the others values of moderate size, so that sums are not all Inf or NaN.
std::vector<unsigned char> randomElements(DataType type, size_t count, uint32_t seed) {
  std::mt19937_64 rng(seed);
  const size_t es = elementSize(type);
  std::vector<unsigned char> bytes(count * es);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = rng();
    if (i % 4 != 0) {
      const double value = static_cast<double>(static_cast<int64_t>(bits % 2001) - 1000) / 64;
      if (type == DataType::kFloat32) {
        const float f = static_cast<float>(value);
        std::memcpy(&bits, &f, 4);
      } else if (type == DataType::kFloat64) {
        std::memcpy(&bits, &value, 8);
      } else if (type == DataType::kFloat16) {
        bits = toFloat16(static_cast<float>(value)).bits;
      } else if (type == DataType::kBfloat16) {
        bits = toBfloat16(static_cast<float>(value)).bits;
      }
    }
    std::memcpy(&bytes[i * es], &bits, es);
  }
  return bytes;
}

class ReduceCuda : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_CUDA(cudaStreamCreate(&stream_)); }
  void TearDown() override { cudaStreamDestroy(stream_); }

  std::vector<unsigned char> download(const DeviceBuffer& buffer, size_t bytes) {
    std::vector<unsigned char> host(bytes);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(host.data(), buffer.get(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
  void upload(DeviceBuffer& buffer, const std::vector<unsigned char>& host) {
    ASSERT_EQ(cudaMemcpy(buffer.get(), host.data(), host.size(), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  static void expectSame(const std::vector<unsigned char>& gpu,
                         const std::vector<unsigned char>& cpu, DataType type,
                         const std::string& what) {
    const size_t es = elementSize(type);
    size_t differing = 0;
    for (size_t i = 0; i < cpu.size() / es; ++i) {
      if (sameValue(&gpu[i * es], &cpu[i * es], type)) continue;
      if (differing++ == 0) ADD_FAILURE() << what << ": element " << i << " differs";
    }
    EXPECT_EQ(differing, 0u) << what;
  }

  cudaStream_t stream_ = nullptr;
};

TEST_F(ReduceCuda, ReduceIntoMatchesTheCpu) {
  for (DataType type : kTypes) {
    for (RedOp op : kOps) {
      const auto a = randomElements(type, kCount, 1), b = randomElements(type, kCount, 2);
      DeviceBuffer dA(a.size()), dB(b.size());
      upload(dA, a);
      upload(dB, b);
      ASSERT_EQ(reduceIntoCuda(dA.get(), dB.get(), kCount, type, op, stream_), Status::kSuccess);
      auto cpu = a;
      reduceInto(cpu.data(), b.data(), kCount, type, op);
      expectSame(download(dA, a.size()), cpu, type,
                 std::string("reduceInto ") + dataTypeName(type) + " " + redOpName(op));
    }
  }
}

TEST_F(ReduceCuda, OrderedReductionsMatchTheCpu) {
  for (DataType type : kTypes) {
    for (RedOp op : kOps) {
      for (int inputs : {1, 2, 3, 7, 33}) {
        std::vector<std::vector<unsigned char>> host;
        std::vector<DeviceBuffer*> device;
        std::vector<const void*> cpuPointers, gpuPointers;
        for (int k = 0; k < inputs; ++k) {
          host.push_back(randomElements(type, kCount, 10 + static_cast<uint32_t>(k)));
        }
        for (int k = 0; k < inputs; ++k) {
          device.push_back(new DeviceBuffer(host[k].size()));
          upload(*device.back(), host[k]);
          cpuPointers.push_back(host[k].data());
          gpuPointers.push_back(device.back()->get());
        }
        DeviceBuffer out(host[0].size());
        ASSERT_EQ(
            reduceOrderedCuda(out.get(), gpuPointers.data(), inputs, kCount, type, op, stream_),
            Status::kSuccess);
        std::vector<unsigned char> cpu(host[0].size());
        reduceOrdered(cpu.data(), cpuPointers.data(), inputs, kCount, type, op);
        expectSame(download(out, cpu.size()), cpu, type,
                   std::string("reduceOrdered ") + dataTypeName(type) + " " + redOpName(op) +
                       " of " + std::to_string(inputs));
        for (DeviceBuffer* buffer : device) delete buffer;
      }
    }
  }
}

TEST_F(ReduceCuda, DivisionMatchesTheCpu) {
  for (DataType type : kTypes) {
    for (int divisor : {1, 3, 200}) {
      const auto data = randomElements(type, kCount, 5);
      DeviceBuffer d(data.size());
      upload(d, data);
      ASSERT_EQ(divideByCountCuda(d.get(), kCount, type, divisor, stream_), Status::kSuccess);
      auto cpu = data;
      divideByCount(cpu.data(), kCount, type, divisor);
      expectSame(
          download(d, data.size()), cpu, type,
          std::string("divideByCount ") + dataTypeName(type) + " / " + std::to_string(divisor));
    }
  }
}

TEST_F(ReduceCuda, FloatAccumulationsMatchTheCpu) {
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
    const auto x = randomElements(type, kCount, 7);
    const auto start = randomElements(DataType::kFloat32, kCount, 8);
    DeviceBuffer dX(x.size()), dAcc(start.size()), dOut(x.size());
    upload(dX, x);
    upload(dAcc, start);
    ASSERT_EQ(
        accumulateAsFloatCuda(dX.get(), type, kCount, static_cast<float*>(dAcc.get()), stream_),
        Status::kSuccess);
    auto cpu = start;
    ASSERT_EQ(accumulateAsFloat(x.data(), type, kCount, reinterpret_cast<float*>(cpu.data())),
              Status::kSuccess);
    expectSame(download(dAcc, cpu.size()), cpu, DataType::kFloat32,
               std::string("accumulateAsFloat ") + dataTypeName(type));
    for (int divisor : {1, 6}) {
      auto values = cpu;
      upload(dAcc, values);
      ASSERT_EQ(storeFloatAsCuda(static_cast<float*>(dAcc.get()), kCount, divisor, type, dOut.get(),
                                 stream_),
                Status::kSuccess);
      std::vector<unsigned char> narrow(x.size());
      ASSERT_EQ(storeFloatAs(reinterpret_cast<float*>(values.data()), kCount, divisor, type,
                             narrow.data()),
                Status::kSuccess);
      expectSame(
          download(dOut, narrow.size()), narrow, type,
          std::string("storeFloatAs ") + dataTypeName(type) + " / " + std::to_string(divisor));
    }
  }
}

TEST_F(ReduceCuda, TooManyOrderedInputsIsAnErrorNotACrash) {
  std::vector<const void*> inputs(kMaxOrderedInputsCuda + 1, nullptr);
  EXPECT_EQ(reduceOrderedCuda(nullptr, inputs.data(), static_cast<int>(inputs.size()), 10,
                              DataType::kFloat32, RedOp::kSum, stream_),
            Status::kInvalidUsage);
}

// Every kernel loads (the device path loads them before its first gate).
TEST_F(ReduceCuda, EveryKernelPreloads) {
  EXPECT_EQ(preloadReduceKernelsCuda(), Status::kSuccess) << lastThreadError();
}

}  // namespace
}  // namespace zccl

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device visible: skipping the CUDA reduction tests\n");
    return 77;  // ctest SKIP_RETURN_CODE
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
