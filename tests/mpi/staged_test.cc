// Every algorithm on device memory through the staged transport, on an emulated device (and,
// where one is visible, on a real GPU shared by every rank, skipped elsewhere): the
// device's memory is host memory registered as the device's, its kernels are the host's
// behind a check that every pointer they get is the device's, and its copier checks that
// each copy goes between the device and host staging memory. What runs is the library's own
// device path below the API (the registry's rows for device memory, the Kernels interface, a
// device scratch pool, the staged transport cutting messages into chunks), so a collective
// that touched device memory other than through its kernels, or a staging buffer handed to a
// kernel, fails here; and each result must be byte-identical to the same call on host memory
// through the public API, with the same bytes on the wire.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/collectives.h"
#include "core/comm.h"
#include "device/device_runtime.h"
#include "harness/emulated_device.h"
#include "harness/gtest.h"
#include "harness/values.h"
#include "transport/staged/staged_transport.h"
#include "zccl/zccl_introspect.h"
#ifdef ZCCL_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda_kernels.h"
#include "transport/staged/cuda_copier.h"
#endif

namespace zccl_harness {
namespace {

using zccl::Collective;
using zccl::Status;

#ifdef ZCCL_HAVE_CUDA
// The current GPU, the collective's work on a stream of the test's own.
class CudaDevice final : public TestDevice {
 public:
  CudaDevice() {
    // One GPU per rank where asked (NCCL runs one rank per GPU); else every rank shares the
    // current one (the staged path lets them).
    int devices = 0;
    if (std::getenv("ZCCL_TEST_GPU_PER_RANK") != nullptr && cudaGetDeviceCount(&devices) == 0 &&
        devices > 0) {
      cudaSetDevice(worldRank() % devices);
    }
    cudaStreamCreate(&stream_);
    kernels_ = zccl::makeCudaKernels(stream_);
    copier_ = zccl::makeCudaCopier(stream_);
  }
  ~CudaDevice() override { cudaStreamDestroy(stream_); }
  void* stream() override { return stream_; }
  zccl::DeviceRuntime* runtime() override { return nullptr; }
  zccl::Kernels& kernels() override { return *kernels_; }
  zccl::DeviceCopier& copier() override { return *copier_; }
  zccl::ScratchAllocator scratchAllocator() override { return zccl::cudaScratchAllocator(); }
  void* allocate(size_t bytes) override {
    void* data = nullptr;
    EXPECT_EQ(cudaMalloc(&data, bytes > 0 ? bytes : 1), cudaSuccess);
    return data;
  }
  void release(void* data) override { cudaFree(data); }
  void upload(void* device, const void* host, size_t bytes) override {
    EXPECT_EQ(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  void* allocateHost(size_t bytes) override {
    void* data = nullptr;
    EXPECT_EQ(cudaHostAlloc(&data, bytes, cudaHostAllocDefault), cudaSuccess);
    return data;
  }
  void releaseHost(void* data) override { cudaFreeHost(data); }
  void copyOnStream(void* to, const void* from, size_t bytes) override {
    EXPECT_EQ(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDefault, stream_), cudaSuccess);
  }
  // A host function on the stream stands for a long kernel (zccl queues none of its own).
  void holdStream(Hold* hold) override {
    EXPECT_EQ(cudaLaunchHostFunc(
                  stream_, [](void* held) { static_cast<Hold*>(held)->wait(); }, hold),
              cudaSuccess);
  }
  void synchronize() override { EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess); }
  void beginCapture() override {
    EXPECT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), cudaSuccess);
  }
  // The capture may have been invalidated (a call refused inside it); either way it ends.
  void endCapture() override {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
  }

