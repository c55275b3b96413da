// An emulated device for the device path's tests, on machines without a GPU: its memory is
// host memory that host code cannot touch through its pointers, its kernels are the host's behind a
// check that every pointer they get is the device's, its copier checks that each copy goes between
// the device and host staging memory, and its streams run their work in order on threads of their
// own. Installed as the library's device runtime (zccl::installDeviceRuntime), it makes calls with
// its stream take the library's device path.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
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
#include <utility>
#include <vector>

#include "device/device_runtime.h"
#include "kernels/kernels.h"
#include "transport/staged/staged_transport.h"

namespace zccl_harness {

using zccl::Status;

// Memory that stands for a device's. The pointers handed out lie in a mapping without access,
// as a GPU's memory is to its CPU, so that host code reading or writing device memory faults
// here as it would there; the emulated kernels, copier and streams reach the same bytes
// through a second mapping (hostAlias). Allocations are recorded, and owns() tells them from
// any other memory; the communicator's thread asks while the test allocates.
class EmulatedDeviceMemory {
 public:
  EmulatedDeviceMemory() = default;
  EmulatedDeviceMemory(const EmulatedDeviceMemory&) = delete;
  EmulatedDeviceMemory& operator=(const EmulatedDeviceMemory&) = delete;
  ~EmulatedDeviceMemory() {
    for (const auto& [device, region] : regions_) unmap(device, region);
  }
  void* allocate(size_t bytes) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    Region region{nullptr, bytes, (std::max<size_t>(bytes, 1) + page - 1) / page * page};
    const int file = memfd_create("zccl-emulated-device", MFD_CLOEXEC);
    if (file < 0 || ftruncate(file, static_cast<off_t>(region.mapped)) != 0) std::abort();
    void* device = mmap(nullptr, region.mapped, PROT_NONE, MAP_SHARED, file, 0);
    void* alias = mmap(nullptr, region.mapped, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
    close(file);
    if (device == MAP_FAILED || alias == MAP_FAILED) std::abort();
    region.alias = static_cast<char*>(alias);
    std::lock_guard<std::mutex> lock(mutex_);
    regions_[static_cast<char*>(device)] = region;
    return device;
  }
  void release(void* data) {
    Region region;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = regions_.find(static_cast<char*>(data));
      if (it == regions_.end()) return;
      region = it->second;
      regions_.erase(it);
    }
    unmap(static_cast<char*>(data), region);
  }
  bool owns(const void* data, size_t bytes) const {
    if (bytes == 0) return true;
    std::lock_guard<std::mutex> lock(mutex_);
    return find(data, bytes) != nullptr;
  }
  // Where the host reaches `bytes` of device memory at `data`; nullptr if they are not the
  // device's.
  template <typename T>
  T* hostAlias(T* data, size_t bytes) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto* allocation = find(data, std::max<size_t>(bytes, 1));
    if (allocation == nullptr) return nullptr;
    const char* at = reinterpret_cast<const char*>(data);
    return reinterpret_cast<T*>(allocation->second.alias + (at - allocation->first));
  }

 private:
  struct Region {
    char* alias;
    size_t bytes;
    size_t mapped;
  };
  // The allocation holding [data, data + bytes) (its start and region), or nullptr.
  const std::pair<char* const, Region>* find(const void* data, size_t bytes) const {
    const char* p = static_cast<const char*>(data);
    auto it = regions_.upper_bound(const_cast<char*>(p));
    if (it == regions_.begin()) return nullptr;
    --it;
    return p >= it->first && p + bytes <= it->first + it->second.bytes ? &*it : nullptr;
  }
  static void unmap(char* device, const Region& region) {
    munmap(device, region.mapped);
    munmap(region.alias, region.mapped);
  }

  mutable std::mutex mutex_;
  std::map<char*, Region> regions_;
};

// The host kernels, refusing any buffer that is not the device's; they run at once, on the
// thread that queues them (the communicator's thread).
class EmulatedDeviceKernels final : public zccl::Kernels {
 public:
  explicit EmulatedDeviceKernels(const EmulatedDeviceMemory& memory) : memory_(memory) {}
  zccl::MemoryKind memory() const override { return zccl::MemoryKind::kDevice; }

