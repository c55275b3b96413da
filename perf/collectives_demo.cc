// Runs every collective on a few sizes with zccl's own algorithms and with MPI's native
// ones, checks every result against the value it must have, and prints the timings.
//   mpiexec -n 4 collectives_demo
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "zccl/zccl_mpi.h"

namespace {

#define DEMO_CHECK(call)                                                         \
  do {                                                                           \
    const zcclResult_t demo_result_ = (call);                                    \
    if (demo_result_ != zcclSuccess) {                                           \
      std::fprintf(stderr, "%s failed: %s\n", #call, zcclGetLastError(nullptr)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                              \
    }                                                                            \
  } while (0)

struct Buffers {
  std::vector<float> send, recv;
  size_t block = 0;  // elements per rank's block
};

// A collective in three parts, so that only the call itself is timed.
struct Case {
  const char* name;
  double busFactor;  // nccl-tests' bus bandwidth factor
  std::function<void(Buffers&, size_t count)> prepare;
  std::function<void(zcclComm_t, Buffers&)> call;
  std::function<float(const Buffers&, size_t i)> expected;  // element i of recv
};

int rank = 0, ranks = 1;

// Element i of rank r's input: small integers, so every sum is exact.
float input(int r, size_t i) { return static_cast<float>((r * 7 + i) % 13); }

float sumOverRanks(size_t i) {
  float sum = 0;
  for (int r = 0; r < ranks; ++r) sum += input(r, i);
  return sum;
}

void fill(std::vector<float>& v, size_t count, int r) {
  v.resize(count);
  for (size_t i = 0; i < count; ++i) v[i] = input(r, i);
}

std::vector<Case> cases() {
  const size_t n = static_cast<size_t>(ranks);
  return {
      {"all_gather", (n - 1.0) / n,
       [n](Buffers& b, size_t count) {
         b.block = count / n;
         fill(b.send, b.block, rank);
         b.recv.assign(b.block * n, -1.0f);
       },
       [](zcclComm_t comm, Buffers& b) {
         DEMO_CHECK(
             zcclAllGather(b.send.data(), b.recv.data(), b.block, zcclFloat32, comm, nullptr));
       },
       [](const Buffers& b, size_t i) { return input(int(i / b.block), i % b.block); }},
      {"reduce_scatter", (n - 1.0) / n,
       [n](Buffers& b, size_t count) {
         b.block = count / n;
         fill(b.send, b.block * n, rank);
         b.recv.assign(b.block, -1.0f);
       },
       [](zcclComm_t comm, Buffers& b) {
         DEMO_CHECK(zcclReduceScatter(b.send.data(), b.recv.data(), b.block, zcclFloat32, zcclSum,
                                      comm, nullptr));
       },
       [](const Buffers& b, size_t i) { return sumOverRanks(rank * b.block + i); }},
      {"all_reduce", 2 * (n - 1.0) / n,
       [](Buffers& b, size_t count) {
         fill(b.send, count, rank);
         b.recv.assign(count, -1.0f);
       },
       [](zcclComm_t comm, Buffers& b) {
         DEMO_CHECK(zcclAllReduce(b.send.data(), b.recv.data(), b.send.size(), zcclFloat32, zcclSum,
                                  comm, nullptr));
       },
       [](const Buffers&, size_t i) { return sumOverRanks(i); }},
      {"broadcast", 1.0,
       [](Buffers& b, size_t count) {
         fill(b.send, count, 0);
         b.recv.assign(count, -1.0f);
       },
       [](zcclComm_t comm, Buffers& b) {
         DEMO_CHECK(zcclBroadcast(b.send.data(), b.recv.data(), b.recv.size(), zcclFloat32, 0, comm,
                                  nullptr));
       },
       [](const Buffers&, size_t i) { return input(0, i); }},
      {"alltoall", (n - 1.0) / n,
       [n](Buffers& b, size_t count) {
         b.block = count / n;
         fill(b.send, b.block * n, rank);
         b.recv.assign(b.block * n, -1.0f);
       },
       [](zcclComm_t comm, Buffers& b) {
         DEMO_CHECK(
             zcclAllToAll(b.send.data(), b.recv.data(), b.block, zcclFloat32, comm, nullptr));
       },
       [](const Buffers& b, size_t i) {
         return input(int(i / b.block), rank * b.block + i % b.block);
       }},
  };
}

// Runs the case once on fresh buffers and counts the elements that differ from the expected.
size_t verify(const Case& c, zcclComm_t comm, Buffers& b, size_t count) {
  c.prepare(b, count);
  c.call(comm, b);
  size_t wrong = 0;
  for (size_t i = 0; i < b.recv.size(); ++i) wrong += b.recv[i] != c.expected(b, i) ? 1 : 0;
  return wrong;
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
      Buffers b;
      size_t wrong = verify(c, own, b, count);
      const double ownSeconds = timeIt([&] { c.call(own, b); }, 5);
      wrong += verify(c, native, b, count);
      const double nativeSeconds = timeIt([&] { c.call(native, b); }, 5);
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
    std::printf(
        "# us: mean of 5 calls after a warm-up, slowest rank; busbw in GB/s as nccl-tests\n");
    std::printf(
        "# rank 0 sent %llu bytes in %llu messages (self %llu, intra-node %llu, "
        "inter-node %llu bytes)\n",
        static_cast<unsigned long long>(stats.bytesSent[0] + stats.bytesSent[1] +
                                        stats.bytesSent[2]),
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
