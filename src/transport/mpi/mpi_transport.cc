// The MPI transport (mpi_transport.h): point-to-point over MPI_Isend/MPI_Irecv on a duplicate of
// the application's communicator, MPI's collectives as the engine's own.
#include "transport/mpi/mpi_transport.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <memory>
#include <string>

#include "common/log.h"
#include "kernels/reduce.h"
#include "transport/engine_collectives.h"
#include "transport/ticket_book.h"

namespace zccl {
namespace {

// MPI counts are int: larger messages travel as several, which MPI keeps in order.
constexpr size_t kMaxMessageBytes = size_t{1} << 30;
// How long abandon() waits for MPI to confirm the cancellation of what was pending.
constexpr double kAbandonGraceSeconds = 1.0;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<size_t>(length));
}

// An MPI error as a Status: a truncated message means the ranks' calls do not match.
Status mpiFailure(const char* call, int code) {
  int errorClass = MPI_ERR_OTHER;
  MPI_Error_class(code, &errorClass);
  if (errorClass == MPI_ERR_TRUNCATE) {
    return fail(Status::kInvalidUsage,
                "%s: a peer sent more bytes than this rank expected, so the ranks' calls do "
                "not match (another collective, count, type or root); ZCCL_CHECK=1 names the "
                "difference (%s)",
                call, mpiErrorText(code).c_str());
  }
  return fail(Status::kSystemError, "%s failed: %s", call, mpiErrorText(code).c_str());
}

#define ZCCL_MPI_CHECK(call)                                                 \
  do {                                                                       \
    const int zccl_mpi_rc_ = (call);                                         \
    if (zccl_mpi_rc_ != MPI_SUCCESS) return mpiFailure(#call, zccl_mpi_rc_); \
  } while (0)

// MPICH routes the errors of requests to MPI_COMM_WORLD's handler, whatever the handler of
// the request's own communicator: while zccl calls MPI, world's errors return too. The
// application's handler is restored afterwards.
class WorldErrorsReturn {
 public:
  WorldErrorsReturn() {
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved_);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
  ~WorldErrorsReturn() {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, saved_);
    MPI_Errhandler_free(&saved_);
  }
  WorldErrorsReturn(const WorldErrorsReturn&) = delete;
  WorldErrorsReturn& operator=(const WorldErrorsReturn&) = delete;

 private:
  MPI_Errhandler saved_ = MPI_ERRHANDLER_NULL;
};

// Reduction of half-precision values for MPI's own collectives, which know no fp16/bf16.
template <DataType Type, RedOp Op>
void halfReduce(void* in, void* inout, int* length, MPI_Datatype* /*datatype*/) {
  reduceInto(inout, in, static_cast<size_t>(*length), Type, Op);
}

template <DataType Type, RedOp Op>
MPI_Op createHalfOp() {
  MPI_Op op;
  MPI_Op_create(halfReduce<Type, Op>, 1, &op);
  return op;
}