 protected:
  void copyToHost(void* host, const void* device, size_t bytes) override {
    EXPECT_EQ(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  }

 private:
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<zccl::Kernels> kernels_;
  std::unique_ptr<zccl::DeviceCopier> copier_;
};
#endif

// nullptr when this machine has no such device.
std::unique_ptr<TestDevice> makeDevice(const std::string& kind) {
  if (kind == "emulated") return std::make_unique<EmulatedDevice>();
#ifdef ZCCL_HAVE_CUDA
  int devices = 0;
  if (cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0) {
    return std::make_unique<CudaDevice>();
  }
#endif
  return nullptr;
}

constexpr size_t kChunkBytes = 4096;  // small, so that messages travel in many chunks

struct Case {
  Collective collective;
  zcclDataType_t type;
  zcclRedOp_t op;
  size_t count;  // per rank, as the public call takes it
  zcclWireFormat_t wire;
  zcclHierarchy_t hierarchy;
  int root;
};

// How a device call is made: "api", through the public API with the device's stream (the
// library's own device path: memory checks, staged transports, device scratch, stream
// synchronization), or "internal", the same algorithms below the API on a context this test
// builds by hand.
using Route = std::tuple<const char*, const char*>;  // device, how

class Staged : public ::testing::TestWithParam<Route> {
 protected:
  void SetUp() override {
    const char* kind = std::get<0>(GetParam());
    throughApi_ = std::string(std::get<1>(GetParam())) == "api";
    device_ = makeDevice(kind);
    if (device_ == nullptr) {
      GTEST_SKIP() << "no " << kind << " device visible";
    }
    zccl::installDeviceRuntime(device_->runtime());
    // The internal route launches kernels with no device path before it to load them (the
    // public route's device path must load them itself).
    if (!throughApi_) {
      ASSERT_EQ(zccl::deviceRuntime()->loadKernels(), Status::kSuccess) << zccl::lastThreadError();
    }
    // The public path's chunks as small as the internal route's.
    setenv("ZCCL_STAGED_CHUNK_BYTES", std::to_string(kChunkBytes).c_str(), 1);
    scratch_ = std::make_unique<zccl::ScratchPool>(device_->scratchAllocator());
    comm_ = makeComm(zcclAlgoAuto);
    unsetenv("ZCCL_STAGED_CHUNK_BYTES");
    ASSERT_NE(comm_, nullptr);
    zcclComm* comm = comm_;
    const zccl::StagedOptions options{kChunkBytes};
    zccl::DeviceCopier& copier = device_->copier();
    staged_ = zccl::makeStagedTransport(*comm->transport, copier, options);
    if (comm->hasLevels()) {
      stagedNode_ = zccl::makeStagedTransport(*comm->nodeTransport, copier, options);
      stagedCross_ = zccl::makeStagedTransport(*comm->crossTransport, copier, options);
      levels_ = comm->levels;
      levels_.node = stagedNode_.get();
      levels_.cross = stagedCross_.get();
    }
  }
  void TearDown() override {
    staged_.reset();
    stagedNode_.reset();
    stagedCross_.reset();
    if (comm_ != nullptr) {
      EXPECT_EQ(zcclCommDestroy(comm_), zcclSuccess);
    }
    scratch_.reset();
    zccl::installDeviceRuntime(nullptr);
  }

  // A communicator's first device call loads zccl's kernels, which may wait for every stream
  // of the device (common/cuda_status.h): made before a test holds or captures its stream.
  void firstDeviceCall() {
    void* data = device_->allocate(sizeof(float));
    const float one = 1.0f;
    device_->upload(data, &one, sizeof(one));
    EXPECT_EQ(zcclAllReduce(data, data, 1, zcclFloat32, zcclSum, comm_, device_->stream()),
              zcclSuccess)
        << zcclGetLastError(comm_);
    device_->synchronize();
    device_->release(data);
  }

  // Per-rank send and receive sizes in elements (the public API's buffers).
  static void sizes(const Case& c, int n, size_t* send, size_t* recv) {
    const size_t all = c.count * static_cast<size_t>(n);
    switch (c.collective) {
      case Collective::kAllGather:
      case Collective::kGather:
        *send = c.count, *recv = all;
        return;
      case Collective::kReduceScatter:
      case Collective::kScatter:
        *send = all, *recv = c.count;
        return;
      case Collective::kAllToAll:
        *send = all, *recv = all;
        return;
      default:
        *send = c.count, *recv = c.count;
    }
  }

  static double inputValue(int rank, size_t i) {
    return static_cast<double>(static_cast<int>((rank * 7 + i * 13) % 17) - 8) / 4;
  }

  std::vector<char> input(const Case& c, size_t elements) const {
    std::vector<char> data(elements * sizeOf(c.type));
    for (size_t i = 0; i < elements; ++i) store(c.type, data.data(), i, inputValue(rank_, i));
    return data;
  }

  zcclCollOptions optionsOf(const Case& c) const {
    zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
    options.wireFormat = c.wire;
    options.hierarchy = c.hierarchy;
    options.seed = 99;
    return options;
  }

  // The call through the public API: host memory with stream=NULL, device memory with one.
  zcclResult_t runPublic(const Case& c, const void* send, void* recv, void* stream) {
    const zcclCollOptions options = optionsOf(c);
    switch (c.collective) {
      case Collective::kAllGather:
        return zcclAllGatherEx(send, recv, c.count, c.type, comm_, stream, &options);
      case Collective::kReduceScatter:
        return zcclReduceScatterEx(send, recv, c.count, c.type, c.op, comm_, stream, &options);
      case Collective::kAllReduce:
        return zcclAllReduceEx(send, recv, c.count, c.type, c.op, comm_, stream, &options);
      case Collective::kBroadcast:
        return zcclBroadcast(send, recv, c.count, c.type, c.root, comm_, stream);
      case Collective::kAllToAll:
        return zcclAllToAll(send, recv, c.count, c.type, comm_, stream);
      case Collective::kReduce:
        return zcclReduceEx(send, recv, c.count, c.type, c.op, c.root, comm_, stream, &options);
      case Collective::kGather:
        return zcclGather(send, recv, c.count, c.type, c.root, comm_, stream);
      case Collective::kScatter:
        return zcclScatter(send, recv, c.count, c.type, c.root, comm_, stream);
    }
    return zcclInternalError;
  }

