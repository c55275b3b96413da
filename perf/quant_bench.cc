// Quantization throughput in GB/s of (unquantized) input, with memcpy of the same bytes
// measured in the same run as the baseline, and a reduction's; the fused kernels beside their
// unfused steps. Single core.
//   quant_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "common/half.h"
#include "kernels/kernels.h"
#include "quant/quantize.h"

namespace zccl {
namespace {

constexpr size_t kElements = size_t{4} << 20;  // 16 MiB of float32: beyond the caches

const std::vector<float>& normalData() {
  static const std::vector<float> data = [] {
    std::vector<float> v(kElements);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    for (auto& x : v) x = normal(rng);
    return v;
  }();
  return data;
}

// The input in `type`, as raw bytes.
std::vector<char> input(DataType type) {
  const auto& f = normalData();
  std::vector<char> bytes(kElements * elementSize(type));
  for (size_t i = 0; i < kElements; ++i) {
    if (type == DataType::kFloat32) reinterpret_cast<float*>(bytes.data())[i] = f[i];
    if (type == DataType::kFloat16) reinterpret_cast<float16_t*>(bytes.data())[i] = toFloat16(f[i]);
    if (type == DataType::kBfloat16)
      reinterpret_cast<bfloat16_t*>(bytes.data())[i] = toBfloat16(f[i]);
  }
  return bytes;
}

QuantParams paramsFrom(const benchmark::State& state) {
  QuantParams p;
  p.bits = static_cast<int>(state.range(0));
  p.scheme = static_cast<QuantScheme>(state.range(1));
  p.groupSize = static_cast<uint32_t>(state.range(3));
  p.smoothing = state.range(4) != 0;
  return p;
}

void labelFor(benchmark::State& state, DataType type) {
  const QuantParams p = paramsFrom(state);
  state.SetLabel(std::string("int") + std::to_string(p.bits) +
                 (p.scheme == QuantScheme::kSymmetric ? " sym " : " asym ") + dataTypeName(type) +
                 " group " + std::to_string(p.groupSize) + (p.smoothing ? " smoothed" : "") + " [" +
                 quantKernelName() + "]");
}

void BM_Quantize(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(2));
  const QuantParams p = paramsFrom(state);
  const auto in = input(type);
  std::vector<unsigned char> out(quantizedBytes(kElements, p));
  for (auto _ : state) {
    if (quantize(in.data(), type, kElements, p, out.data(), out.size()) != Status::kSuccess) {
      state.SkipWithError("quantize failed");
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  labelFor(state, type);
}

void BM_Dequantize(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(2));
  const QuantParams p = paramsFrom(state);
  const auto in = input(type);
  std::vector<unsigned char> message(quantizedBytes(kElements, p));
  quantize(in.data(), type, kElements, p, message.data(), message.size());
  std::vector<char> out(in.size());
  for (auto _ : state) {
    if (dequantize(message.data(), message.size(), out.data(), type, kElements) !=
        Status::kSuccess) {
      state.SkipWithError("dequantize failed");
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  labelFor(state, type);
}

void BM_DequantizeAccumulate(benchmark::State& state) {
  const QuantParams p = paramsFrom(state);
  const auto in = input(DataType::kFloat32);
  std::vector<unsigned char> message(quantizedBytes(kElements, p));
  quantize(in.data(), DataType::kFloat32, kElements, p, message.data(), message.size());
  std::vector<float> accumulator(kElements, 0.0f);
  for (auto _ : state) {
    if (dequantizeAccumulate(message.data(), message.size(), accumulator.data(), kElements) !=
        Status::kSuccess) {
      state.SkipWithError("dequantizeAccumulate failed");
    }
    benchmark::DoNotOptimize(accumulator.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  labelFor(state, DataType::kFloat32);
}

// The baseline: copying the same number of input bytes.
void BM_Memcpy(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(0));
  const auto in = input(type);
  std::vector<char> out(in.size());
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), in.size());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.SetLabel(std::string("memcpy of ") + dataTypeName(type) + " input bytes");
}

// A reduction's rate, in bytes of one input (what the simulator prices reductions by).
void BM_ReduceInto(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(0));
  const auto in = input(type);
  auto inout = in;
  for (auto _ : state) {
    if (hostKernels().reduceInto(inout.data(), in.data(), kElements, type, RedOp::kSum) !=
        Status::kSuccess) {
      state.SkipWithError("reduceInto failed");
    }
    benchmark::DoNotOptimize(inout.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.SetLabel(std::string("sum into ") + dataTypeName(type) + " bytes");
}

// Work on a float32 accumulator (here adding `type` values into it), in its bytes.
void BM_AccumulateAsFloat(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(0));
  const auto in = input(type);
  std::vector<float> accumulator(kElements, 0.0f);
  for (auto _ : state) {
    if (hostKernels().accumulateAsFloat(in.data(), type, kElements, accumulator.data()) !=
        Status::kSuccess) {
      state.SkipWithError("accumulateAsFloat failed");
    }
    benchmark::DoNotOptimize(accumulator.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kElements * sizeof(float)));
  state.SetLabel(std::string(dataTypeName(type)) + " into float32 bytes");
}

// The fused kernels against their unfused steps (what a device runs), in the same run:
// range(0) the type, range(1) 1 for the host's fused kernel.
Kernels& kernelsFor(const benchmark::State& state) {
  return state.range(1) != 0 ? hostKernels() : unfusedHostKernels();
}
const char* fusion(const benchmark::State& state) {
  return state.range(1) != 0 ? " fused" : " unfused steps";
}

// A gathered change added to its reference, stored and copied out, in bytes of the values.
void BM_StoreSumAs(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(0));
  auto reference = input(type);
  std::vector<char> copy(reference.size());
  std::vector<float> change(kElements, 0.0f), scratch(kElements);
  Kernels& k = kernelsFor(state);
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(scratch.data(), change.data(), kElements * sizeof(float));
    state.ResumeTiming();
    if (k.storeSumAs(reference.data(), type, kElements, scratch.data(), reference.data(),
                     copy.data()) != Status::kSuccess) {
      state.SkipWithError("storeSumAs failed");
    }
    benchmark::DoNotOptimize(copy.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * reference.size()));
  state.SetLabel(std::string(dataTypeName(type)) + " reference plus float32 change" +
                 fusion(state));
}

// A gathered INT4 change decoded onto its reference, stored and copied out (the weight
// differences' all-gather), in bytes of the values; unfused: decoded to float32, then added.
void BM_DequantizeOnto(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(0));
  auto reference = input(type);
  std::vector<char> copy(reference.size());
  QuantParams p;
  p.bits = 4;
  std::vector<float> change(kElements, 0.0f), work(kElements);
  std::vector<unsigned char> message(quantizedBytes(kElements, p));
  quantize(change.data(), DataType::kFloat32, kElements, p, message.data(), message.size());
  const SumTarget target{reference.data(), type, reference.data(), copy.data()};
  Kernels& k = kernelsFor(state);
  for (auto _ : state) {
    if (k.dequantizeOnto(message.data(), message.size(), p, kElements, target, work.data()) !=
        Status::kSuccess) {
      state.SkipWithError("dequantizeOnto failed");
    }
    benchmark::DoNotOptimize(copy.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * reference.size()));
  state.SetLabel(std::string(dataTypeName(type)) + " reference plus int4 change" + fusion(state) +
                 " [" + quantKernelName() + "]");
}