  Status copy(void* to, const void* from, size_t bytes) override {
    void* hostTo = nullptr;
    const void* hostFrom = nullptr;
    ZCCL_CHECK(onHost(to, bytes, "copy to", &hostTo));
    ZCCL_CHECK(onHost(from, bytes, "copy from", &hostFrom));
    return host().copy(hostTo, hostFrom, bytes);
  }
  Status zeroFloats(float* data, size_t count) override {
    ZCCL_CHECK(onHost(data, count * 4, "zeroFloats", &data));
    return host().zeroFloats(data, count);
  }
  Status reduceInto(void* inout, const void* in, size_t count, zccl::DataType type,
                    zccl::RedOp op) override {
    const size_t bytes = count * zccl::elementSize(type);
    ZCCL_CHECK(onHost(inout, bytes, "reduceInto inout", &inout));
    ZCCL_CHECK(onHost(in, bytes, "reduceInto in", &in));
    std::this_thread::sleep_for(reduceDelay * static_cast<double>(count) / kRateElements);
    return host().reduceInto(inout, in, count, type, op);
  }
  // `inputs` is a host array of device pointers, as CUDA's kernel takes it.
  Status reduceOrdered(void* out, const void* const* inputs, int numInputs, size_t count,
                       zccl::DataType type, zccl::RedOp op) override {
    const size_t bytes = count * zccl::elementSize(type);
    ZCCL_CHECK(onHost(out, bytes, "reduceOrdered out", &out));
    std::vector<const void*> hostInputs(static_cast<size_t>(numInputs));
    for (int i = 0; i < numInputs; ++i) {
      ZCCL_CHECK(onHost(inputs[i], bytes, "reduceOrdered in", &hostInputs[i]));
    }
    return host().reduceOrdered(out, hostInputs.data(), numInputs, count, type, op);
  }
  Status divideByCount(void* data, size_t count, zccl::DataType type, int divisor) override {
    ZCCL_CHECK(onHost(data, count * zccl::elementSize(type), "divideByCount", &data));
    return host().divideByCount(data, count, type, divisor);
  }
  Status quantize(const void* in, zccl::DataType type, size_t count,
                  const zccl::QuantParams& params, void* out, size_t capacity) override {
    // A slower device, where a test asks for one: its time grows with the elements, so that
    // the rate measured on 16 MiB holds for the pipeline's rows too.
    std::this_thread::sleep_for(quantizeDelay * static_cast<double>(count) / kRateElements);
    if (failQuantize) {
      return zccl::fail(Status::kSystemError, "the emulated device failed a quantize kernel");
    }
    ZCCL_CHECK(onHost(in, count * zccl::elementSize(type), "quantize in", &in));
    ZCCL_CHECK(onHost(out, zccl::quantizedBytes(count, params), "quantize out", &out));
    return host().quantize(in, type, count, params, out, capacity);
  }
  Status dequantize(const void* message, size_t bytes, const zccl::QuantParams& format, void* out,
                    zccl::DataType type, size_t count) override {
    ZCCL_CHECK(onHost(message, bytes, "dequantize message", &message));
    ZCCL_CHECK(onHost(out, count * zccl::elementSize(type), "dequantize out", &out));
    return host().dequantize(message, bytes, format, out, type, count);
  }
  Status dequantizeAccumulate(const void* message, size_t bytes, const zccl::QuantParams& format,
                              float* accumulator, size_t count) override {
    ZCCL_CHECK(onHost(message, bytes, "dequantizeAccumulate message", &message));
    ZCCL_CHECK(onHost(accumulator, count * 4, "dequantizeAccumulate accumulator", &accumulator));
    return host().dequantizeAccumulate(message, bytes, format, accumulator, count);
  }
  Status accumulateAsFloat(const void* x, zccl::DataType type, size_t count,
                           float* accumulator) override {
    ZCCL_CHECK(onHost(x, count * zccl::elementSize(type), "accumulateAsFloat x", &x));
    ZCCL_CHECK(onHost(accumulator, count * 4, "accumulateAsFloat accumulator", &accumulator));
    return host().accumulateAsFloat(x, type, count, accumulator);
  }
  Status storeFloatAs(float* values, size_t count, int divisor, zccl::DataType type,
                      void* out) override {
    ZCCL_CHECK(onHost(values, count * 4, "storeFloatAs values", &values));
    ZCCL_CHECK(onHost(out, count * zccl::elementSize(type), "storeFloatAs out", &out));
    return host().storeFloatAs(values, count, divisor, type, out);
  }
  Status negateFloats(float* data, size_t count) override {
    ZCCL_CHECK(onHost(data, count * 4, "negateFloats data", &data));
    return host().negateFloats(data, count);
  }