  Status runOnDevice(const Case& c, const void* send, void* recv) {
    if (!throughApi_) return runBelowApi(c, send, recv);
    const zcclResult_t result = runPublic(c, send, recv, device_->stream());
    if (result != zcclSuccess) {
      return zccl::fail(Status::kInternalError, "%s", zcclGetLastError(comm_));
    }
    return Status::kSuccess;
  }

  // Below the API: the device's kernels, scratch pool and staged transports in a context
  // built here.
  Status runBelowApi(const Case& c, const void* send, void* recv) {
    zcclComm* comm = comm_;
    zccl::CollectiveOptions options;
    const zcclCollOptions asked = optionsOf(c);
    const int n = comm->size();
    const bool blocked =
        c.collective == Collective::kAllGather || c.collective == Collective::kReduceScatter ||
        c.collective == Collective::kAllToAll || c.collective == Collective::kGather ||
        c.collective == Collective::kScatter;
    // The asked options name the format: the policy's share of them does not matter here.
    ZCCL_CHECK(zccl::resolveCollOptions(&asked, comm->config, c.collective, 0, &options));
    const zccl::CollectiveArgs args{send,
                                    recv,
                                    zccl::Partition{c.count * (blocked ? n : 1), n},
                                    static_cast<zccl::DataType>(c.type),
                                    static_cast<zccl::RedOp>(c.op),
                                    c.root};
    zccl::Kernels& kernels = device_->kernels();
    const int tag = comm->nextCollective(kernels).tag;
    zccl::Context ctx{*staged_,     *scratch_,      comm->hasLevels() ? &levels_ : nullptr,
                      comm->native, &comm->cluster, kernels,
                      tag};
    return zccl::runCollective(ctx, c.collective, args, options);
  }

  // Whether the device's kernels cut rows as the host's (the emulated device's do; a GPU's
  // rows are longer, so that blocks of several host rows take one there, and the chunked
  // messages, and with them the bytes on the wire, differ).
  bool rowsAsTheHosts() const {
    return device_->kernels().pipelineElements() == zccl::hostKernels().pipelineElements();
  }

  uint64_t bytesSent() const { return zccl_harness::bytesSent(comm_); }

  void check(const Case& c, const std::string& what) {
    SCOPED_TRACE(what);
    const int n = worldSize();
    size_t sendCount = 0, recvCount = 0;
    sizes(c, n, &sendCount, &recvCount);
    const size_t es = sizeOf(c.type);
    const std::vector<char> in = input(c, sendCount);
    std::vector<char> hostOut(recvCount * es + 1, 0);
    const uint64_t before = bytesSent();
    ASSERT_EQ(runPublic(c, in.data(), hostOut.data(), nullptr), zcclSuccess)
        << zcclGetLastError(comm_);
    const uint64_t hostBytes = bytesSent() - before;

    std::vector<char> deviceOut(recvCount * es + 1, 0);
    void* in_ = device_->allocate(in.size());
    void* out_ = device_->allocate(deviceOut.size());
    device_->upload(in_, in.data(), in.size());
    device_->upload(out_, deviceOut.data(), deviceOut.size());
    const Status status = runOnDevice(c, in_, out_);
    device_->download(deviceOut.data(), out_, deviceOut.size());
    // Every byte went through the staged transports, whose host transports count them.
    const uint64_t deviceBytes = bytesSent() - before - hostBytes;
    EXPECT_EQ(status, Status::kSuccess) << zccl::lastThreadError();
    EXPECT_EQ(deviceOut, hostOut) << "the device result differs from the host's";
    EXPECT_EQ(deviceBytes, hostBytes) << "bytes on the wire";
    device_->release(in_);
    device_->release(out_);
  }