template <DataType Type>
MPI_Op halfOp(RedOp op) {
  static const MPI_Op ops[] = {
      createHalfOp<Type, RedOp::kSum>(),
      createHalfOp<Type, RedOp::kProd>(),
      createHalfOp<Type, RedOp::kMax>(),
      createHalfOp<Type, RedOp::kMin>(),
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

bool mpiFinalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

class MpiTransport final : public Transport, public EngineCollectives {
 public:
  MpiTransport(MPI_Comm comm, const TransportOptions& options) : comm_(comm), options_(options) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    int* tagUpperBound = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tagUpperBound, &found);
    maxTag_ = found ? *tagUpperBound : 32767;  // the least MPI guarantees
    traffic_.resize(static_cast<size_t>(size_));
  }
  ~MpiTransport() override {
    // After MPI_Finalize no MPI call is allowed; the communicator went with MPI.
    if (mpiFinalized()) return;
    if (!requests_.empty()) abandon();
    settleNotices();
    // A communicator abandoned with messages in flight may receive more its peers sent
    // after it gave up; freed, its context id could be reused by a later communicator. It
    // is kept instead (one context id per such failure).
    if (!abandoned_) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int maxTag() const override { return maxTag_ - 1; }  // MPI's bound is the notices' tag
  bool allowsOtherThreads() const override {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    return provided == MPI_THREAD_MULTIPLE;
  }

  Status postSend(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    ZCCL_CHECK(post(Kind::kSend, const_cast<void*>(data), bytes, peer, tag, ticket));
    countSend(peer, bytes, (bytes + kMaxMessageBytes - 1) / kMaxMessageBytes);
    return Status::kSuccess;
  }

  Status postRecv(void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    return post(Kind::kReceive, data, bytes, peer, tag, ticket);
  }

  // The first part comes from any source; MPI's status names it, and the rest of a message
  // in several parts comes from that rank.
  Status receiveFromAny(void* data, size_t bytes, int tag, int* source) override {
    ZCCL_CHECK(waitAll());
    const size_t firstPart = std::min(kMaxMessageBytes, bytes);
    Ticket ticket = 0;
    ZCCL_CHECK(post(Kind::kReceiveFromAny, data, firstPart, -1, tag, &ticket));
    ZCCL_CHECK(waitAll());
    *source = statuses_[0].MPI_SOURCE;
    int received = 0;
    MPI_Get_count(&statuses_[0], MPI_BYTE, &received);
    if (static_cast<size_t>(received) != firstPart) {
      return fail(Status::kInvalidUsage,
                  "a receive from any source of %zu bytes got %d from rank %d: the sender's "
                  "count or type differs",
                  bytes, received, peerRank(*source));
    }
    if (bytes == firstPart) return Status::kSuccess;
    ZCCL_CHECK(post(Kind::kReceive, static_cast<char*>(data) + firstPart, bytes - firstPart,
                    *source, tag, &ticket));
    return waitAll();
  }

  void sendNotice(const CallNotice& notice) override {
    WorldErrorsReturn errorsReturn;
    noticesOut_.push_back(std::make_unique<CallNotice>(notice));
    for (int peer = 0; peer < size_; ++peer) {
      MPI_Request request = MPI_REQUEST_NULL;
      if (peer == rank_ || MPI_Isend(noticesOut_.back().get(), sizeof(CallNotice), MPI_BYTE, peer,
                                     maxTag_, comm_, &request) != MPI_SUCCESS) {
        continue;  // best effort: a peer that cannot be told waits for its timeout
      }
      noticeSends_.push_back(request);
    }
  }

  // One receive from any member stays posted; MPI_Test nulls it once complete.
  bool takeNotice(CallNotice* notice) override {
    WorldErrorsReturn errorsReturn;
    if (noticeReceive_ == MPI_REQUEST_NULL &&
        MPI_Irecv(noticeIn_.get(), sizeof(CallNotice), MPI_BYTE, MPI_ANY_SOURCE, maxTag_, comm_,
                  &noticeReceive_) != MPI_SUCCESS) {
      return false;
    }
    int done = 0;
    if (MPI_Test(&noticeReceive_, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) return false;
    *notice = *noticeIn_;
    return true;
  }

  // Any call into MPI progresses its engine; a probe touches no request.
  void progress() override {
    if (requests_.empty()) return;
    WorldErrorsReturn errorsReturn;
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
  }

  Status wait(Ticket ticket) override {
    size_t first = 0, last = 0;
    ZCCL_CHECK(tickets_.range(ticket, &first, &last));
    return waitRange(first, last);
  }

  Status waitAll() override {
    ZCCL_CHECK(waitRange(0, requests_.size()));
    requests_.clear();
    tickets_.clear();
    return Status::kSuccess;
  }

  Status split(int color, int key, std::unique_ptr<Transport>* out) override {
    // Everyone's arrival is confirmed within the timeout first; the split itself then
    // finds every rank there.
    const int mine[2] = {color, key};
    std::vector<int> all(2 * static_cast<size_t>(size_));
    ZCCL_CHECK(allGatherControl(mine, sizeof(mine), all.data()));
    WorldErrorsReturn errorsReturn;
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
    WorldErrorsReturn errorsReturn;
    MPI_Request request;
    ZCCL_MPI_CHECK(MPI_Iallgather(mine, static_cast<int>(bytes), MPI_BYTE, all,
                                  static_cast<int>(bytes), MPI_BYTE, comm_, &request));
    return waitCollective(request);
  }

  EngineCollectives* engineCollectives() override { return this; }

  Status allGather(const void* send, void* recv, size_t count, DataType type) override {
    return runNative(count, "MPI_Iallgather", [&](MPI_Request* request) {
      return MPI_Iallgather(send, static_cast<int>(count), mpiType(type), recv,
                            static_cast<int>(count), mpiType(type), comm_, request);
    });
  }

  Status reduceScatter(const void* send, void* recv, size_t recvCount, DataType type,
                       RedOp op) override {
    return runNative(recvCount, "MPI_Ireduce_scatter_block", [&](MPI_Request* request) {
      return MPI_Ireduce_scatter_block(send, recv, static_cast<int>(recvCount), mpiType(type),
                                       mpiOp(type, op), comm_, request);
    });
  }

  Status allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op) override {
    return runNative(count, "MPI_Iallreduce", [&](MPI_Request* request) {
      return MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                            mpiType(type), mpiOp(type, op), comm_, request);
    });
  }

  Status broadcast(void* data, size_t count, DataType type, int root) override {
    return runNative(count, "MPI_Ibcast", [&](MPI_Request* request) {
      return MPI_Ibcast(data, static_cast<int>(count), mpiType(type), root, comm_, request);
    });
  }

  Status allToAll(const void* send, void* recv, size_t count, DataType type) override {
    return runNative(count, "MPI_Ialltoall", [&](MPI_Request* request) {
      return MPI_Ialltoall(send, static_cast<int>(count), mpiType(type), recv,
                           static_cast<int>(count), mpiType(type), comm_, request);
    });
  }

  Status reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                int root) override {
    const bool inPlace = rank_ == root && send == recv;
    return runNative(count, "MPI_Ireduce", [&](MPI_Request* request) {
      return MPI_Ireduce(inPlace ? MPI_IN_PLACE : send, recv, static_cast<int>(count),
                         mpiType(type), mpiOp(type, op), root, comm_, request);
    });
  }

  Status gather(const void* send, void* recv, size_t count, DataType type, int root) override {
    return runNative(count, "MPI_Igather", [&](MPI_Request* request) {
      return MPI_Igather(send == nullptr ? MPI_IN_PLACE : send, static_cast<int>(count),
                         mpiType(type), recv, static_cast<int>(count), mpiType(type), root, comm_,
                         request);
    });
  }

  Status scatter(const void* send, void* recv, size_t count, DataType type, int root) override {
    return runNative(count, "MPI_Iscatter", [&](MPI_Request* request) {
      return MPI_Iscatter(send, static_cast<int>(count), mpiType(type),
                          recv == nullptr ? MPI_IN_PLACE : recv, static_cast<int>(count),
                          mpiType(type), root, comm_, request);
    });
  }

  bool abandon() override {
    markBroken();
    if (requests_.empty()) return true;  // nothing in flight: the communicator can be freed
    if (mpiFinalized()) return false;
    WorldErrorsReturn errorsReturn;
    if (!abandoned_) {
      abandoned_ = true;
      abandonedAt_ = Clock::now();
      // Receives not yet matched are cancelled outright, so late data lands nowhere; sends
      // are cancelled where MPI can. A collective's request cannot be cancelled: only its
      // completion frees its buffers.
      for (const TicketBook::Entry& range : tickets_.entries()) {
        if (range.kind == TicketBook::Kind::kCollective) continue;
        for (size_t i = range.first; i < range.last; ++i) {
          if (requests_[i] != MPI_REQUEST_NULL) MPI_Cancel(&requests_[i]);
        }
      }
    }
    // One grace in all, however often abandon is asked for.
    size_t pending = 0;
    do {
      pending = 0;
      for (MPI_Request& request : requests_) {
        if (request == MPI_REQUEST_NULL) continue;
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        pending += done ? 0 : 1;
      }
      if (pending > 0) sched_yield();
    } while (pending > 0 && secondsSince(abandonedAt_) < kAbandonGraceSeconds);
    // MPI progresses whenever the program calls into it: nothing zccl does keeps it away.
    const char* afterwards = "the buffers of the call that failed may still be read or written";
    if (!settleAbandoned(*this, "MPI", pending, afterwards)) return false;
    requests_.clear();
    tickets_.clear();
    return true;
  }

 private:
  using Kind = TicketBook::Kind;

  // Before the communicator goes: the notice receive is cancelled, and the notices sent get
  // the abandon grace to leave. What MPI still holds keeps its memory (a few hundred bytes).
  void settleNotices() {
    WorldErrorsReturn errorsReturn;
    if (noticeReceive_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&noticeReceive_);
      MPI_Wait(&noticeReceive_, MPI_STATUS_IGNORE);  // a cancelled receive completes at once
    }
    const auto start = Clock::now();
    int done = noticeSends_.empty() ? 1 : 0;
    while (!done && secondsSince(start) < kAbandonGraceSeconds) {
      MPI_Testall(static_cast<int>(noticeSends_.size()), noticeSends_.data(), &done,
                  MPI_STATUSES_IGNORE);
      if (!done) sched_yield();
    }
    if (done) return;
    for (MPI_Request& request : noticeSends_) {
      if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
    }
    for (std::unique_ptr<CallNotice>& notice : noticesOut_) static_cast<void>(notice.release());
  }

  // Posts `bytes` as messages of at most kMaxMessageBytes, which MPI keeps in order.
  Status post(Kind kind, void* data, size_t bytes, int peer, int tag, Ticket* ticket) {
    ZCCL_CHECK(tickets_.open(*this, peer, kind, requests_.size(), ticket));
    WorldErrorsReturn errorsReturn;
    char* base = static_cast<char*>(data);
    for (size_t offset = 0; offset < bytes;) {  // zero bytes: nothing travels
      const int length = static_cast<int>(std::min(kMaxMessageBytes, bytes - offset));
      MPI_Request request;
      if (kind == Kind::kSend) {
        ZCCL_MPI_CHECK(MPI_Isend(base + offset, length, MPI_BYTE, peer, tag, comm_, &request));
      } else {
        const int from = kind == Kind::kReceiveFromAny ? MPI_ANY_SOURCE : peer;
        ZCCL_MPI_CHECK(MPI_Irecv(base + offset, length, MPI_BYTE, from, tag, comm_, &request));
      }
      requests_.push_back(request);
      tickets_.close(*ticket, requests_.size());
      offset += static_cast<size_t>(length);
    }
    return Status::kSuccess;
  }

  // One native collective: `start` begins it (the MPI call `name`) on a request, which
  // completes like every wait here (bounded by the timeout, ended by abort).
  template <typename Start>
  Status runNative(size_t count, const char* name, Start&& start) {
    ZCCL_CHECK(checkNativeCount(count));
    WorldErrorsReturn errorsReturn;
    MPI_Request request;
    const int code = start(&request);
    if (code != MPI_SUCCESS) return mpiFailure(name, code);
    return waitCollective(request);
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

  // A non-blocking collective's request, waited for like any other (bounded).
  Status waitCollective(MPI_Request request) {
    Ticket ticket = 0;
    ZCCL_CHECK(tickets_.open(*this, -1, Kind::kCollective, requests_.size(), &ticket));
    requests_.push_back(request);
    tickets_.close(ticket, requests_.size());
    return waitAll();
  }

  Status waitRange(size_t first, size_t last) {
    if (first == last) return Status::kSuccess;
    WorldErrorsReturn errorsReturn;
    const int count = static_cast<int>(last - first);
    statuses_.resize(static_cast<size_t>(count));
    const auto poll = [&](bool* done) {
      int complete = 0;
      const int rc = MPI_Testall(count, &requests_[first], &complete, statuses_.data());
      if (rc != MPI_SUCCESS) {
        const Status status = mpiFailure(failedPeer(first, rc).c_str(), firstError(rc));
        abandon();
        return status;
      }
      *done = complete != 0;
      return Status::kSuccess;
    };
    return pollUntilDone(
        *this, options_.timeoutSeconds, poll, [&] { abandon(); },
        [&] {
          const std::string pending = tickets_.pendingWork(
              *this, first, last, [&](size_t i) { return requests_[i] != MPI_REQUEST_NULL; });
          abandon();
          return timedOut(options_.timeoutSeconds, pending);
        });
  }

  // "MPI with rank N" for the first request of [first, ...) that failed, when MPI says which.
  std::string failedPeer(size_t first, int rc) const {
    for (size_t i = 0; rc == MPI_ERR_IN_STATUS && i < statuses_.size(); ++i) {
      const int error = statuses_[i].MPI_ERROR;
      if (error == MPI_SUCCESS || error == MPI_ERR_PENDING) continue;
      const TicketBook::Entry* entry = tickets_.entryOf(first + i);
      if (entry != nullptr && entry->peer >= 0) {
        return "MPI, with rank " + std::to_string(peerRank(entry->peer));
      }
    }
    return "MPI";
  }

  // With several requests MPI reports MPI_ERR_IN_STATUS; the cause is in a status.
  int firstError(int rc) const {
    if (rc != MPI_ERR_IN_STATUS) return rc;
    for (const MPI_Status& status : statuses_) {
      if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING) {
        return status.MPI_ERROR;
      }
    }
    return rc;
  }

  MPI_Comm comm_;
  TransportOptions options_;
  int rank_ = 0;
  int size_ = 0;
  int maxTag_ = 32767;
  std::unique_ptr<CallNotice> noticeIn_ = std::make_unique<CallNotice>();
  MPI_Request noticeReceive_ = MPI_REQUEST_NULL;
  std::vector<std::unique_ptr<CallNotice>> noticesOut_;
  std::vector<MPI_Request> noticeSends_;
  bool abandoned_ = false;
  Clock::time_point abandonedAt_;
  std::vector<MPI_Request> requests_;
  std::vector<MPI_Status> statuses_;
  TicketBook tickets_;
};

}  // namespace

