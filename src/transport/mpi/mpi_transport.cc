#include "transport/mpi/mpi_transport.h"

#include <sched.h>

#include <chrono>
#include <climits>
#include <string>

#include "common/log.h"
#include "common/reduce.h"

namespace zccl {
namespace {

// MPI counts are int: larger messages travel as several, which MPI keeps in order.
constexpr size_t kMaxMessageBytes = size_t{1} << 30;

#define ZCCL_MPI_CHECK(call)                                                     \
  do {                                                                           \
    const int zccl_mpi_rc_ = (call);                                             \
    if (zccl_mpi_rc_ != MPI_SUCCESS) {                                           \
      char zccl_mpi_text_[MPI_MAX_ERROR_STRING];                                 \
      int zccl_mpi_length_ = 0;                                                  \
      MPI_Error_string(zccl_mpi_rc_, zccl_mpi_text_, &zccl_mpi_length_);         \
      return fail(Status::kSystemError, "%s failed: %s", #call, zccl_mpi_text_); \
    }                                                                            \
  } while (0)

// Reduction of half-precision values for MPI's own collectives, which know no fp16/bf16.
template <DataType Type, RedOp Op>
void halfReduce(void* in, void* inout, int* length, MPI_Datatype* /*datatype*/) {
  reduceInto(inout, in, static_cast<size_t>(*length), Type, Op);
}

template <DataType Type>
MPI_Op halfOp(RedOp op) {
  static const MPI_Op ops[] = {
      [] {
        MPI_Op o;
        MPI_Op_create(halfReduce<Type, RedOp::kSum>, 1, &o);
        return o;
      }(),
      [] {
        MPI_Op o;
        MPI_Op_create(halfReduce<Type, RedOp::kProd>, 1, &o);
        return o;
      }(),
      [] {
        MPI_Op o;
        MPI_Op_create(halfReduce<Type, RedOp::kMax>, 1, &o);
        return o;
      }(),
      [] {
        MPI_Op o;
        MPI_Op_create(halfReduce<Type, RedOp::kMin>, 1, &o);
        return o;
      }(),
  };
  return ops[static_cast<int>(op)];
}

MPI_Datatype mpiType(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return MPI_INT8_T;
    case DataType::kUint8:
      return MPI_UINT8_T;
    case DataType::kInt32:
      return MPI_INT32_T;
    case DataType::kUint32:
      return MPI_UINT32_T;
    case DataType::kInt64:
      return MPI_INT64_T;
    case DataType::kUint64:
      return MPI_UINT64_T;
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return MPI_UINT16_T;
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
    case DataType::kCount:
      break;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpiOp(DataType type, RedOp op) {
  if (type == DataType::kFloat16) return halfOp<DataType::kFloat16>(op);
  if (type == DataType::kBfloat16) return halfOp<DataType::kBfloat16>(op);
  switch (op) {
    case RedOp::kSum:
      return MPI_SUM;
    case RedOp::kProd:
      return MPI_PROD;
    case RedOp::kMax:
      return MPI_MAX;
    case RedOp::kMin:
      return MPI_MIN;
    case RedOp::kAvg:
    case RedOp::kCount:
      break;
  }
  return MPI_OP_NULL;
}

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, const TransportOptions& options) : comm_(comm), options_(options) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    traffic_.resize(static_cast<size_t>(size_));
  }
  ~MpiTransport() override {
    if (!requests_.empty()) abandon();
    MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status postSend(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    ZCCL_CHECK(post(/*isSend=*/true, const_cast<void*>(data), bytes, peer, tag, ticket));
    countSend(peer, bytes, (bytes + kMaxMessageBytes - 1) / kMaxMessageBytes);
    return Status::kSuccess;
  }

  Status postRecv(void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    return post(/*isSend=*/false, data, bytes, peer, tag, ticket);
  }

  Status wait(Ticket ticket) override {
    if (ticket >= tickets_.size()) {
      return fail(Status::kInternalError, "wait on unknown ticket %zu", ticket);
    }
    return waitRange(tickets_[ticket].first, tickets_[ticket].last);
  }

  Status waitAll() override {
    ZCCL_CHECK(waitRange(0, requests_.size()));
    requests_.clear();
    tickets_.clear();
    return Status::kSuccess;
  }

  Status split(int color, int key, std::unique_ptr<Transport>* out) override {
    ZCCL_CHECK(checkUsable());
    MPI_Comm child = MPI_COMM_NULL;
    ZCCL_MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &child));
    out->reset();
    if (child != MPI_COMM_NULL) {
      MPI_Comm_set_errhandler(child, MPI_ERRORS_RETURN);
      *out = std::make_unique<MpiTransport>(child, options_);
    }
    return Status::kSuccess;
  }

