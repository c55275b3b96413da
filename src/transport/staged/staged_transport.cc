// The staged transport (staged_transport.h): device messages in chunks through page-locked
// host memory over a host transport.
#include "transport/staged/staged_transport.h"

#include <algorithm>
#include <vector>

namespace zccl {
namespace {

// Page-locked buffers handed out in order and taken back all at once (every message of a
// waitAll() round is live until its end). Grows by whole blocks, each twice the last, and
// frees them only at its end: freeing page-locked memory waits for the whole device (CUDA),
// which a caller's stream held at a gate until this round ends would never let finish.
class StagingArena {
 public:
  explicit StagingArena(DeviceCopier& copier) : copier_(copier) {}
  ~StagingArena() {
    if (!pinned_) releaseBlocks();
  }

  Status take(size_t bytes, char** out) {
    while (current_ < blocks_.size() && blocks_[current_].used + bytes > blocks_[current_].bytes) {
      ++current_;
    }
    if (current_ == blocks_.size()) {
      const size_t grown = blocks_.empty() ? 0 : 2 * blocks_.back().bytes;
      ZCCL_CHECK(addBlock(std::max({bytes, grown, size_t{4} << 20})));
    }
    Block& block = blocks_[current_];
    *out = block.data + block.used;
    block.used += (bytes + 63) / 64 * 64;
    return Status::kSuccess;
  }

  void reset() {
    for (Block& block : blocks_) block.used = 0;
    current_ = 0;
  }

  // The host transport may still write these: they outlive the arena.
  void pin() { pinned_ = true; }

 private:
  struct Block {
    char* data;
    size_t bytes;
    size_t used;
  };

  Status addBlock(size_t bytes) {
    void* data = copier_.allocateHost(bytes);
    if (data == nullptr) {
      return fail(Status::kSystemError, "cannot allocate %zu bytes of staging memory", bytes);
    }
    blocks_.push_back(Block{static_cast<char*>(data), bytes, 0});
    return Status::kSuccess;
  }

  void releaseBlocks() {
    for (const Block& block : blocks_) copier_.freeHost(block.data);
    blocks_.clear();
  }

  DeviceCopier& copier_;
  std::vector<Block> blocks_;
  size_t current_ = 0;  // the block take() tries first
  bool pinned_ = false;
};

class StagedTransport final : public Transport {
 public:
  StagedTransport(Transport& host, std::unique_ptr<Transport> owned, DeviceCopier& copier,
                  const StagedOptions& options)
      : host_(host), owned_(std::move(owned)), copier_(copier), options_(options), arena_(copier) {
    traffic_.assign(static_cast<size_t>(host_.size()), PeerTraffic{});
    setPeerRanks(peerRanksOf(host_));
  }
  ~StagedTransport() override {
    if (!operations_.empty()) abandon();
  }

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  int maxTag() const override { return host_.maxTag(); }
  void progress() override { host_.progress(); }

  // Every chunk's copy to the host starts at once; each chunk leaves as its copy completes.
  Status postSend(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    Operation operation{false, nullptr, {}, false};
    const char* device = static_cast<const char*>(data);
    ZCCL_CHECK(stageChunks(bytes, &operation.chunks));
    for (Chunk& chunk : operation.chunks) {
      ZCCL_CHECK(copier_.toHost(chunk.host, device + chunk.offset, chunk.bytes, &chunk.copy));
    }
    for (Chunk& chunk : operation.chunks) {
      ZCCL_CHECK(copier_.waitCopy(chunk.copy));
      ZCCL_CHECK(host_.postSend(chunk.host, chunk.bytes, peer, tag, &chunk.ticket));
    }
    return record(std::move(operation), ticket);
  }

  Status postRecv(void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    Operation operation{true, static_cast<char*>(data), {}, false};
    ZCCL_CHECK(stageChunks(bytes, &operation.chunks));
    for (Chunk& chunk : operation.chunks) {
      ZCCL_CHECK(host_.postRecv(chunk.host, chunk.bytes, peer, tag, &chunk.ticket));
    }
    return record(std::move(operation), ticket);
  }

