// The NCCL transport (nccl_transport.h): device messages as ncclSend/ncclRecv on the
// collective's stream, NCCL's collectives as the engine's own.
#include "transport/nccl/nccl_transport.h"

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/cuda_status.h"
#include "nccl_abi/nccl_functions.h"
#include "transport/engine_collectives.h"

namespace zccl {
namespace {

using nccl::NcclFunctions;
using nccl::ncclResult_t;
using nccl::RealComm;
constexpr nccl::ncclResult_t kNcclSuccess = nccl::ncclSuccess;

// NCCL's data type for zccl's (the ops' values are the same: sum, prod, max, min).
nccl::ncclDataType_t ncclTypeOf(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return nccl::ncclInt8;
    case DataType::kUint8:
      return nccl::ncclUint8;
    case DataType::kInt32:
      return nccl::ncclInt32;
    case DataType::kUint32:
      return nccl::ncclUint32;
    case DataType::kInt64:
      return nccl::ncclInt64;
    case DataType::kUint64:
      return nccl::ncclUint64;
    case DataType::kFloat16:
      return nccl::ncclFloat16;
    case DataType::kFloat32:
      return nccl::ncclFloat32;
    case DataType::kFloat64:
      return nccl::ncclFloat64;
    case DataType::kBfloat16:
      return nccl::ncclBfloat16;
    default:
      return nccl::ncclNumTypes;
  }
}

struct Message {
  bool isSend;
  void* data;
  size_t bytes;
  int peer;
};

class NcclTransport final : public StreamTransport, public EngineCollectives {
 public:
  NcclTransport(const NcclFunctions& api, RealComm* comm, cudaEvent_t done, Transport& control,
                const TransportOptions& options)
      : api_(api), comm_(comm), done_(done), control_(control), options_(options) {
    traffic_.assign(static_cast<size_t>(control.size()), PeerTraffic{});
  }
  ~NcclTransport() override {
    if (comm_ != nullptr) api_.commDestroy(comm_);
    cudaEventDestroy(done_);
  }
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  int rank() const override { return control_.rank(); }
  int size() const override { return control_.size(); }
  int maxTag() const override { return control_.maxTag(); }  // tags are not NCCL's
  void useStream(void* stream) override { stream_ = static_cast<cudaStream_t>(stream); }

  Status postSend(const void* data, size_t bytes, int peer, int, Ticket* ticket) override {
    ZCCL_CHECK(post(true, const_cast<void*>(data), bytes, peer, ticket));
    if (bytes > 0) countSend(peer, bytes, 1);
    return Status::kSuccess;
  }
  Status postRecv(void* data, size_t bytes, int peer, int, Ticket* ticket) override {
    return post(false, data, bytes, peer, ticket);
  }
  Status wait(Ticket) override { return waitAll(); }  // a group completes as one

  Status waitAll() override {
    if (messages_.empty()) return Status::kSuccess;
    ZCCL_CHECK(check(api_.groupStart(), "ncclGroupStart"));
    Status status = Status::kSuccess;
    for (const Message& m : messages_) {
      const ncclResult_t result =
          m.isSend ? api_.send(m.data, m.bytes, nccl::ncclUint8, m.peer, comm_, stream_)
                   : api_.recv(m.data, m.bytes, nccl::ncclUint8, m.peer, comm_, stream_);
      if (status == Status::kSuccess) status = check(result, m.isSend ? "ncclSend" : "ncclRecv");
    }
    const Status ended = check(api_.groupEnd(), "ncclGroupEnd");
    messages_.clear();
    ZCCL_CHECK(status);
    ZCCL_CHECK(ended);
    return waitForStream();
  }