  zcclComm_t comm_ = nullptr;
  std::unique_ptr<TestDevice> device_;
  std::unique_ptr<zccl::ScratchPool> scratch_;
  std::unique_ptr<zccl::Transport> staged_, stagedNode_, stagedCross_;
  zccl::NodeLevels levels_;
  const int rank_ = worldRank();
  bool throughApi_ = false;
};

const char* nameOf(Collective collective) { return zccl::collectiveName(collective); }

// Elements per block that span several of the kernels' pipeline rows (65536 elements on the
// host and the emulated device) and several rows of the exact two-level reduce-scatter (four
// of those), the last row partial.
constexpr size_t kManyRows = 9 * 65536 + 4097;

TEST_P(Staged, EveryCollectiveEqualsTheHostPathByteForByte) {
  const int last = worldSize() - 1;
  const Collective all[] = {Collective::kAllGather, Collective::kReduceScatter,
                            Collective::kAllReduce, Collective::kBroadcast,
                            Collective::kAllToAll,  Collective::kReduce,
                            Collective::kGather,    Collective::kScatter};
  for (Collective collective : all) {
    for (zcclDataType_t type : {zcclFloat32, zcclBfloat16, zcclInt64}) {
      for (size_t count : {size_t{1}, size_t{1000}, size_t{30011}}) {
        const Case c{collective, type, zcclSum, count, zcclWireNone, zcclHierarchyAuto, last};
        check(c, std::string(nameOf(collective)) + " " + std::to_string(count));
      }
    }
  }
  // The paths pipelined in rows, with blocks of several rows.
  for (Collective collective :
       {Collective::kAllGather, Collective::kReduceScatter, Collective::kAllReduce}) {
    if (!rowsAsTheHosts()) break;
    const Case c{collective, zcclBfloat16, zcclSum, kManyRows, zcclWireNone, zcclHierarchyAuto, 0};
    check(c, std::string(nameOf(collective)) + " of several rows");
  }
}

// qwZ and qgZ, one hop and two: quantized on the device, only compressed bytes staged.
TEST_P(Staged, QuantizedPathsEqualTheHostPathByteForByte) {
  std::vector<zcclHierarchy_t> hierarchies{zcclHierarchyFlat};
  if (static_cast<zcclComm*>(comm_)->hasLevels()) hierarchies.push_back(zcclHierarchyTwoLevel);
  for (zcclHierarchy_t hierarchy : hierarchies) {
    for (Collective collective : {Collective::kAllGather, Collective::kReduceScatter,
                                  Collective::kAllReduce, Collective::kReduce}) {
      for (zcclWireFormat_t wire : {zcclWireInt8, zcclWireInt4}) {
        for (zcclRedOp_t op : {zcclSum, zcclAvg}) {
          const Case c{collective, zcclBfloat16, op, 20011, wire, hierarchy, 0};
          check(c, std::string(nameOf(collective)) + (wire == zcclWireInt8 ? " int8" : " int4") +
                       (hierarchy == zcclHierarchyFlat ? " flat" : " two-level") +
                       (op == zcclSum ? " sum" : " avg"));
        }
        // Blocks of several pipeline rows (the last partial): the staged transport copies a
        // message to the device only when its own receive is waited for, so a row read
        // before its receive was waited for shows here.
        if (!rowsAsTheHosts()) continue;
        const Case rows{collective, zcclBfloat16, zcclSum, kManyRows, wire, hierarchy, 0};
        check(rows, std::string(nameOf(collective)) + " of several rows" +
                        (wire == zcclWireInt8 ? " int8" : " int4") +
                        (hierarchy == zcclHierarchyFlat ? " flat" : " two-level"));
      }
    }
  }
}

// zcclSend / zcclRecv on device memory: a ring in one group, then a pair outside any group;
// the bytes arrive as sent (travelling in several chunks), counted on the wire.
TEST_P(Staged, SendAndReceiveOnDeviceMemory) {
  if (!throughApi_) GTEST_SKIP() << "point-to-point is the public API's";
  if (worldSize() < 2) GTEST_SKIP() << "one rank: no peer";
  const int n = worldSize();
  const size_t count = 3001;  // several chunks of float32
  std::vector<float> mine(count), fromPrev(count, -1.0f);
  for (size_t i = 0; i < count; ++i) mine[i] = static_cast<float>(rank_ * 10000 + i);
  void* send = device_->allocate(count * sizeof(float));
  void* recv = device_->allocate(count * sizeof(float));
  device_->upload(send, mine.data(), count * sizeof(float));
  device_->upload(recv, fromPrev.data(), count * sizeof(float));
  void* stream = device_->stream();
  const uint64_t before = bytesSent();
  ASSERT_EQ(zcclGroupStart(), zcclSuccess);
  ASSERT_EQ(zcclSend(send, count, zcclFloat32, (rank_ + 1) % n, comm_, stream), zcclSuccess)
      << zcclGetLastError(comm_);
  ASSERT_EQ(zcclRecv(recv, count, zcclFloat32, (rank_ + n - 1) % n, comm_, stream), zcclSuccess)
      << zcclGetLastError(comm_);
  ASSERT_EQ(zcclGroupEnd(), zcclSuccess) << zcclGetLastError(comm_);
  device_->download(fromPrev.data(), recv, count * sizeof(float));
  const int prev = (rank_ + n - 1) % n;
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(fromPrev[i], static_cast<float>(prev * 10000 + i)) << "element " << i;
  }
  EXPECT_EQ(bytesSent() - before, count * sizeof(float));
  // Outside a group each call is queued by itself: rank 0 to rank 1.
  if (rank_ < 2) {
    const zcclResult_t result = rank_ == 0 ? zcclSend(send, count, zcclFloat32, 1, comm_, stream)
                                           : zcclRecv(recv, count, zcclFloat32, 0, comm_, stream);
    ASSERT_EQ(result, zcclSuccess) << zcclGetLastError(comm_);
    if (rank_ == 1) {
      device_->download(fromPrev.data(), recv, count * sizeof(float));
      EXPECT_EQ(fromPrev[count - 1], static_cast<float>(count - 1));
    }
  }
  device_->synchronize();  // the queued send has read its buffer
  device_->release(send);
  device_->release(recv);
}