  Status allGatherControl(const void* mine, size_t bytes, void* all) override {
    ZCCL_CHECK(checkUsable());
    ZCCL_MPI_CHECK(MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all,
                                 static_cast<int>(bytes), MPI_BYTE, comm_));
    return Status::kSuccess;
  }

  Status nativeAllGather(const void* send, void* recv, size_t count, DataType type) override {
    ZCCL_CHECK(checkNativeCount(count));
    MPI_Request request;
    ZCCL_MPI_CHECK(MPI_Iallgather(send, static_cast<int>(count), mpiType(type), recv,
                                  static_cast<int>(count), mpiType(type), comm_, &request));
    return waitNative(request);
  }

  Status nativeReduceScatter(const void* send, void* recv, size_t recvCount, DataType type,
                             RedOp op) override {
    ZCCL_CHECK(checkNativeCount(recvCount));
    MPI_Request request;
    ZCCL_MPI_CHECK(MPI_Ireduce_scatter_block(send, recv, static_cast<int>(recvCount), mpiType(type),
                                             mpiOp(type, op), comm_, &request));
    return waitNative(request);
  }

  Status nativeAllReduce(const void* send, void* recv, size_t count, DataType type,
                         RedOp op) override {
    ZCCL_CHECK(checkNativeCount(count));
    MPI_Request request;
    ZCCL_MPI_CHECK(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                                  mpiType(type), mpiOp(type, op), comm_, &request));
    return waitNative(request);
  }

  Status nativeBroadcast(void* data, size_t count, DataType type, int root) override {
    ZCCL_CHECK(checkNativeCount(count));
    MPI_Request request;
    ZCCL_MPI_CHECK(MPI_Ibcast(data, static_cast<int>(count), mpiType(type), root, comm_, &request));
    return waitNative(request);
  }

  Status nativeAllToAll(const void* send, void* recv, size_t count, DataType type) override {
    ZCCL_CHECK(checkNativeCount(count));
    MPI_Request request;
    ZCCL_MPI_CHECK(MPI_Ialltoall(send, static_cast<int>(count), mpiType(type), recv,
                                 static_cast<int>(count), mpiType(type), comm_, &request));
    return waitNative(request);
  }

  void abandon() override {
    for (MPI_Request& request : requests_) {
      if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    }
    requests_.clear();
    tickets_.clear();
  }

 private:
  struct TicketRange {
    size_t first;
    size_t last;
    int peer;
    bool isSend;
  };

  // Posts `bytes` as messages of at most kMaxMessageBytes, which MPI keeps in order.
  Status post(bool isSend, void* data, size_t bytes, int peer, int tag, Ticket* ticket) {
    ZCCL_CHECK(beginTicket(peer, isSend, ticket));
    char* base = static_cast<char*>(data);
    for (size_t offset = 0; offset < bytes;) {  // zero bytes: nothing travels
      const int length = static_cast<int>(std::min(kMaxMessageBytes, bytes - offset));
      MPI_Request request;
      if (isSend) {
        ZCCL_MPI_CHECK(MPI_Isend(base + offset, length, MPI_BYTE, peer, tag, comm_, &request));
      } else {
        ZCCL_MPI_CHECK(MPI_Irecv(base + offset, length, MPI_BYTE, peer, tag, comm_, &request));
      }
      requests_.push_back(request);
      offset += static_cast<size_t>(length);
    }
    return endTicket(*ticket);
  }

  Status checkUsable() const {
    if (broken_) {
      return fail(Status::kRemoteError,
                  "the communicator timed out earlier and its peers may be gone; abort it");
    }
    return Status::kSuccess;
  }

  Status checkNativeCount(size_t count) const {
    ZCCL_CHECK(checkUsable());
    if (count > static_cast<size_t>(INT_MAX)) {
      return fail(Status::kInvalidUsage,
                  "count=%zu: the native (MPI) algorithm takes at most %d elements per rank", count,
                  INT_MAX);
    }
    return Status::kSuccess;
  }

  Status beginTicket(int peer, bool isSend, Ticket* ticket) {
    *ticket = tickets_.size();
    ZCCL_CHECK(checkUsable());
    if (peer < 0 || peer >= size_) {
      return fail(Status::kInternalError, "peer=%d outside [0, %d)", peer, size_);
    }
    tickets_.push_back({requests_.size(), requests_.size(), peer, isSend});
    return Status::kSuccess;
  }

  Status endTicket(Ticket ticket) {
    tickets_[ticket].last = requests_.size();
    return Status::kSuccess;
  }

  Status waitNative(MPI_Request request) {
    Ticket ticket = 0;
    ZCCL_CHECK(beginTicket(rank_, /*isSend=*/false, &ticket));
    tickets_[ticket].peer = -1;  // every rank of the group
    requests_.push_back(request);
    ZCCL_CHECK(endTicket(ticket));
    return waitAll();
  }

  Status waitRange(size_t first, size_t last) {
    if (first == last) return Status::kSuccess;
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const int count = static_cast<int>(last - first);
    for (unsigned spin = 0;; ++spin) {
      int done = 0;
      ZCCL_MPI_CHECK(MPI_Testall(count, &requests_[first], &done, MPI_STATUSES_IGNORE));
      if (done) return Status::kSuccess;
      // Yield so that oversubscribed ranks (more ranks than cores) still progress.
      sched_yield();
      if (options_.timeoutSeconds > 0 && (spin & 1023u) == 0 &&
          std::chrono::duration<double>(Clock::now() - start).count() > options_.timeoutSeconds) {
        return timedOut(first, last);
      }
    }
  }

  Status timedOut(size_t first, size_t last) {
    std::string peers;
    for (const TicketRange& range : tickets_) {
      if (range.last <= first || range.first >= last) continue;
      bool pending = false;
      for (size_t i = range.first; i < range.last; ++i) pending |= requests_[i] != MPI_REQUEST_NULL;
      if (!pending) continue;
      if (!peers.empty()) peers += ", ";
      peers += range.peer < 0
                   ? std::string("all (native collective)")
                   : (range.isSend ? "send to " : "receive from ") + std::to_string(range.peer);
    }
    broken_ = true;
    abandon();
    return fail(Status::kTimeout,
                "rank %d waited %.1f s (ZCCL_TIMEOUT_S) without completion of: %s", rank_,
                options_.timeoutSeconds, peers.c_str());
  }

  MPI_Comm comm_;
  TransportOptions options_;
  int rank_ = 0;
  int size_ = 0;
  bool broken_ = false;
  std::vector<MPI_Request> requests_;
  std::vector<TicketRange> tickets_;
};

}  // namespace

Status createMpiTransport(MPI_Comm comm, const TransportOptions& options,
                          std::unique_ptr<Transport>* out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return fail(Status::kInvalidUsage, "MPI is not initialized; call MPI_Init first");
  if (comm == MPI_COMM_NULL) return fail(Status::kInvalidArgument, "mpiComm=MPI_COMM_NULL");
  MPI_Comm duplicate = MPI_COMM_NULL;
  ZCCL_MPI_CHECK(MPI_Comm_dup(comm, &duplicate));
  MPI_Comm_set_errhandler(duplicate, MPI_ERRORS_RETURN);
  *out = std::make_unique<MpiTransport>(duplicate, options);
  return Status::kSuccess;
}

}  // namespace zccl
