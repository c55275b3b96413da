// The CUDA quantization kernels against the CPU reference: messages byte for byte, decoded
// values bit for bit (NaN as NaN), on a stream of the test's own. Skips (exit 77) when no
// CUDA device is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/half.h"
#include "gpu/cuda_test_support.h"
#include "quant/quantize.h"
#include "quant/quantize_cuda.h"

namespace zccl {
namespace {

class QuantCuda : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_CUDA(cudaStreamCreate(&stream_)); }
  void TearDown() override { cudaStreamDestroy(stream_); }
  void dequantizeAccumulateMatchesTheCpu(bool smoothing);
  cudaStream_t stream_ = nullptr;
};

// Input values as raw element bytes of `type`, with specials sprinkled in.
std::vector<unsigned char> makeInput(DataType type, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(count);
  for (size_t i = 0; i < count; ++i) {
    x[i] = normal(rng) * (i % 1000 < 500 ? 1.0f : 1e-30f);
  }
  if (count > 3000) x[2999] = NAN, x[2000] = -0.0f, x[2001] = 1e-41f;
  std::vector<unsigned char> bytes(count * elementSize(type));
  for (size_t i = 0; i < count; ++i) {
    if (type == DataType::kFloat32) {
      std::memcpy(&bytes[4 * i], &x[i], 4);
    } else {
      const uint16_t h = type == DataType::kFloat16 ? toFloat16(x[i]).bits : toBfloat16(x[i]).bits;
      std::memcpy(&bytes[2 * i], &h, 2);
    }
  }
  return bytes;
}