// NCCL's stream semantics: the call returns while the work queued before it on its stream
// has not run (a hold, opened only after the call), its collective reads what that work
// wrote, and the work queued after it reads its result.
TEST_P(Staged, ACallQueuesItsWorkBehindTheStreamsEarlierWork) {
  if (!throughApi_) GTEST_SKIP() << "the stream is the public API's";
  firstDeviceCall();
  const int n = worldSize();
  const size_t count = 5003, bytes = count * sizeof(float);
  auto* mine = static_cast<float*>(device_->allocateHost(bytes));
  auto* result = static_cast<float*>(device_->allocateHost(bytes));
  for (size_t i = 0; i < count; ++i) {
    mine[i] = static_cast<float>(inputValue(rank_, i));
    result[i] = -1.0f;
  }
  void* in = device_->allocate(bytes);
  void* out = device_->allocate(bytes);
  const std::vector<float> stale(count, 0.0f);  // what a call that read too early would sum
  device_->upload(in, stale.data(), bytes);
  Hold hold;
  device_->holdStream(&hold);
  device_->copyOnStream(in, mine, bytes);  // the input arrives only once the hold opens
  ASSERT_EQ(zcclAllReduce(in, out, count, zcclFloat32, zcclSum, comm_, device_->stream()),
            zcclSuccess)
      << zcclGetLastError(comm_);
  device_->copyOnStream(result, out, bytes);  // queued after the call: sees its result
  hold.open();
  device_->synchronize();
  EXPECT_FALSE(hold.expired()) << "the call waited for the stream's earlier work";
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += inputValue(r, i);
    wrong += result[i] != static_cast<float>(sum) ? 1 : 0;
  }
  EXPECT_EQ(wrong, 0u) << "of " << count << " elements";
  device_->release(in);
  device_->release(out);
  device_->releaseHost(mine);
  device_->releaseHost(result);
}

// A collective called while its stream is captured into a graph fails at once, naming the
// capture (the graph would hold the gate, not the work); the communicator works on after.
TEST_P(Staged, ACallOnAStreamCapturingAGraphFailsNamingIt) {
  if (!throughApi_) GTEST_SKIP() << "the stream is the public API's";
  firstDeviceCall();
  const size_t count = 1000, bytes = count * sizeof(float);
  void* data = device_->allocate(bytes);
  const std::vector<float> ones(count, 1.0f);
  device_->upload(data, ones.data(), bytes);
  device_->beginCapture();
  const zcclResult_t captured =
      zcclAllReduce(data, data, count, zcclFloat32, zcclSum, comm_, device_->stream());
  const std::string message = zcclGetLastError(comm_);
  device_->endCapture();
  EXPECT_EQ(captured, zcclInvalidUsage) << zcclGetErrorString(captured);
  EXPECT_NE(message.find("capturing a"), std::string::npos) << message;
  ASSERT_EQ(zcclAllReduce(data, data, count, zcclFloat32, zcclSum, comm_, device_->stream()),
            zcclSuccess)
      << zcclGetLastError(comm_);
  std::vector<float> result(count);
  device_->download(result.data(), data, bytes);
  EXPECT_EQ(result, std::vector<float>(count, static_cast<float>(worldSize())));
  device_->release(data);
}