Status createMpiTransport(MPI_Comm comm, const TransportOptions& options,
                          std::unique_ptr<Transport>* out) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized || mpiFinalized()) {
    return fail(Status::kInvalidUsage,
                "MPI is not initialized (or already finalized); call MPI_Init first");
  }
  if (comm == MPI_COMM_NULL) return fail(Status::kInvalidArgument, "mpiComm=MPI_COMM_NULL");
  WorldErrorsReturn errorsReturn;
  // A non-blocking duplicate, so that a rank that never arrives ends in a timeout.
  MPI_Comm duplicate = MPI_COMM_NULL;
  MPI_Request request;
  ZCCL_MPI_CHECK(MPI_Comm_idup(comm, &duplicate, &request));
  const auto start = Clock::now();
  for (unsigned spin = 0;; ++spin) {
    int done = 0;
    ZCCL_MPI_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) break;
    pauseBetweenPolls(spin);
    if (options.timeoutSeconds > 0 && (spin & 1023u) == 0 &&
        secondsSince(start) > options.timeoutSeconds) {
      // The request stays pending: MPI may still complete the duplicate, which is leaked.
      return fail(Status::kTimeout,
                  "MPI_Comm_idup did not complete within %.1f s (ZCCL_TIMEOUT_S): not every "
                  "rank of mpiComm called zcclCommInitMPI",
                  options.timeoutSeconds);
    }
  }
  MPI_Comm_set_errhandler(duplicate, MPI_ERRORS_RETURN);
  *out = std::make_unique<MpiTransport>(duplicate, options);
  return Status::kSuccess;
}

}  // namespace zccl