  // A received chunk's copy to the device starts as soon as it arrives, while later chunks
  // are still on the wire.
  Status wait(Ticket ticket) override {
    if (ticket >= operations_.size()) {
      return fail(Status::kInternalError, "wait on unknown staged ticket %zu", ticket);
    }
    Operation& operation = operations_[ticket];
    if (operation.done) return Status::kSuccess;
    for (Chunk& chunk : operation.chunks) {
      ZCCL_CHECK(host_.wait(chunk.ticket));
      if (operation.receive) {
        ZCCL_CHECK(copier_.toDevice(operation.device + chunk.offset, chunk.host, chunk.bytes,
                                    &chunk.copy));
      }
    }
    for (Chunk& chunk : operation.chunks) {
      if (operation.receive) ZCCL_CHECK(copier_.waitCopy(chunk.copy));
    }
    operation.done = true;
    return Status::kSuccess;
  }

  Status waitAll() override {
    for (Ticket ticket = 0; ticket < operations_.size(); ++ticket) ZCCL_CHECK(wait(ticket));
    ZCCL_CHECK(host_.waitAll());
    ZCCL_CHECK(copier_.waitAllCopies());
    operations_.clear();
    arena_.reset();
    return Status::kSuccess;
  }

  Status split(int color, int key, std::unique_ptr<Transport>* out) override {
    std::unique_ptr<Transport> hostPart;
    ZCCL_CHECK(host_.split(color, key, &hostPart));
    if (hostPart == nullptr) {
      out->reset();
      return Status::kSuccess;
    }
    Transport& host = *hostPart;
    *out = std::make_unique<StagedTransport>(host, std::move(hostPart), copier_, options_);
    return Status::kSuccess;
  }

  Status allGatherControl(const void* mine, size_t bytes, void* all) override {
    return host_.allGatherControl(mine, bytes, all);
  }

  bool abandon() override {
    const bool settled = host_.abandon();
    if (!settled) arena_.pin();
    operations_.clear();
    return settled;
  }

 private:
  struct Chunk {
    size_t offset;
    size_t bytes;
    char* host;
    Ticket ticket = 0;
    DeviceCopier::CopyId copy = 0;
  };
  struct Operation {
    bool receive;
    char* device;  // a receive's destination
    std::vector<Chunk> chunks;
    bool done;
  };

  static std::vector<int> peerRanksOf(const Transport& host) {
    std::vector<int> ranks(static_cast<size_t>(host.size()));
    for (int member = 0; member < host.size(); ++member) ranks[member] = host.peerRank(member);
    return ranks;
  }

  // Zero bytes stage nothing, as they post nothing.
  Status stageChunks(size_t bytes, std::vector<Chunk>* chunks) {
    for (size_t offset = 0; offset < bytes; offset += options_.chunkBytes) {
      Chunk chunk{offset, std::min(options_.chunkBytes, bytes - offset), nullptr};
      ZCCL_CHECK(arena_.take(chunk.bytes, &chunk.host));
      chunks->push_back(chunk);
    }
    return Status::kSuccess;
  }

  Status record(Operation&& operation, Ticket* ticket) {
    *ticket = operations_.size();
    operations_.push_back(std::move(operation));
    return Status::kSuccess;
  }

  Transport& host_;
  std::unique_ptr<Transport> owned_;  // a split's host transport
  DeviceCopier& copier_;
  const StagedOptions options_;
  StagingArena arena_;
  std::vector<Operation> operations_;
};

}  // namespace

std::unique_ptr<Transport> makeStagedTransport(Transport& host, DeviceCopier& copier,
                                               const StagedOptions& options) {
  return std::make_unique<StagedTransport>(host, nullptr, copier, options);
}

}  // namespace zccl