INSTANTIATE_TEST_SUITE_P(Devices, Staged,
                         ::testing::Combine(::testing::Values("emulated", "cuda"),
                                            ::testing::Values("api", "internal")),
                         [](const ::testing::TestParamInfo<Route>& info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

// Buffers in the wrong memory for the call, on the emulated device: each error names the
// buffer, its memory and the stream.
class DeviceMemoryErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    zccl::installDeviceRuntime(device_.runtime());
    comm_ = makeComm(zcclAlgoAuto);
    ASSERT_NE(comm_, nullptr);
    onDevice_ = static_cast<float*>(device_.allocate(64 * sizeof(float) * worldSize()));
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(zcclCommDestroy(comm_), zcclSuccess);
    }
    device_.release(onDevice_);
    zccl::installDeviceRuntime(nullptr);
  }
  void expectError(zcclResult_t got, zcclResult_t want, const std::string& mentions) {
    EXPECT_EQ(got, want) << zcclGetErrorString(got);
    const std::string message = zcclGetLastError(comm_);
    EXPECT_NE(message.find(mentions), std::string::npos)
        << "last error \"" << message << "\" does not mention \"" << mentions << "\"";
  }

  EmulatedDevice device_;
  zcclComm_t comm_ = nullptr;
  float* onDevice_ = nullptr;
  std::vector<float> onHost_ = std::vector<float>(64 * static_cast<size_t>(worldSize()));
};

TEST_F(DeviceMemoryErrors, HostBufferWithAStream) {
  expectError(
      zcclAllReduce(onHost_.data(), onDevice_, 4, zcclFloat32, zcclSum, comm_, device_.stream()),
      zcclInvalidArgument, "is host memory but stream=");
  expectError(zcclAllGather(onDevice_, onHost_.data(), 4, zcclFloat32, comm_, device_.stream()),
              zcclInvalidArgument, "recvbuff=");
}

TEST_F(DeviceMemoryErrors, DeviceBufferWithoutAStream) {
  expectError(zcclAllReduce(onDevice_, onHost_.data(), 4, zcclFloat32, zcclSum, comm_, nullptr),
              zcclInvalidArgument, "sendbuff=");
  expectError(zcclReduceScatter(onHost_.data(), onDevice_, 4, zcclFloat32, zcclSum, comm_, nullptr),
              zcclInvalidArgument, "is device memory but stream=NULL");
  expectError(zcclSend(onDevice_, 4, zcclFloat32, (worldRank() + 1) % worldSize(), comm_, nullptr),
              zcclInvalidArgument, "is device memory but stream=NULL");
}

TEST_F(DeviceMemoryErrors, BufferOnAnotherDevice) {
  device_.emulatedRuntime().current = 1;
  expectError(zcclBroadcast(onDevice_, onDevice_, 4, zcclFloat32, 0, comm_, device_.stream()),
              zcclInvalidArgument, "is on device 0, but the current device is 1");
  device_.emulatedRuntime().current = 0;
}

TEST_F(DeviceMemoryErrors, OneCommunicatorsMessagesInAGroupShareAStream) {
  const int n = worldSize(), next = (worldRank() + 1) % n, prev = (worldRank() + n - 1) % n;
  ASSERT_EQ(zcclGroupStart(), zcclSuccess);
  ASSERT_EQ(zcclSend(onHost_.data(), 4, zcclFloat32, next, comm_, nullptr), zcclSuccess);
  ASSERT_EQ(zcclRecv(onHost_.data() + 4, 4, zcclFloat32, prev, comm_, nullptr), zcclSuccess);
  expectError(zcclSend(onDevice_, 4, zcclFloat32, next, comm_, device_.stream()), zcclInvalidUsage,
              "a communicator's sends and receives in one group share one stream");
  ASSERT_EQ(zcclGroupEnd(), zcclSuccess) << zcclGetLastError(comm_);
}

// ZCCL_DEVICE_BACKEND=nccl where a rank cannot run NCCL (here: the emulated device) fails
// every rank's first device collective at once, naming the rank and why; auto (the default,
// which every other test here runs with) stages instead. The call only queued its work: the
// failure is the communicator's asynchronous error and every later call's result, until it
// is aborted.
TEST_F(DeviceMemoryErrors, NcclBackendWhereARankCannotRunNccl) {
  setenv("ZCCL_DEVICE_BACKEND", "nccl", 1);
  zcclComm_t nccl = makeComm(zcclAlgoAuto);
  unsetenv("ZCCL_DEVICE_BACKEND");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(zcclAllReduce(onDevice_, onDevice_, 4, zcclFloat32, zcclSum, nccl, device_.stream()),
            zcclSuccess)
      << zcclGetLastError(nccl);
  device_.synchronize();  // the gate opens whatever became of the work
  const std::string why = "ZCCL_DEVICE_BACKEND=nccl: rank 0: the emulated device cannot run NCCL";
  zcclResult_t async = zcclSuccess;
  ASSERT_EQ(zcclCommGetAsyncError(nccl, &async), zcclSuccess);
  EXPECT_EQ(async, zcclInvalidUsage);
  EXPECT_NE(std::string(zcclGetLastError(nccl)).find(why), std::string::npos)
      << zcclGetLastError(nccl);
  EXPECT_EQ(zcclAllReduce(onHost_.data(), onHost_.data(), 4, zcclFloat32, zcclSum, nccl, nullptr),
            zcclInvalidUsage)
      << "a later call, on host memory too";
  EXPECT_NE(std::string(zcclGetLastError(nccl)).find(why), std::string::npos)
      << zcclGetLastError(nccl);
  EXPECT_EQ(zcclCommAbort(nccl), zcclSuccess);
}