  // The host's rows, so that both paths cut the same messages and their results and bytes on
  // the wire can be compared for blocks of several rows too.
  size_t pipelineElements() const override { return host().pipelineElements(); }

  static constexpr double kRateElements = 4 << 20;  // 16 MiB of float32: how rates are timed
  std::chrono::duration<double> quantizeDelay{0};   // per kRateElements elements
  std::chrono::duration<double> reduceDelay{0};     // the same, for reduceInto
  std::atomic<bool> failQuantize{false};
  std::atomic<bool> loaded{false};  // by the runtime's loadKernels()

 private:
  static zccl::Kernels& host() { return zccl::hostKernels(); }
  // Where the host kernels reach `bytes` of device memory at `data`: a failure naming `what`
  // where they are not the device's.
  template <typename T>
  Status onHost(T* data, size_t bytes, const char* what, T** alias) const {
    if (!loaded) {
      return zccl::fail(Status::kInternalError,
                        "%s: a kernel launched before the device runtime loaded the kernels", what);
    }
    *alias = bytes == 0 ? data : memory_.hostAlias(data, bytes);
    if (*alias != nullptr || bytes == 0) return Status::kSuccess;
    return zccl::fail(Status::kInternalError, "%s: %p (%zu bytes) is not device memory", what, data,
                      bytes);
  }
  const EmulatedDeviceMemory& memory_;
};

// Synchronous copies that check their direction.
class EmulatedCopier final : public zccl::DeviceCopier {
 public:
  explicit EmulatedCopier(const EmulatedDeviceMemory& memory) : memory_(memory) {}

  Status toHost(void* host, const void* device, size_t bytes, CopyId* id) override {
    return move(host, device, bytes, device, host, id);
  }
  Status toDevice(void* device, const void* host, size_t bytes, CopyId* id) override {
    return move(device, host, bytes, device, host, id);
  }
  Status waitCopy(CopyId id) override {
    return id < copies_ ? Status::kSuccess
                        : zccl::fail(Status::kInternalError, "unknown copy %zu", id);
  }
  Status waitAllCopies() override { return Status::kSuccess; }
  void* allocateHost(size_t bytes) override { return new char[bytes]; }
  void freeHost(void* data) override { delete[] static_cast<char*>(data); }

 private:
  Status move(void* to, const void* from, size_t bytes, const void* device, const void* host,
              CopyId* id) {
    if (!memory_.owns(device, bytes) || memory_.owns(host, bytes)) {
      return zccl::fail(Status::kInternalError,
                        "a staging copy between %p and %p is not "
                        "between the device and the host",
                        device, host);
    }
    const bool toDevice = to == device;
    std::memcpy(toDevice ? memory_.hostAlias(to, bytes) : to,
                toDevice ? from : memory_.hostAlias(from, bytes), bytes);
    *id = copies_++;
    return Status::kSuccess;
  }
  const EmulatedDeviceMemory& memory_;
  size_t copies_ = 0;
};

// A caller's stream on the emulated device: work queued on it runs in order on a thread of
// its own, after the work queued before.
class EmulatedStream {
 public:
  EmulatedStream() : thread_([this] { serve(); }) {}
  ~EmulatedStream() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ending_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  void enqueue(std::function<void()> work) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      work_.push_back(std::move(work));
    }
    changed_.notify_all();
  }
  // A graph capture of the stream, as CUDA's: what is queued meanwhile is recorded, not run.
  std::atomic<bool> capturing{false};
  // Returns when the work queued so far has run.
  void synchronize() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return work_.empty() && !busy_; });
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      changed_.wait(lock, [this] { return ending_ || !work_.empty(); });
      if (work_.empty()) return;
      std::function<void()> work = std::move(work_.front());
      work_.pop_front();
      busy_ = true;
      lock.unlock();
      work();
      lock.lock();
      busy_ = false;
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> work_;
  bool busy_ = false;
  bool ending_ = false;
  std::thread thread_;
};

