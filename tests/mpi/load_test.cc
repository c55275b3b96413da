// Long runs: 100,000 small all-reduces of random sizes and 1,000 16 MiB all-gathers, every
// result checked exactly, and the private resident memory flat after warm-up; 1,000 communicators
// created and destroyed leave no file descriptors or threads behind (memory: the sanitizer
// build's LeakSanitizer).
#include <dirent.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness/gtest.h"

namespace zccl_harness {
namespace {

// Entries of a /proc/self directory (fd, task).
int countEntries(const char* path) {
  DIR* dir = opendir(path);
  int count = 0;
  while (dirent* entry = readdir(dir)) count += entry->d_name[0] != '.' ? 1 : 0;
  closedir(dir);
  return count;
}

// Private resident memory in KiB (RssAnon: heaps, stacks), where a leak of zccl's or an
// engine's allocations shows. Shared memory is left out: the transports' shared-memory
// segments are resident in every process that touches them, and grow to a new high-water mark
// whenever a peer falls behind and more fragments wait in them (UCX over a loaded host: 1-9 MiB
// at a time, in most spans of 225 calls, while RssAnon stayed flat to the KiB over 3000 calls).
// Under AddressSanitizer its quarantine of freed memory grows it whatever the code does, and the
// check is the plain build's.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kResidentMeaningful = false;
#else
constexpr bool kResidentMeaningful = true;
#endif

long residentKiB() {
  FILE* status = std::fopen("/proc/self/status", "r");
  char line[256];
  long kib = 0;
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::sscanf(line, "RssAnon: %ld kB", &kib) == 1) break;
  }
  std::fclose(status);
  return kib;
}

// Resident memory after warm-up, sampled over the rest of the run in kSpans spans. A leak
// grows it in every span; a pool that reaches a new high-water mark now and then grows it in
// some. A span is flat within kSlackKiB, so a leak per call fails from about 2.3 KiB a call of
// the all-gathers.
class ResidentGrowth {
 public:
  // Call `call` of `calls`, warm after `warmUp`.
  void at(int call, int warmUp, int calls) {
    const int span = (calls - warmUp) / kSpans;
    if (call >= warmUp && (call - warmUp) % span == 0 && samples_.size() < kSpans) {
      samples_.push_back(residentKiB());
    }
  }
  void expectFlat() {
    if (!kResidentMeaningful) return;
    samples_.push_back(residentKiB());
    bool flatSpan = false;
    std::string trace;
    for (size_t i = 0; i < samples_.size(); ++i) {
      if (i > 0) flatSpan = flatSpan || samples_[i] - samples_[i - 1] <= kSlackKiB;
      trace += (i > 0 ? " -> " : "") + std::to_string(samples_[i]);
    }
    EXPECT_EQ(samples_.size(), kSpans + 1u);
    EXPECT_TRUE(flatSpan) << "private resident memory (RssAnon) grew in every span after warm-up: "
                          << trace << " KiB";
  }

 private:
  static constexpr size_t kSpans = 4;
  static constexpr long kSlackKiB = 512;
  std::vector<long> samples_;
};

TEST(Load, HundredThousandSmallAllReducesOfRandomSizes) {
  const int rank = worldRank(), n = worldSize();
  zcclComm_t comm = makeComm(zcclAlgoAuto);
  std::mt19937 sizes(12345);  // the same sequence on every rank
  std::vector<int32_t> data(4096);
  ResidentGrowth resident;
  size_t wrong = 0;
  for (int call = 0; call < 100000; ++call) {
    const size_t count = 1 + sizes() % 4096;
    for (size_t i = 0; i < count; ++i) data[i] = static_cast<int32_t>(rank + i + call);
    ASSERT_EQ(zcclAllReduce(data.data(), data.data(), count, zcclInt32, zcclSum, comm, nullptr),
              zcclSuccess)
        << zcclGetLastError(comm);
    for (size_t i = 0; i < count; ++i) {
      const int64_t expected = static_cast<int64_t>(n) * (i + call) + n * (n - 1) / 2;
      wrong += data[i] != static_cast<int32_t>(expected) ? 1 : 0;
    }
    resident.at(call, 10000, 100000);
  }
  EXPECT_EQ(wrong, 0u);
  resident.expectFlat();
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(Load, ThousandAllGathersOf16MiB) {
  const int rank = worldRank(), n = worldSize();
  zcclComm_t comm = makeComm(zcclAlgoAuto);
  const size_t count = size_t{4} << 20;  // 16 MiB of float32 per rank
  std::vector<float> send(count), recv(count * static_cast<size_t>(n));
  ResidentGrowth resident;
  size_t wrong = 0;
  for (int call = 0; call < 1000; ++call) {
    // (rank * 7 + i + call) % 4093, counted up rather than divided: a fifth of the run was
    // this loop's divisions.
    for (size_t i = 0, value = (rank * 7 + call) % 4093; i < count; ++i) {
      send[i] = static_cast<float>(value);
      value = value == 4092 ? 0 : value + 1;
    }
    ASSERT_EQ(zcclAllGather(send.data(), recv.data(), count, zcclFloat32, comm, nullptr),
              zcclSuccess)
        << zcclGetLastError(comm);
    for (int r = 0; r < n; ++r) {
      const float* block = recv.data() + static_cast<size_t>(r) * count;
      for (size_t i = 0; i < count; i += 997) {  // a sample of every block, every call
        wrong += block[i] != static_cast<float>((r * 7 + i + call) % 4093) ? 1 : 0;
      }
    }
    resident.at(call, 100, 1000);
  }
  EXPECT_EQ(wrong, 0u);
  resident.expectFlat();
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
}

TEST(Load, ThousandCommunicatorsLeaveNoDescriptorsOrThreads) {
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.timeoutSeconds = 60;
  // The first cycle opens what lives as long as the process (UCX's or MPI's context).
  zcclComm_t comm = nullptr;
  ASSERT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
  ASSERT_EQ(zcclCommDestroy(comm), zcclSuccess);
  barrier();
  const int descriptors = countEntries("/proc/self/fd");
  const int threads = countEntries("/proc/self/task");
  for (int cycle = 0; cycle < 1000; ++cycle) {
    ASSERT_EQ(initWorldComm(&config, &comm), zcclSuccess) << zcclGetLastError(nullptr);
    int32_t one = 1;
    ASSERT_EQ(zcclAllReduce(&one, &one, 1, zcclInt32, zcclSum, comm, nullptr), zcclSuccess);
    ASSERT_EQ(zcclCommDestroy(comm), zcclSuccess);
  }
  barrier();
  // The last rendezvous root (a thread of rank 0) ends once every rank has left it.
  for (int wait = 0; wait < 100 && countEntries("/proc/self/task") > threads; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // At most as many as before: the first rendezvous root may still have been alive when the
  // baseline was taken (a leak of 1000 cycles shows as hundreds more).
  EXPECT_LE(countEntries("/proc/self/fd"), descriptors);
  EXPECT_LE(countEntries("/proc/self/task"), threads);
}

}  // namespace
}  // namespace zccl_harness