TEST_F(QuantCuda, MessagesAndDecodedValuesMatchTheCpuReference) {
  for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{33}, size_t{4097}, size_t{100003}}) {
      const auto input = makeInput(type, count, static_cast<uint32_t>(count));
      DeviceBuffer dIn(input.size());
      ASSERT_CUDA(cudaMemcpy(dIn.get(), input.data(), input.size(), cudaMemcpyHostToDevice));
      for (int bits : {8, 4, 2}) {
        for (QuantScheme scheme : {QuantScheme::kSymmetric, QuantScheme::kAsymmetric}) {
          for (uint32_t group : {32u, 512u, 4096u}) {
            for (int variant = 0; variant < 4; ++variant) {
              const Rounding rounding =
                  variant % 2 ? Rounding::kStochastic : Rounding::kNearestEven;
              QuantParams p{bits, scheme, group, rounding, 0x123456789abcull};
              p.smoothing = variant >= 2;  // the random-sign Hadamard rotation
              SCOPED_TRACE(::testing::Message()
                           << dataTypeName(type) << " count=" << count << " bits=" << bits
                           << " scheme=" << static_cast<int>(scheme) << " group=" << group
                           << " rounding=" << static_cast<int>(rounding)
                           << " smoothing=" << p.smoothing);
              const size_t bytes = quantizedBytes(count, p);
              std::vector<unsigned char> cpu(bytes), gpu(bytes);
              ASSERT_EQ(Status::kSuccess,
                        quantize(input.data(), type, count, p, cpu.data(), bytes));
              DeviceBuffer dMsg(bytes);
              ASSERT_EQ(Status::kSuccess,
                        quantizeCuda(dIn.get(), type, count, p, dMsg.get(), bytes, stream_));
              ASSERT_CUDA(
                  cudaMemcpyAsync(gpu.data(), dMsg.get(), bytes, cudaMemcpyDeviceToHost, stream_));
              ASSERT_CUDA(cudaStreamSynchronize(stream_));
              // Byte for byte, the NaN scale of a non-finite group included.
              ASSERT_EQ(cpu.size(), gpu.size());
              for (size_t b = 0; b < bytes; ++b) {
                if (cpu[b] != gpu[b]) {
                  ADD_FAILURE() << "message byte " << b << " of " << bytes << ": cpu "
                                << int(cpu[b]) << " gpu " << int(gpu[b]);
                  break;
                }
              }
              const size_t es = elementSize(type);
              std::vector<unsigned char> cpuOut(count * es), gpuOut(count * es);
              ASSERT_EQ(Status::kSuccess,
                        dequantize(cpu.data(), bytes, cpuOut.data(), type, count));
              DeviceBuffer dOut(count * es);
              ASSERT_EQ(Status::kSuccess,
                        dequantizeCuda(dMsg.get(), bytes, dOut.get(), type, count, stream_));
              ASSERT_CUDA(cudaMemcpyAsync(gpuOut.data(), dOut.get(), count * es,
                                          cudaMemcpyDeviceToHost, stream_));
              ASSERT_CUDA(cudaStreamSynchronize(stream_));
              for (size_t i = 0; i < count; ++i) {
                if (!sameValue(&cpuOut[i * es], &gpuOut[i * es], type)) {
                  ADD_FAILURE() << "decoded element " << i;
                  break;
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(QuantCuda, DequantizeAccumulateMatchesTheCpu) {
  for (bool smoothing : {false, true}) {
    SCOPED_TRACE(smoothing ? "smoothed" : "plain");
    dequantizeAccumulateMatchesTheCpu(smoothing);
  }
}

void QuantCuda::dequantizeAccumulateMatchesTheCpu(bool smoothing) {
  const size_t count = 70001;
  const auto input = makeInput(DataType::kFloat32, count, 5);
  QuantParams p{4, QuantScheme::kSymmetric, 256, Rounding::kNearestEven, 7};
  p.smoothing = smoothing;
  const size_t bytes = quantizedBytes(count, p);
  std::vector<unsigned char> message(bytes);
  ASSERT_EQ(Status::kSuccess,
            quantize(input.data(), DataType::kFloat32, count, p, message.data(), bytes));
  std::vector<float> cpu(count, 0.5f), gpu(count);
  ASSERT_EQ(Status::kSuccess, dequantizeAccumulate(message.data(), bytes, cpu.data(), count));
  DeviceBuffer dMsg(bytes), dAcc(count * 4);
  std::vector<float> start(count, 0.5f);
  ASSERT_CUDA(cudaMemcpy(dMsg.get(), message.data(), bytes, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(dAcc.get(), start.data(), count * 4, cudaMemcpyHostToDevice));
  ASSERT_EQ(
      Status::kSuccess,
      dequantizeAccumulateCuda(dMsg.get(), bytes, static_cast<float*>(dAcc.get()), count, stream_));
  ASSERT_CUDA(cudaMemcpyAsync(gpu.data(), dAcc.get(), count * 4, cudaMemcpyDeviceToHost, stream_));
  ASSERT_CUDA(cudaStreamSynchronize(stream_));
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(sameValue(reinterpret_cast<unsigned char*>(&cpu[i]),
                          reinterpret_cast<unsigned char*>(&gpu[i]), DataType::kFloat32))
        << i;
  }
}

// Every kernel loads (the device path loads them before its first gate).
TEST_F(QuantCuda, EveryKernelPreloads) {
  EXPECT_EQ(preloadQuantizeKernelsCuda(), Status::kSuccess) << lastThreadError();
}

TEST_F(QuantCuda, ShortOrCorruptMessagesAreRejected) {
  const size_t count = 1000;
  const auto input = makeInput(DataType::kFloat32, count, 9);
  const QuantParams p{8, QuantScheme::kSymmetric, 64, Rounding::kNearestEven, 0};
  const size_t bytes = quantizedBytes(count, p);
  DeviceBuffer dIn(count * 4), dMsg(bytes), dOut(count * 4);
  ASSERT_CUDA(cudaMemcpy(dIn.get(), input.data(), count * 4, cudaMemcpyHostToDevice));
  ASSERT_EQ(Status::kSuccess,
            quantizeCuda(dIn.get(), DataType::kFloat32, count, p, dMsg.get(), bytes, stream_));
  EXPECT_EQ(Status::kInvalidArgument,
            dequantizeCuda(dMsg.get(), bytes - 1, dOut.get(), DataType::kFloat32, count, stream_));
  EXPECT_EQ(Status::kInvalidArgument,
            dequantizeCuda(dMsg.get(), 10, dOut.get(), DataType::kFloat32, count, stream_));
  EXPECT_EQ(Status::kInvalidArgument,
            dequantizeCuda(dMsg.get(), bytes, dOut.get(), DataType::kFloat32, 999, stream_));
  EXPECT_EQ(Status::kInvalidArgument,
            quantizeCuda(dIn.get(), DataType::kFloat32, count, p, dMsg.get(), bytes - 1, stream_));
  EXPECT_NE(lastThreadError().find("capacity="), std::string::npos);
  ASSERT_CUDA(cudaMemset(dMsg.get(), 0, 4));  // break the magic
  EXPECT_EQ(Status::kInvalidArgument,
            dequantizeCuda(dMsg.get(), bytes, dOut.get(), DataType::kFloat32, count, stream_));
}

}  // namespace
}  // namespace zccl

int main(int argc, char** argv) {
  if (!zccl::quantCudaAvailable()) {
    std::printf("no CUDA device visible: skipping the CUDA quantization tests\n");
    return 77;  // ctest SKIP_RETURN_CODE
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
