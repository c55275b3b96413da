// The device path's CUDA kernels against a device-to-device copy of the same input bytes on the
// same stream, measured in the same run: GB/s of input bytes for quantize, dequantize,
// dequantize-accumulate (INT8 and INT4, symmetric, groups of 512 unless -g) and the two-input
// sum, for float32, float16 and bfloat16, at 16 MiB and 256 MiB of input (or -s BYTES).
//   kernels_cuda_bench [-s BYTES] [-g GROUP] [-n ITERATIONS]
// Exits 77 where no GPU is visible.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/half.h"
#include "kernels/reduce_cuda.h"
#include "quant/quantize_cuda.h"

namespace zccl {
namespace {

#define BENCH_CUDA(call)                                                         \
  do {                                                                           \
    const cudaError_t bench_error_ = (call);                                     \
    if (bench_error_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(bench_error_)); \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

struct Settings {
  std::vector<size_t> sizes{size_t{16} << 20, size_t{256} << 20};
  uint32_t group = 512;
  int iterations = 20;
};

// Mean seconds of one `step` on `stream`, after one unmeasured run.
double secondsPer(const std::function<Status()>& step, cudaStream_t stream, int iterations) {
  if (step() != Status::kSuccess) {
    std::fprintf(stderr, "kernels_cuda_bench: %s\n", lastThreadError().c_str());
    std::exit(1);
  }
  cudaEvent_t start, stop;
  BENCH_CUDA(cudaEventCreate(&start));
  BENCH_CUDA(cudaEventCreate(&stop));
  BENCH_CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iterations; ++i) step();
  BENCH_CUDA(cudaEventRecord(stop, stream));
  BENCH_CUDA(cudaEventSynchronize(stop));
  float milliseconds = 0;
  BENCH_CUDA(cudaEventElapsedTime(&milliseconds, start, stop));
  BENCH_CUDA(cudaEventDestroy(start));
  BENCH_CUDA(cudaEventDestroy(stop));
  return milliseconds / 1e3 / iterations;
}

// Normal-ish values of `type` (a fixed pattern: the kernels' speed does not depend on it).
void fill(void* device, DataType type, size_t count) {
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = static_cast<float>((i * 7919) % 2003) / 500 - 2;
  std::vector<unsigned char> bytes(count * elementSize(type));
  for (size_t i = 0; i < count; ++i) {
    if (type == DataType::kFloat32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t h =
          type == DataType::kFloat16 ? toFloat16(values[i]).bits : toBfloat16(values[i]).bits;
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  BENCH_CUDA(cudaMemcpy(device, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
}

void row(const char* kernel, DataType type, size_t bytes, double seconds, double copySeconds) {
  std::printf("| %-28s | %-8s | %4zu MiB | %8.1f | %8.1f | %5.2f |\n", kernel, dataTypeName(type),
              bytes >> 20, bytes / seconds / 1e9, bytes / copySeconds / 1e9, copySeconds / seconds);
}

void benchmarkType(DataType type, size_t inputBytes, const Settings& settings,
                   cudaStream_t stream) {
  const size_t count = inputBytes / elementSize(type);
  void *in, *copy, *out, *message, *accumulator;
  QuantParams params;
  params.groupSize = settings.group;
  params.bits = 8;
  const size_t messageBytes = quantizedBytes(count, params);
  BENCH_CUDA(cudaMalloc(&in, inputBytes));
  BENCH_CUDA(cudaMalloc(&copy, inputBytes));
  BENCH_CUDA(cudaMalloc(&out, inputBytes));
  BENCH_CUDA(cudaMalloc(&message, messageBytes));
  BENCH_CUDA(cudaMalloc(&accumulator, count * sizeof(float)));
  BENCH_CUDA(cudaMemset(accumulator, 0, count * sizeof(float)));
  fill(in, type, count);
  const int n = settings.iterations;
  const double copySeconds = secondsPer(
      [&] {
        return cudaMemcpyAsync(copy, in, inputBytes, cudaMemcpyDeviceToDevice, stream) ==
                       cudaSuccess
                   ? Status::kSuccess
                   : Status::kSystemError;
      },
      stream, n);
  row("copy (device to device)", type, inputBytes, copySeconds, copySeconds);
  for (int bits : {8, 4}) {
    params.bits = bits;
    const size_t size = quantizedBytes(count, params);
    const std::string name = "int" + std::to_string(bits);
    row((name + " quantize").c_str(), type, inputBytes,
        secondsPer([&] { return quantizeCuda(in, type, count, params, message, size, stream); },
                   stream, n),
        copySeconds);
    row((name + " dequantize").c_str(), type, inputBytes,
        secondsPer(
            [&] {
              return dequantizeKnownCuda(message, size, params, count, out, type, false, nullptr,
                                         stream);
            },
            stream, n),
        copySeconds);
    row((name + " dequantize-accumulate").c_str(), type, inputBytes,
        secondsPer(
            [&] {
              return dequantizeKnownCuda(message, size, params, count, accumulator,
                                         DataType::kFloat32, true, nullptr, stream);
            },
            stream, n),
        copySeconds);
  }
  row("sum into (2 inputs)", type, inputBytes,
      secondsPer([&] { return reduceIntoCuda(out, in, count, type, RedOp::kSum, stream); }, stream,
                 n),
      copySeconds);
  for (void* buffer : {in, copy, out, message, accumulator}) cudaFree(buffer);
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "-s" && value > 0) {
      s.sizes = {static_cast<size_t>(value)};
    } else if (flag == "-g" && value >= 32) {
      s.group = static_cast<uint32_t>(value);
    } else if (flag == "-n" && value > 0) {
      s.iterations = static_cast<int>(value);
    } else {
      std::fprintf(stderr, "usage: kernels_cuda_bench [-s BYTES] [-g GROUP] [-n ITERATIONS]\n");
      std::exit(2);
    }
  }
  return s;
}

}  // namespace
}  // namespace zccl

int main(int argc, char** argv) {
  using namespace zccl;
  const Settings settings = parse(argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("kernels_cuda_bench: no GPU visible\n");
    return 77;
  }
  cudaDeviceProp properties{};
  BENCH_CUDA(cudaGetDeviceProperties(&properties, 0));
  cudaStream_t stream;
  BENCH_CUDA(cudaStreamCreate(&stream));
  std::printf(
      "%s, groups of %u, %d iterations; GB/s of input bytes; x copy: the copy's time "
      "over the kernel's\n\n",
      properties.name, settings.group, settings.iterations);
  std::printf("| %-28s | %-8s | %8s | %8s | %8s | %5s |\n", "kernel", "type", "input", "GB/s",
              "copy", "x copy");
  std::printf("|---|---|---|---|---|---|\n");
  for (size_t bytes : settings.sizes) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16}) {
      benchmarkType(type, bytes, settings, stream);
    }
  }
  cudaStreamDestroy(stream);
  return 0;
}
