// Runs every collective on a few sizes with zccl's own algorithms and with MPI's native
// ones, checks every result against the value it must have, and prints the timings.
//   mpiexec -n 4 collectives_demo
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "zccl/zccl.h"

namespace {

#define DEMO_CHECK(call)                                                                  \
  do {                                                                                    \
    const zcclResult_t demo_result_ = (call);                                             \
    if (demo_result_ != zcclSuccess) {                                                    \
      std::fprintf(stderr, "%s failed: %s\n", #call, zcclGetLastError(nullptr));          \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
    }                                                                                     \
  } while (0)

struct Case {
  const char* name;
  double busFactor;  // nccl-tests' bus bandwidth factor
  // Runs the collective on buffers of `count` floats per rank; returns wrong elements.
  std::function<size_t(zcclComm_t, size_t)> run;
};

int rank = 0, ranks = 1;

// Element i of rank r's input: small integers, so every sum is exact.
float input(int r, size_t i) { return static_cast<float>((r * 7 + i) % 13); }

size_t countWrong(const std::vector<float>& got, const std::function<float(size_t)>& want) {
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != want(i) ? 1 : 0;
  return wrong;
}

float sumOverRanks(size_t i) {
  float sum = 0;
  for (int r = 0; r < ranks; ++r) sum += input(r, i);
  return sum;
}

std::vector<Case> cases() {
  const size_t n = static_cast<size_t>(ranks);
  return {
      {"all_gather", (n - 1.0) / n,
       [n](zcclComm_t comm, size_t count) {
         std::vector<float> send(count / n), recv(count / n * n);
         for (size_t i = 0; i < send.size(); ++i) send[i] = input(rank, i);
         DEMO_CHECK(zcclAllGather(send.data(), recv.data(), send.size(), zcclFloat32, comm, nullptr));
         const size_t block = send.size();
         return countWrong(recv, [block](size_t i) { return input(int(i / block), i % block); });
       }},
      {"reduce_scatter", (n - 1.0) / n,
       [n](zcclComm_t comm, size_t count) {
         std::vector<float> send(count / n * n), recv(count / n);
         for (size_t i = 0; i < send.size(); ++i) send[i] = input(rank, i);
         DEMO_CHECK(zcclReduceScatter(send.data(), recv.data(), recv.size(), zcclFloat32, zcclSum,
                                      comm, nullptr));
         const size_t first = rank * recv.size();
         return countWrong(recv, [first](size_t i) { return sumOverRanks(first + i); });
       }},
      {"all_reduce", 2 * (n - 1.0) / n,
       [](zcclComm_t comm, size_t count) {
         std::vector<float> data(count);
         for (size_t i = 0; i < count; ++i) data[i] = input(rank, i);
         DEMO_CHECK(zcclAllReduce(data.data(), data.data(), count, zcclFloat32, zcclSum, comm,
                                  nullptr));
         return countWrong(data, sumOverRanks);
       }},
      {"broadcast", 1.0,
       [](zcclComm_t comm, size_t count) {
         std::vector<float> data(count);
         for (size_t i = 0; i < count; ++i) data[i] = rank == 0 ? input(0, i) : -1.0f;
         DEMO_CHECK(zcclBroadcast(data.data(), data.data(), count, zcclFloat32, 0, comm, nullptr));
         return countWrong(data, [](size_t i) { return input(0, i); });
       }},
      {"alltoall", (n - 1.0) / n,
       [n](zcclComm_t comm, size_t count) {
         const size_t block = count / n;
         std::vector<float> send(block * n), recv(block * n);
         for (size_t i = 0; i < send.size(); ++i) send[i] = input(rank, i);
         DEMO_CHECK(zcclAllToAll(send.data(), recv.data(), block, zcclFloat32, comm, nullptr));
         return countWrong(recv, [block](size_t i) {
           return input(int(i / block), rank * block + i % block);
         });
       }},
  };
}

// Mean seconds per call over `iterations`, the slowest rank's.
double timeIt(const std::function<void()>& body, int iterations) {
  body();  // warm-up (scratch buffers, connections)
  MPI_Barrier(MPI_COMM_WORLD);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) body();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds / iterations;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.algorithm = zcclAlgoAuto;
  zcclComm_t own = nullptr, native = nullptr;
  DEMO_CHECK(zcclCommInitMPI(MPI_COMM_WORLD, &config, &own));
  config.algorithm = zcclAlgoNative;
  DEMO_CHECK(zcclCommInitMPI(MPI_COMM_WORLD, &config, &native));
  if (rank == 0) {
    std::printf("# zccl collectives demo: %d ranks, float32, host memory over MPI\n", ranks);
    std::printf("# %-15s %10s  %10s %9s %9s  %10s %9s  %6s\n", "collective", "bytes", "zccl us",
                "busbw", "#wrong", "native us", "busbw", "ratio");
  }
  size_t totalWrong = 0;
  for (const Case& c : cases()) {
    for (size_t bytes : {size_t{64} << 10, size_t{1} << 20, size_t{16} << 20}) {
      const size_t count = bytes / sizeof(float);
      size_t wrong = c.run(own, count);
      const double ownSeconds = timeIt([&] { wrong += c.run(own, count); }, 3);
      wrong += c.run(native, count);
      const double nativeSeconds = timeIt([&] { c.run(native, count); }, 3);
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
      totalWrong += wrong;
      const double ownBus = bytes / ownSeconds * c.busFactor / 1e9;
      const double nativeBus = bytes / nativeSeconds * c.busFactor / 1e9;
      if (rank == 0) {
        std::printf("  %-15s %10zu  %10.1f %8.2fG %9zu  %10.1f %8.2fG  %6.2f\n", c.name, bytes,
                    ownSeconds * 1e6, ownBus, wrong, nativeSeconds * 1e6, nativeBus,
                    ownBus / nativeBus);
      }
    }
  }
  zcclStats stats;
  DEMO_CHECK(zcclCommGetStats(own, &stats));
  if (rank == 0) {
    std::printf("# times include filling and checking the buffers; busbw in GB/s\n");
    std::printf("# rank 0 sent %llu bytes in %llu messages (self %llu, intra-node %llu, "
                "inter-node %llu bytes)\n",
                static_cast<unsigned long long>(stats.bytesSent[0] + stats.bytesSent[1] + stats.bytesSent[2]),
                static_cast<unsigned long long>(stats.messagesSent[0] + stats.messagesSent[1] +
                                                stats.messagesSent[2]),
                static_cast<unsigned long long>(stats.bytesSent[zcclLinkSelf]),
                static_cast<unsigned long long>(stats.bytesSent[zcclLinkIntraNode]),
                static_cast<unsigned long long>(stats.bytesSent[zcclLinkInterNode]));
    std::printf("# %s: %zu wrong elements\n", totalWrong == 0 ? "PASSED" : "FAILED", totalWrong);
  }
  DEMO_CHECK(zcclCommDestroy(own));
  DEMO_CHECK(zcclCommDestroy(native));
  MPI_Finalize();
  return totalWrong == 0 ? 0 : 1;
}