// A failure of queued work (a device kernel here, on every rank) is the communicator's
// asynchronous error and every later call's result; abort ends it.
TEST_F(DeviceMemoryErrors, AFailureOfQueuedWorkIsReportedByTheCallsAfterIt) {
  zcclCollOptions int8 = ZCCL_COLL_OPTIONS_INITIALIZER;
  int8.wireFormat = zcclWireInt8;
  float* send = onDevice_ + 32 * worldSize();  // recvbuff takes onDevice_'s first 4 * n
  device_.emulatedKernels().failQuantize = true;
  EXPECT_EQ(zcclAllGatherEx(send, onDevice_, 4, zcclFloat32, comm_, device_.stream(), &int8),
            zcclSuccess)
      << "the call only queues its work";
  device_.synchronize();
  zcclResult_t async = zcclSuccess;
  ASSERT_EQ(zcclCommGetAsyncError(comm_, &async), zcclSuccess);
  EXPECT_EQ(async, zcclSystemError);
  const std::string message = zcclGetLastError(comm_);
  EXPECT_NE(message.find("zcclAllGather(sendcount=4, float32)"), std::string::npos) << message;
  EXPECT_NE(message.find("the emulated device failed a quantize kernel"), std::string::npos)
      << message;
  expectError(zcclAllGatherEx(send, onDevice_, 4, zcclFloat32, comm_, device_.stream(), &int8),
              zcclSystemError, "failed a quantize kernel");
  device_.emulatedKernels().failQuantize = false;
  EXPECT_EQ(zcclCommAbort(comm_), zcclSuccess);
  comm_ = nullptr;
}

// ZCCL_DEVICE_BLOCKING=1: the call runs its work itself and returns its result.
TEST_F(DeviceMemoryErrors, UnderDeviceBlockingACallReturnsItsOwnFailure) {
  setenv("ZCCL_DEVICE_BLOCKING", "1", 1);
  zcclComm_t blocking = makeComm(zcclAlgoAuto);
  unsetenv("ZCCL_DEVICE_BLOCKING");
  ASSERT_NE(blocking, nullptr);
  zcclCollOptions int8 = ZCCL_COLL_OPTIONS_INITIALIZER;
  int8.wireFormat = zcclWireInt8;
  float* send = onDevice_ + 32 * worldSize();
  EXPECT_EQ(zcclAllGatherEx(send, onDevice_, 4, zcclFloat32, blocking, device_.stream(), &int8),
            zcclSuccess)
      << zcclGetLastError(blocking);
  device_.emulatedKernels().failQuantize = true;
  EXPECT_EQ(zcclAllGatherEx(send, onDevice_, 4, zcclFloat32, blocking, device_.stream(), &int8),
            zcclSystemError);
  EXPECT_NE(std::string(zcclGetLastError(blocking)).find("failed a quantize kernel"),
            std::string::npos)
      << zcclGetLastError(blocking);
  device_.emulatedKernels().failQuantize = false;
  EXPECT_EQ(zcclCommAbort(blocking), zcclSuccess);
}

// A stream without a device runtime: on a machine without a GPU, every call with one.
TEST_F(DeviceMemoryErrors, StreamWithoutADevice) {
  zccl::installDeviceRuntime(nullptr);
  if (zccl::deviceRuntime() != nullptr) GTEST_SKIP() << "a GPU is visible";
  expectError(zcclAllReduce(onHost_.data(), onHost_.data(), 4, zcclFloat32, zcclSum, comm_,
                            device_.stream()),
              zcclInvalidArgument, "device memory needs a GPU, and this process sees none");
}