// INT4 quantization with error feedback (residual added, what was lost kept), in bytes of input;
// residuals in float32, bfloat16 or int8 (one message, as one owner's).
void BM_QuantizeWithFeedback(benchmark::State& state) {
  const DataType type = static_cast<DataType>(state.range(0));
  const DataType residualType = static_cast<DataType>(state.range(2));
  const auto in = input(type);
  QuantParams p;
  p.bits = 4;
  std::vector<unsigned char> message(quantizedBytes(kElements, p));
  std::vector<unsigned char> residual(residualBytes(residualType, kElements, 1), 0);
  std::vector<float> work(kElements);
  Kernels& k = kernelsFor(state);
  for (auto _ : state) {
    if (k.quantizeWithFeedback(in.data(), type, kElements, p, message.data(), message.size(),
                               residualsIn(residual.data(), residualType, kElements),
                               work.data()) != Status::kSuccess) {
      state.SkipWithError("quantizeWithFeedback failed");
    }
    benchmark::DoNotOptimize(message.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
  state.SetLabel(std::string("int4 sym ") + dataTypeName(type) + " with error feedback (" +
                 dataTypeName(residualType) + " residuals)" + fusion(state) + " [" +
                 quantKernelName() + "]");
}

constexpr int kF32 = static_cast<int>(DataType::kFloat32);
constexpr int kF16 = static_cast<int>(DataType::kFloat16);
constexpr int kBf16 = static_cast<int>(DataType::kBfloat16);
constexpr int kI8 = static_cast<int>(DataType::kInt8);

void formats(benchmark::internal::Benchmark* b) {
  for (int bits : {8, 4, 2})
    for (int scheme : {0, 1})
      for (int type : {kF32, kF16, kBf16}) b->Args({bits, scheme, type, kDefaultGroupSize, 0});
  // Smoothing's rotation on top (every smoothed group, both ways).
  for (int type : {kF32, kBf16}) b->Args({4, 0, type, kDefaultGroupSize, 1});
}

void groupSizes(benchmark::internal::Benchmark* b) {
  for (int group = 32; group <= 4096; group *= 2) b->Args({8, 0, kF32, group, 0});
}

BENCHMARK(BM_Memcpy)->Arg(kF32)->Arg(kBf16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReduceInto)->Arg(kF32)->Arg(kBf16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AccumulateAsFloat)->Arg(kF32)->Arg(kBf16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Quantize)->Apply(formats)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Dequantize)->Apply(formats)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DequantizeAccumulate)
    ->Args({8, 0, kF32, kDefaultGroupSize, 0})
    ->Args({4, 0, kF32, kDefaultGroupSize, 0})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StoreSumAs)->ArgsProduct({{kF32, kBf16}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DequantizeOnto)->ArgsProduct({{kF32, kBf16}, {0, 1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QuantizeWithFeedback)
    ->ArgsProduct({{kF32, kBf16}, {0, 1}, {kF32, kBf16, kI8}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Quantize)
    ->Name("BM_QuantizeGroupSize")
    ->Apply(groupSizes)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace zccl

BENCHMARK_MAIN();