// A point on a stream's work that the host can wait for (or the reverse).
class Latch {
 public:
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    opened_ = true;
    changed_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return opened_; });
  }
  // False when `limit` passed first.
  bool waitFor(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, limit, [this] { return opened_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool opened_ = false;
};

// What a test holds a stream with, as a long kernel would: open() lets it go on; after a
// deadline it goes on by itself and says so (a call that waited for the stream would
// otherwise never return).
class Hold {
 public:
  void open() { latch_.open(); }
  void wait() {
    if (!latch_.waitFor(std::chrono::seconds(30))) expired_ = true;
  }
  bool expired() const { return expired_; }

 private:
  Latch latch_;
  std::atomic<bool> expired_{false};
};

// The gates on emulated streams: each holds its stream's thread until released.
class EmulatedGates final : public zccl::StreamGates {
 public:
  class Inputs final : public zccl::StreamInputs {
   public:
    explicit Inputs(std::shared_ptr<Latch> mark) : mark_(std::move(mark)) {}
    // zccl's own stream runs its work at once: the host waits for the marked work instead.
    Status precede(zccl::DeviceStreamResources&) override {
      mark_->wait();
      return Status::kSuccess;
    }

   private:
    std::shared_ptr<Latch> mark_;
  };

  Status close(void* stream, uint64_t ticket,
               std::unique_ptr<zccl::StreamInputs>* inputs) override {
    auto* caller = static_cast<EmulatedStream*>(stream);
    if (caller->capturing) {
      return zccl::fail(Status::kInvalidUsage, "stream=%p is capturing a graph (emulated)", stream);
    }
    auto mark = std::make_shared<Latch>();
    caller->enqueue([mark] { mark->open(); });
    // The stream's thread may still be leaving a gate when the gates are gone.
    caller->enqueue([state = state_, ticket] {
      std::unique_lock<std::mutex> lock(state->mutex);
      state->released.wait(lock, [&] { return state->releasedUpTo >= ticket; });
    });
    *inputs = std::make_unique<Inputs>(mark);
    return Status::kSuccess;
  }
  void release(uint64_t ticket) override {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->releasedUpTo = std::max(state_->releasedUpTo, ticket);
    state_->released.notify_all();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable released;
    uint64_t releasedUpTo = 0;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Where a test's device buffers live: the emulated device, or a real GPU (several ranks may
// share it: the staged path is what lets them).
class TestDevice {
 public:
  virtual ~TestDevice() = default;
  // The stream a public call takes, and the runtime the library uses for it (nullptr: the
  // library's own, CUDA's).
  virtual void* stream() = 0;
  virtual zccl::DeviceRuntime* runtime() = 0;
  virtual zccl::Kernels& kernels() = 0;
  virtual zccl::DeviceCopier& copier() = 0;
  virtual zccl::ScratchAllocator scratchAllocator() = 0;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* data) = 0;
  virtual void upload(void* device, const void* host, size_t bytes) = 0;
  // Host memory that copies on the stream take without waiting for it (page-locked).
  virtual void* allocateHost(size_t bytes) = 0;
  virtual void releaseHost(void* data) = 0;
  // Queued on stream(): a copy (either way, between device memory and allocateHost's), and a
  // hold of the stream until `hold` opens.
  virtual void copyOnStream(void* to, const void* from, size_t bytes) = 0;
  virtual void holdStream(Hold* hold) = 0;
  // Returns when the work queued on stream() so far has run.
  virtual void synchronize() = 0;
  // Starts and ends capturing stream() into a graph (thrown away), CUDA's global mode.
  virtual void beginCapture() = 0;
  virtual void endCapture() = 0;
  // After the work queued on stream() so far.
  void download(void* host, const void* device, size_t bytes) {
    synchronize();
    copyToHost(host, device, bytes);
  }

 protected:
  virtual void copyToHost(void* host, const void* device, size_t bytes) = 0;
};

// zccl's own stream on the emulated device: the device's kernels and copier, which run at once.
class LentStreamResources final : public zccl::DeviceStreamResources {
 public:
  LentStreamResources(zccl::Kernels& kernels, zccl::DeviceCopier& copier,
                      zccl::ScratchAllocator scratch)
      : kernels_(kernels), copier_(copier), scratch_(std::move(scratch)) {}
  void* stream() override { return this; }
  zccl::Kernels& kernels() override { return kernels_; }
  zccl::DeviceCopier& copier() override { return copier_; }
  zccl::ScratchAllocator scratchAllocator() override { return scratch_; }
  Status synchronize() override { return Status::kSuccess; }

 private:
  zccl::Kernels& kernels_;
  zccl::DeviceCopier& copier_;
  zccl::ScratchAllocator scratch_;
};

// The emulated device as the library's device runtime: its memory is device 0's (the
// current device unless a test says otherwise), any other is host memory.
class EmulatedRuntime final : public zccl::DeviceRuntime {
 public:
  EmulatedRuntime(EmulatedDeviceMemory& memory, EmulatedDeviceKernels& kernels,
                  zccl::DeviceCopier& copier)
      : memory_(memory), kernels_(kernels), copier_(copier) {}
  const char* name() const override { return "emulated"; }
  Status classify(const void* pointer, zccl::PointerInfo* info) override {
    const bool device = memory_.owns(pointer, 1);
    info->kind = device ? zccl::MemoryKind::kDevice : zccl::MemoryKind::kHost;
    info->device = device ? 0 : -1;
    return Status::kSuccess;
  }
  Status currentDevice(int* device) override {
    *device = current;
    return Status::kSuccess;
  }
  Status setCurrentDevice(int) override { return Status::kSuccess; }
  Status ownStream(std::unique_ptr<zccl::DeviceStreamResources>* out) override {
    *out = std::make_unique<LentStreamResources>(kernels_, copier_, scratchAllocator());
    return Status::kSuccess;
  }
  Status streamGates(std::unique_ptr<zccl::StreamGates>* out) override {
    *out = std::make_unique<EmulatedGates>();
    return Status::kSuccess;
  }
  // As a GPU's, the device's kernels run only once loaded; unlike a GPU's, they refuse to load
  // themselves at their first launch, so that a path that did not load them first fails here.
  Status loadKernels() override {
    kernels_.loaded = true;
    return Status::kSuccess;
  }
  zccl::ScratchAllocator scratchAllocator() {
    return zccl::ScratchAllocator{[this](size_t bytes) { return memory_.allocate(bytes); },
                                  [this](void* data) { memory_.release(data); }};
  }
  bool ncclDeviceId(std::string*, std::string* whyNot) override {
    *whyNot = "the emulated device cannot run NCCL";
    return false;
  }
  std::atomic<int> current{0};

 private:
  EmulatedDeviceMemory& memory_;
  EmulatedDeviceKernels& kernels_;
  zccl::DeviceCopier& copier_;
};

class EmulatedDevice final : public TestDevice {
 public:
  void* stream() override { return &stream_; }
  zccl::DeviceRuntime* runtime() override { return &runtime_; }
  EmulatedRuntime& emulatedRuntime() { return runtime_; }
  EmulatedStream& emulatedStream() { return stream_; }
  EmulatedDeviceKernels& emulatedKernels() { return kernels_; }
  // Quantizing 16 MiB of float32 takes `delay` more.
  void slowQuantization(std::chrono::milliseconds delay) { kernels_.quantizeDelay = delay; }
  void slowReductions(std::chrono::milliseconds delay) { kernels_.reduceDelay = delay; }
  zccl::Kernels& kernels() override { return kernels_; }
  zccl::DeviceCopier& copier() override { return copier_; }
  zccl::ScratchAllocator scratchAllocator() override { return runtime_.scratchAllocator(); }
  void* allocate(size_t bytes) override { return memory_.allocate(bytes); }
  void release(void* data) override { memory_.release(data); }
  void upload(void* device, const void* host, size_t bytes) override {
    std::memcpy(onHost(device, bytes), host, bytes);
  }
  void* allocateHost(size_t bytes) override { return new char[bytes]; }
  void releaseHost(void* data) override { delete[] static_cast<char*>(data); }
  void copyOnStream(void* to, const void* from, size_t bytes) override {
    stream_.enqueue([=] { std::memcpy(onHost(to, bytes), onHost(from, bytes), bytes); });
  }
  // Where the host reaches `bytes` at `data`: its alias for device memory, else `data`.
  template <typename T>
  T* onHost(T* data, size_t bytes) const {
    T* alias = memory_.hostAlias(data, bytes);
    return alias != nullptr ? alias : data;
  }
  void holdStream(Hold* hold) override {
    stream_.enqueue([hold] { hold->wait(); });
  }
  void synchronize() override { stream_.synchronize(); }
  void beginCapture() override { stream_.capturing = true; }
  void endCapture() override { stream_.capturing = false; }

 protected:
  void copyToHost(void* host, const void* device, size_t bytes) override {
    std::memcpy(host, onHost(device, bytes), bytes);
  }

 private:
  EmulatedDeviceMemory memory_;
  EmulatedDeviceKernels kernels_{memory_};
  EmulatedCopier copier_{memory_};
  EmulatedRuntime runtime_{memory_, kernels_, copier_};
  EmulatedStream stream_;  // declared last: ends first, while the gates' memory is there
};

}  // namespace zccl_harness