// Under ZCCL_CHECK, a rank that calls with device memory while the others call with host
// memory (their messages would not match: device messages travel in chunks) fails with
// them at once.
TEST_F(DeviceMemoryErrors, RanksThatDifferInMemoryUnderCheck) {
  if (worldSize() < 2) GTEST_SKIP() << "one rank: nobody to differ from";
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.checkCalls = 1;
  config.timeoutSeconds = 120;
  zcclComm_t checked = nullptr;
  ASSERT_EQ(initWorldComm(&config, &checked), zcclSuccess) << zcclGetLastError(nullptr);
  const bool device = worldRank() == 0;
  const zcclResult_t result =
      zcclAllReduce(device ? onDevice_ : onHost_.data(), device ? onDevice_ : onHost_.data(), 4,
                    zcclFloat32, zcclSum, checked, device ? device_.stream() : nullptr);
  EXPECT_EQ(result, zcclInvalidUsage);
  EXPECT_NE(std::string(zcclGetLastError(checked)).find("device memory (stream): rank 0 has yes"),
            std::string::npos)
      << zcclGetLastError(checked);
  EXPECT_EQ(zcclCommDestroy(checked), zcclSuccess);
}

// Device calls plan with the device's kernel rates, measured at a communicator's first device
// collective and agreed on: behind a slow link a fast CPU makes INT8 pay for host memory,
// while a device whose quantization is slower than the link keeps the same all-gather plain.
// Its reductions are measured too (an exact reduce-scatter is priced by them).
TEST(DevicePlans, FollowTheDevicesKernelRatesNotTheCpus) {
  if (worldSize() < 2) GTEST_SKIP() << "one rank: nothing crosses a link";
  // The node's link estimate is read once per process: ctest runs this test on its own with
  // a modelled link slow enough that INT8 pays even for a CPU slowed by sanitizers.
  const char* link = std::getenv("ZCCL_INTER_NODE_GBPS");
  if (link == nullptr || std::string(link) != "0.03") {
    GTEST_SKIP() << "run with ZCCL_INTER_NODE_GBPS=0.03 (ctest: staged_test_plans)";
  }
  EmulatedDevice device;
  // About 17 MB/s: slower than the link (30 MB/s) even with the quantization beside the link's
  // rows. Each measurement of it sleeps a second, hence the link this fast.
  device.slowQuantization(std::chrono::milliseconds(1000));
  device.slowReductions(std::chrono::milliseconds(300));  // about 56 MB/s
  zccl::installDeviceRuntime(device.runtime());
  zcclComm_t comm = makeComm(zcclAlgoAuto, 1);  // every rank a node of its own
  ASSERT_NE(comm, nullptr);
  const size_t count = size_t{1} << 20;
  const size_t bytes = count * 2;  // bfloat16
  std::vector<char> in(bytes, 0x3c), out(bytes * static_cast<size_t>(worldSize()));
  void* deviceIn = device.allocate(in.size());
  void* deviceOut = device.allocate(out.size());
  device.upload(deviceIn, in.data(), in.size());
  zcclCollOptions options = ZCCL_COLL_OPTIONS_INITIALIZER;
  options.wireFormat = zcclWireAllowInt8;
  const auto bytesSentBy = [&](const void* send, void* recv, void* stream) {
    zcclStats before, after;
    EXPECT_EQ(zcclCommGetStats(comm, &before), zcclSuccess);
    EXPECT_EQ(zcclAllGatherEx(send, recv, count, zcclBfloat16, comm, stream, &options), zcclSuccess)
        << zcclGetLastError(comm);
    EXPECT_EQ(zcclCommGetStats(comm, &after), zcclSuccess);
    uint64_t sent = 0;
    for (int link = 0; link < zcclNumLinkClasses; ++link) {
      sent += after.bytesSent[link] - before.bytesSent[link];
    }
    return sent;
  };
  const uint64_t onHost = bytesSentBy(in.data(), out.data(), nullptr);
  const uint64_t onDevice = bytesSentBy(deviceIn, deviceOut, device.stream());
  const uint64_t plain = bytes * static_cast<uint64_t>(worldSize() - 1);  // a ring's share
  EXPECT_LT(onHost, plain * 6 / 10) << "host memory: INT8 should pay behind a 0.03 GB/s link";
  EXPECT_EQ(onDevice, plain) << "device memory: its quantization is slower than the link";
  zcclTopologyInfo info;
  ASSERT_EQ(zcclCommGetTopologyInfo(comm, &info), zcclSuccess) << zcclGetLastError(comm);
  EXPECT_GT(info.deviceQuantizeGBps, 0.0);
  EXPECT_LT(info.deviceQuantizeGBps, 0.05);
  EXPECT_GT(info.quantizeGBps, 4 * info.deviceQuantizeGBps);
  EXPECT_GT(info.deviceReduceGBps, 0.0);
  EXPECT_LT(info.deviceReduceGBps, 0.1);
  EXPECT_GT(info.reduceGBps, 4 * info.deviceReduceGBps);
  EXPECT_EQ(zcclCommDestroy(comm), zcclSuccess);
  device.release(deviceIn);
  device.release(deviceOut);
  zccl::installDeviceRuntime(nullptr);
}

}  // namespace
}  // namespace zccl_harness