  EngineCollectives* engineCollectives() override { return this; }
  Status allGather(const void* send, void* recv, size_t count, DataType type) override {
    return native("ncclAllGather", api_.allGather, send, recv, count, type, comm_, stream_);
  }
  Status reduceScatter(const void* send, void* recv, size_t recvCount, DataType type,
                       RedOp op) override {
    return native("ncclReduceScatter", api_.reduceScatter, send, recv, recvCount, type,
                  static_cast<nccl::ncclRedOp_t>(op), comm_, stream_);
  }
  Status allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    return native("ncclAllReduce", api_.allReduce, send, recv, count, type,
                  static_cast<nccl::ncclRedOp_t>(op), comm_, stream_);
  }
  Status broadcast(void* data, size_t count, DataType type, int root) override {
    return native("ncclBroadcast", api_.broadcast, data, data, count, type, root, comm_, stream_);
  }
  Status allToAll(const void* send, void* recv, size_t count, DataType type) override {
    return native("ncclAlltoAll", api_.allToAll, send, recv, count, type, comm_, stream_);
  }
  Status reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                int root) override {
    return native("ncclReduce", api_.reduce, send, recv, count, type,
                  static_cast<nccl::ncclRedOp_t>(op), root, comm_, stream_);
  }
  // In place at the root: NCCL's form is the root's own block of the other buffer.
  Status gather(const void* send, void* recv, size_t count, DataType type, int root) override {
    if (send == nullptr) send = static_cast<char*>(recv) + ownBlock(root, count, type);
    return native("ncclGather", api_.gather, send, recv, count, type, root, comm_, stream_);
  }
  Status scatter(const void* send, void* recv, size_t count, DataType type, int root) override {
    if (recv == nullptr)
      recv = static_cast<char*>(const_cast<void*>(send)) + ownBlock(root, count, type);
    return native("ncclScatter", api_.scatter, send, recv, count, type, root, comm_, stream_);
  }

  Status split(int, int, std::unique_ptr<Transport>*) override {
    return fail(Status::kInvalidUsage,
                "the NCCL transport does not split: the device path makes one per level");
  }
  Status allGatherControl(const void* mine, size_t bytes, void* all) override {
    return control_.allGatherControl(mine, bytes, all);
  }

  bool abandon() override {
    messages_.clear();
    if (comm_ != nullptr) api_.commAbort(comm_);  // cancels what NCCL has in flight
    comm_ = nullptr;
    return true;
  }

 private:
  using Clock = std::chrono::steady_clock;

  Status post(bool isSend, void* data, size_t bytes, int peer, Ticket* ticket) {
    if (comm_ == nullptr) {
      return fail(Status::kInvalidUsage, "the NCCL transport was abandoned after an error");
    }
    if (peer < 0 || peer >= size()) {
      return fail(Status::kInternalError, "peer=%d outside [0, %d)", peer, size());
    }
    *ticket = messages_.size();
    if (bytes > 0) messages_.push_back({isSend, data, bytes, peer});
    return Status::kSuccess;
  }

  Status check(ncclResult_t result, const char* what) const {
    if (result == kNcclSuccess) return Status::kSuccess;
    return fail(Status::kSystemError, "%s: NCCL error %d (%s)", what, result,
                api_.getErrorString(result));
  }

  size_t ownBlock(int root, size_t count, DataType type) const {
    return rank() == root ? static_cast<size_t>(root) * count * elementSize(type) : 0;
  }

  // One of NCCL's collectives on the stream, waited for; `type` becomes NCCL's.
  template <typename Function, typename... Rest>
  Status native(const char* what, Function function, const void* send, void* recv, size_t count,
                DataType type, Rest... rest) {
    if (comm_ == nullptr) {
      return fail(Status::kInvalidUsage, "the NCCL transport was abandoned after an error");
    }
    if (function == nullptr) {
      return fail(Status::kInvalidUsage, "%s: this NCCL has none (it came with NCCL 2.28)", what);
    }
    ZCCL_CHECK(check(function(send, recv, count, ncclTypeOf(type), rest...), what));
    return waitForStream();
  }

  // What is queued on the stream so far, NCCL's asynchronous error, the timeout and abort
  // requests, in turn.
  Status waitForStream() {
    ZCCL_CUDA_CHECK(cudaEventRecord(done_, stream_));
    const auto start = Clock::now();
    for (unsigned poll = 0;; ++poll) {
      const cudaError_t done = cudaEventQuery(done_);
      if (done == cudaSuccess) return Status::kSuccess;
      if (done != cudaErrorNotReady) return cudaFailure(done, "cudaEventQuery");
      ncclResult_t asyncError = kNcclSuccess;
      ZCCL_CHECK(check(api_.commGetAsyncError(comm_, &asyncError), "ncclCommGetAsyncError"));
      if (asyncError != kNcclSuccess) {
        const Status status = check(asyncError, "NCCL (asynchronous)");
        abandon();
        return status;
      }
      if (abortRequested()) {
        abandon();
        return fail(Status::kRemoteError, "rank %d: the communicator was aborted while waiting",
                    rank());
      }
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      if (options_.timeoutSeconds > 0 && waited > options_.timeoutSeconds) {
        abandon();
        return fail(Status::kTimeout,
                    "rank %d: NCCL's sends and receives did not complete within %.1f s "
                    "(ZCCL_TIMEOUT_S); a peer may be gone",
                    rank(), options_.timeoutSeconds);
      }
      pauseBetweenPolls(poll);
    }
  }

  const NcclFunctions& api_;
  RealComm* comm_;
  cudaEvent_t done_;
  cudaStream_t stream_ = nullptr;
  Transport& control_;
  TransportOptions options_;
  std::vector<Message> messages_;
};

}  // namespace

bool ncclLoadable(std::string* reason) {
  return nccl::loadNcclFunctions(nccl::NcclUser::kTransport, reason) != nullptr;
}

Status makeNcclTransport(Transport& control, const TransportOptions& options,
                         std::unique_ptr<StreamTransport>* out) {
  std::string error;
  const NcclFunctions* functions = nccl::loadNcclFunctions(nccl::NcclUser::kTransport, &error);
  if (functions == nullptr) {
    return fail(Status::kSystemError, "the NCCL transport: %s", error.c_str());
  }
  const NcclFunctions& api = *functions;
  // Rank 0's id, with whether it could make one (the others must not wait for it in vain).
  struct Offer {
    int ok;
    nccl::ncclUniqueId id;
  };
  Offer mine{1, {}};
  if (control.rank() == 0) mine.ok = api.getUniqueId(&mine.id) == kNcclSuccess ? 1 : 0;
  std::vector<Offer> all(static_cast<size_t>(control.size()));
  ZCCL_CHECK(control.allGatherControl(&mine, sizeof(mine), all.data()));
  if (all[0].ok == 0) {
    return fail(Status::kSystemError, "ncclGetUniqueId failed on rank %d", control.peerRank(0));
  }
  RealComm* comm = nullptr;
  const ncclResult_t result = api.commInitRank(&comm, control.size(), all[0].id, control.rank());
  if (result != kNcclSuccess) {
    return fail(Status::kSystemError, "ncclCommInitRank: NCCL error %d (%s)", result,
                api.getErrorString(result));
  }
  cudaEvent_t done = nullptr;
  const cudaError_t created = cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
  if (created != cudaSuccess) {
    api.commDestroy(comm);
    return cudaFailure(created, "cudaEventCreateWithFlags");
  }
  *out = std::make_unique<NcclTransport>(api, comm, done, control, options);
  return Status::kSuccess;
}

}  // namespace zccl
