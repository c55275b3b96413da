// The UCX transport (ucx_transport.h): tagged point-to-point on a UCP worker per communicator,
// shared by the sub-groups split from it.
#include "transport/ucx/ucx_transport.h"

#include <poll.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "common/log.h"
#include "transport/ticket_book.h"

namespace zccl {
namespace {

// A UCX tag: which group (context), who sent it (rank in the group), and zccl's tag.
constexpr int kTagBits = 24;
constexpr int kRankBits = 24;
constexpr int kContextBits = 16;
constexpr int kControlTag = (1 << kTagBits) - 1;  // allGatherControl's messages
constexpr int kNoticeTag = kControlTag - 1;       // peer_notices.h
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};
constexpr double kAbandonGraceSeconds = 1.0;
constexpr double kCloseGraceSeconds = 2.0;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

ucp_tag_t makeTag(int context, int source, int tag) {
  return (static_cast<ucp_tag_t>(context) << (kTagBits + kRankBits)) |
         (static_cast<ucp_tag_t>(source) << kTagBits) | static_cast<ucp_tag_t>(tag);
}

constexpr ucp_tag_t kSourceBits = ((ucp_tag_t{1} << kRankBits) - 1) << kTagBits;

int sourceOf(ucp_tag_t tag) { return static_cast<int>((tag & kSourceBits) >> kTagBits); }

Status ucxFailure(const char* what, ucs_status_t status) {
  if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    return fail(Status::kInvalidUsage,
                "%s: a peer sent more bytes than this rank expected, so the ranks' calls do "
                "not match (another collective, count, type or root); ZCCL_CHECK=1 names the "
                "difference",
                what);
  }
  if (status == UCS_ERR_ENDPOINT_TIMEOUT || status == UCS_ERR_CONNECTION_RESET ||
      status == UCS_ERR_UNREACHABLE || status == UCS_ERR_NOT_CONNECTED) {
    // The peer's process or its endpoint is gone (it died, or aborted its communicator).
    return fail(Status::kRemoteError, "%s failed: %s: the peer has gone", what,
                ucs_status_string(status));
  }
  return fail(Status::kSystemError, "%s failed: %s", what, ucs_status_string(status));
}

// Without CMA, large messages between the processes of a host go through shared memory: as a
// pipeline of eager fragments they run near CMA's speed, where UCX's rendezvous without CMA
// falls back to a path half as fast (docs/measurements.md). What the user set for UCX
// (UCX_TLS, UCX_RNDV_THRESH) stays as given.
ucs_status_t leaveOutCrossMemoryAttach(ucp_config_t* config) {
  if (std::getenv("UCX_TLS") == nullptr) {
    const ucs_status_t status = ucp_config_modify(config, "TLS", "^cma");
    if (status != UCS_OK) return status;
  }
  if (std::getenv("UCX_RNDV_THRESH") != nullptr) return UCS_OK;
  return ucp_config_modify(config, "RNDV_THRESH", "inf");
}

// One UCP context per process; workers are per communicator.
Status processContext(const TransportOptions& options, ucp_context_h* out) {
  static std::mutex mutex;
  static ucp_context_h context = nullptr;  // lives as long as the process
  std::lock_guard<std::mutex> lock(mutex);
  if (context == nullptr) {
    ucp_config_t* config = nullptr;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) return ucxFailure("ucp_config_read", status);
    if (!options.crossMemoryAttach) {
      status = leaveOutCrossMemoryAttach(config);
      if (status != UCS_OK) {
        ucp_config_release(config);
        return ucxFailure("ucp_config_modify", status);
      }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    // Wake-up: a wait that sleeps (ranks outnumber cores) wakes on the worker's event.
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    params.mt_workers_shared = 1;  // communicators of one process may live on several threads
    status = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) return ucxFailure("ucp_init", status);
  }
  *out = context;
  return Status::kSuccess;
}

// The worker and endpoints of one communicator, shared by the sub-groups split from it.
// Communicators of one fabric may be used from two threads at once (a communicator's device
// work on its own thread, a sibling's call on the program's): every use of the worker holds
// `lock`.
struct Fabric {
  ucp_worker_h worker = nullptr;
  std::vector<ucp_ep_h> endpoints;  // by rank of the communicator that created the fabric
  int nextContext = 1;
  std::mutex lock;
  // Set once a failed call returned while UCX still held some of its operations: a later
  // progress would let UCX read or write the buffers of that call, which its caller may have
  // freed since (a queued send packed from them crashed a survivor's abort). The worker is not
  // progressed again; the fabric stays, unreachable, and every call on it fails.
  std::atomic<bool> stopped{false};
  // The fabric itself, where a transport closed while UCX may still write or read what it
  // left pending: the cycle keeps the worker, unreachable, for the life of the process.
  std::shared_ptr<Fabric> keptWhileUcxHoldsBuffers;
  int eventFd = -1;  // readable once the worker, armed, has an event; -1: none to be had

  // Progresses the worker unless it stopped; false when it did. Under `lock`.
  bool progress() {
    if (stopped) return false;
    ucp_worker_progress(worker);
    return true;
  }

  ~Fabric() {
    if (worker == nullptr || stopped) return;
    // Let what was sent reach its peers (bounded: a peer may be gone), then close.
    ucp_request_param_t none{};
    void* flush = ucp_worker_flush_nbx(worker, &none);
    const auto start = Clock::now();
    while (UCS_PTR_IS_PTR(flush) && ucp_request_check_status(flush) == UCS_INPROGRESS &&
           secondsSince(start) < kCloseGraceSeconds) {
      ucp_worker_progress(worker);
    }
    if (UCS_PTR_IS_PTR(flush)) ucp_request_free(flush);
    ucp_request_param_t force{};
    force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    force.flags = UCP_EP_CLOSE_FLAG_FORCE;
    for (ucp_ep_h ep : endpoints) {
      void* closing = ucp_ep_close_nbx(ep, &force);
      while (UCS_PTR_IS_PTR(closing) && ucp_request_check_status(closing) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
      }
      if (UCS_PTR_IS_PTR(closing)) ucp_request_free(closing);
    }
    ucp_worker_destroy(worker);
  }
};

Status createFabric(Bootstrap& bootstrap, const TransportOptions& options,
                    std::shared_ptr<Fabric>* out) {
  ucp_context_h context = nullptr;
  ZCCL_CHECK(processContext(options, &context));
  auto fabric = std::make_shared<Fabric>();
  ucp_worker_params_t workerParams{};
  workerParams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  // A communicator's device work uses it from its own thread, one thread at a time.
  workerParams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t status = ucp_worker_create(context, &workerParams, &fabric->worker);
  if (status != UCS_OK) return ucxFailure("ucp_worker_create", status);
  // Without it, sleeping waits pause for a fixed time instead.
  if (ucp_worker_get_efd(fabric->worker, &fabric->eventFd) != UCS_OK) fabric->eventFd = -1;

  ucp_address_t* address = nullptr;
  size_t length = 0;
  status = ucp_worker_get_address(fabric->worker, &address, &length);
  if (status != UCS_OK) return ucxFailure("ucp_worker_get_address", status);
  const int n = bootstrap.size();
  // Addresses differ in length: the longest first, then every one padded to it.
  uint64_t mine = length;
  std::vector<uint64_t> lengths(static_cast<size_t>(n));
  Status exchanged = bootstrap.allGather(&mine, sizeof(mine), lengths.data());
  const size_t longest =
      exchanged == Status::kSuccess ? *std::max_element(lengths.begin(), lengths.end()) : 0;
  std::vector<char> padded(longest), all(longest * static_cast<size_t>(n));
  if (exchanged == Status::kSuccess) {
    std::memcpy(padded.data(), address, length);
    exchanged = bootstrap.allGather(padded.data(), longest, all.data());
  }
  ucp_worker_release_address(fabric->worker, address);
  ZCCL_CHECK(exchanged);

  fabric->endpoints.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    ucp_ep_params_t params{};
    // The default error mode: UCX 1.13's peer-failure mode would rule out its shared-memory
    // transports (docs/measurements.md); a dead peer ends in zccl's timeout, or in the error
    // its connection reports (without CMA: TransportOptions::crossMemoryAttach).
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = reinterpret_cast<const ucp_address_t*>(all.data() + r * longest);
    status = ucp_ep_create(fabric->worker, &params, &fabric->endpoints[static_cast<size_t>(r)]);
    if (status != UCS_OK) {
      fabric->endpoints.resize(static_cast<size_t>(r));
      return ucxFailure("ucp_ep_create", status);
    }
  }
  *out = std::move(fabric);
  return Status::kSuccess;
}

class UcxTransport final : public Transport {
 public:
  UcxTransport(std::shared_ptr<Fabric> fabric, std::vector<int> members, int rank, int context,
               const TransportOptions& options)
      : fabric_(std::move(fabric)),
        members_(std::move(members)),
        rank_(rank),
        context_(context),
        options_(options) {
    traffic_.resize(members_.size());
  }
  ~UcxTransport() override {
    const bool noticesSettled = settleNotices();
    if ((!requests_.empty() && !abandon()) || !noticesSettled) {
      std::lock_guard<std::mutex> guard(fabric_->lock);
      fabric_->keptWhileUcxHoldsBuffers = fabric_;
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  int maxTag() const override { return kNoticeTag - 1; }

  Status postSend(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    ZCCL_CHECK(begin(peer, Kind::kSend, ticket));
    if (bytes > 0) ZCCL_CHECK(send(data, bytes, peer, tag));
    countSend(peer, bytes, bytes > 0 ? 1 : 0);
    return end(*ticket);
  }

  Status postRecv(void* data, size_t bytes, int peer, int tag, Ticket* ticket) override {
    ZCCL_CHECK(begin(peer, Kind::kReceive, ticket));
    if (bytes > 0) {
      ucp_request_param_t params{};
      std::lock_guard<std::mutex> guard(fabric_->lock);
      void* request = ucp_tag_recv_nbx(fabric_->worker, data, bytes, makeTag(context_, peer, tag),
                                       kFullMask, &params);
      ZCCL_CHECK(track(request, "ucp_tag_recv_nbx from", peer));
    }
    return end(*ticket);
  }

  // The source's bits of the tag are masked out; the completed request's tag names the sender
  // (waitRange reads it before it frees the request).
  Status receiveFromAny(void* data, size_t bytes, int tag, int* source) override {
    ZCCL_CHECK(waitAll());
    Ticket ticket = 0;
    ZCCL_CHECK(begin(-1, Kind::kReceiveFromAny, &ticket));
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;  // a request, to be asked who sent it
    {
      std::lock_guard<std::mutex> guard(fabric_->lock);
      void* request = ucp_tag_recv_nbx(fabric_->worker, data, bytes, makeTag(context_, 0, tag),
                                       kFullMask & ~kSourceBits, &params);
      ZCCL_CHECK(track(request, "ucp_tag_recv_nbx from", -1));
    }
    ZCCL_CHECK(end(ticket));
    receiveFromAnyRequest_ = 0;  // alone in requests_ after the waitAll above
    receivedFromAny_ = ucp_tag_recv_info_t{};
    const Status received = waitAll();
    receiveFromAnyRequest_ = SIZE_MAX;
    ZCCL_CHECK(received);
    *source = sourceOf(receivedFromAny_.sender_tag);
    if (receivedFromAny_.length != bytes) {
      return fail(Status::kInvalidUsage,
                  "a receive from any source of %zu bytes got %zu from rank %d: the sender's "
                  "count or type differs",
                  bytes, receivedFromAny_.length, peerRank(*source));
    }
    return Status::kSuccess;
  }

  void sendNotice(const CallNotice& notice) override {
    noticesOut_.push_back(std::make_unique<CallNotice>(notice));
    std::lock_guard<std::mutex> guard(fabric_->lock);
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank_) continue;
      ucp_request_param_t params{};
      void* request = ucp_tag_send_nbx(endpoint(peer), noticesOut_.back().get(), sizeof(CallNotice),
                                       makeTag(context_, rank_, kNoticeTag), &params);
      // Best effort: a peer that cannot be told waits for its timeout.
      if (UCS_PTR_IS_PTR(request)) noticeSends_.push_back(request);
    }
  }

  // One receive from any member stays posted (the waits progress the worker).
  bool takeNotice(CallNotice* notice) override {
    std::lock_guard<std::mutex> guard(fabric_->lock);
    if (noticeReceive_ == nullptr) {
      ucp_request_param_t params{};
      params.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
      void* request =
          ucp_tag_recv_nbx(fabric_->worker, noticeIn_.get(), sizeof(CallNotice),
                           makeTag(context_, 0, kNoticeTag), kFullMask & ~kSourceBits, &params);
      if (!UCS_PTR_IS_PTR(request)) return false;
      noticeReceive_ = request;
    }
    const ucs_status_t status = ucp_request_check_status(noticeReceive_);
    if (status == UCS_INPROGRESS) return false;
    ucp_request_free(noticeReceive_);
    noticeReceive_ = nullptr;
    if (status != UCS_OK) return false;
    *notice = *noticeIn_;
    return true;
  }

  void progress() override {
    std::lock_guard<std::mutex> guard(fabric_->lock);
    fabric_->progress();
  }

  Status wait(Ticket ticket) override {
    size_t first = 0, last = 0;
    ZCCL_CHECK(tickets_.range(ticket, &first, &last));
    return waitRange(first, last);
  }

  SleepOutcome sleepUntilActivity(double seconds) const override {
    if (fabric_->eventFd < 0) return SleepOutcome::kNotSupported;
    {
      std::lock_guard<std::mutex> guard(fabric_->lock);
      if (fabric_->stopped) return SleepOutcome::kNotSupported;
      // UCX arms only a worker with nothing left to do.
      if (ucp_worker_progress(fabric_->worker) != 0) return SleepOutcome::kFoundWork;
      const ucs_status_t armed = ucp_worker_arm(fabric_->worker);
      if (armed == UCS_ERR_BUSY) return SleepOutcome::kFoundWork;
      if (armed != UCS_OK) return SleepOutcome::kNotSupported;
    }
    const auto nanoseconds = static_cast<long>(seconds * 1e9);
    const timespec limit{nanoseconds / 1000000000L, nanoseconds % 1000000000L};
    pollfd event{fabric_->eventFd, POLLIN, 0};
    return ppoll(&event, 1, &limit, nullptr) > 0 ? SleepOutcome::kWoken
                                                 : SleepOutcome::kBoundReached;
  }

  Status waitAll() override {
    ZCCL_CHECK(waitRange(0, requests_.size()));
    requests_.clear();
    tickets_.clear();
    return Status::kSuccess;
  }

  Status split(int color, int key, std::unique_ptr<Transport>* out) override {
    // Every rank proposes the next free group tag of its worker; the child takes the largest,
    // so that groups split anywhere from this worker never share tags.
    int mine[3] = {color, key, 0};
    {
      std::lock_guard<std::mutex> guard(fabric_->lock);
      mine[2] = fabric_->nextContext;
    }
    std::vector<int> all(3 * members_.size());
    ZCCL_CHECK(allGatherControl(mine, sizeof(mine), all.data()));
    int childContext = 0;
    for (size_t r = 0; r < members_.size(); ++r)
      childContext = std::max(childContext, all[3 * r + 2]);
    if (childContext >= (1 << kContextBits)) {
      return fail(Status::kInvalidUsage, "UCX transport: more than %d communicators split from one",
                  (1 << kContextBits) - 1);
    }
    {
      std::lock_guard<std::mutex> guard(fabric_->lock);
      fabric_->nextContext = childContext + 1;
    }
    out->reset();
    if (color < 0) return Status::kSuccess;
    std::vector<int> order;
    for (int r = 0; r < size(); ++r) {
      if (all[3 * static_cast<size_t>(r)] == color) order.push_back(r);
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return all[3 * static_cast<size_t>(a) + 1] < all[3 * static_cast<size_t>(b) + 1];
    });
    std::vector<int> members;
    int childRank = 0;
    for (size_t i = 0; i < order.size(); ++i) {
      members.push_back(members_[static_cast<size_t>(order[i])]);
      if (order[i] == rank_) childRank = static_cast<int>(i);
    }
    *out = std::make_unique<UcxTransport>(fabric_, std::move(members), childRank, childContext,
                                          options_);
    return Status::kSuccess;
  }

  Status allGatherControl(const void* mine, size_t bytes, void* all) override {
    char* out = static_cast<char*>(all);
    std::memcpy(out + static_cast<size_t>(rank_) * bytes, mine, bytes);
    Ticket ticket = 0;
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank_) continue;
      ZCCL_CHECK(
          postRecv(out + static_cast<size_t>(peer) * bytes, bytes, peer, kControlTag, &ticket));
    }
    for (int peer = 0; peer < size(); ++peer) {
      if (peer == rank_) continue;
      ZCCL_CHECK(post(mine, bytes, peer, kControlTag, &ticket));
    }
    return waitAll();
  }

  bool abandon() override {
    markBroken();
    if (requests_.empty()) return true;
    std::lock_guard<std::mutex> guard(fabric_->lock);
    if (!abandoned_) {
      abandoned_ = true;
      abandonedAt_ = Clock::now();
      for (const TicketBook::Entry& entry : tickets_.entries()) {
        if (entry.kind != Kind::kReceive && entry.kind != Kind::kReceiveFromAny) continue;
        for (size_t i = entry.first; i < entry.last; ++i) {
          if (requests_[i] != nullptr) ucp_request_cancel(fabric_->worker, requests_[i]);
        }
      }
    }
    const size_t left = freeWhenDone(&requests_, abandonedAt_);
    if (left > 0) {
      if (!fabric_->stopped.exchange(true)) {
        settleAbandoned(*this, "UCX", left,
                        "its UCX worker is not progressed again: UCX reads or writes none of the "
                        "buffers of the call that failed once it returns, and every later call "
                        "on the communicator or its sub-groups fails (abort it)");
      }
      return false;
    }
    requests_.clear();
    tickets_.clear();
    return true;
  }

 private:
  using Kind = TicketBook::Kind;

  // Progresses the worker until every request of `requests` has completed (each then freed and
  // nulled) or the abandon grace from `since` has passed; how many are left. Under the lock.
  size_t freeWhenDone(std::vector<void*>* requests, Clock::time_point since) {
    size_t left = 0;
    bool progressed = false;
    do {
      progressed = fabric_->progress();
      left = 0;
      for (void*& request : *requests) {
        if (request == nullptr) continue;
        if (ucp_request_check_status(request) == UCS_INPROGRESS) {
          ++left;
        } else {
          ucp_request_free(request);
          request = nullptr;
        }
      }
    } while (left > 0 && progressed && secondsSince(since) < kAbandonGraceSeconds);
    return left;
  }

  // The notice receive is cancelled and the notices sent get the abandon grace to leave;
  // true when UCX holds none of them (else their memory stays UCX's).
  bool settleNotices() {
    std::lock_guard<std::mutex> guard(fabric_->lock);
    std::vector<void*> pending = noticeSends_;
    if (noticeReceive_ != nullptr) {
      ucp_request_cancel(fabric_->worker, noticeReceive_);
      pending.push_back(noticeReceive_);
    }
    if (freeWhenDone(&pending, Clock::now()) == 0) return true;
    static_cast<void>(noticeIn_.release());
    for (std::unique_ptr<CallNotice>& notice : noticesOut_) static_cast<void>(notice.release());
    return false;
  }

  ucp_ep_h endpoint(int peer) const {
    return fabric_->endpoints[static_cast<size_t>(members_[static_cast<size_t>(peer)])];
  }

  // A send that is not counted as traffic (the control channel).
  Status post(const void* data, size_t bytes, int peer, int tag, Ticket* ticket) {
    ZCCL_CHECK(begin(peer, Kind::kSend, ticket));
    ZCCL_CHECK(send(data, bytes, peer, tag));
    return end(*ticket);
  }

  Status send(const void* data, size_t bytes, int peer, int tag) {
    ucp_request_param_t params{};
    std::lock_guard<std::mutex> guard(fabric_->lock);
    void* request =
        ucp_tag_send_nbx(endpoint(peer), data, bytes, makeTag(context_, rank_, tag), &params);
    return track(request, "ucp_tag_send_nbx to", peer);
  }

  Status begin(int peer, Kind kind, Ticket* ticket) {
    if (fabric_->stopped) return stoppedFailure();
    return tickets_.open(*this, peer, kind, requests_.size(), ticket);
  }

  Status stoppedFailure() {
    markBroken();
    return fail(Status::kRemoteError,
                "UCX: an earlier call on this communicator or one sharing its UCX worker failed "
                "while UCX held some of its operations; the worker is not progressed again "
                "(abort the communicator)");
  }

  // "rank 3" for a member, "any rank" for a receive from any source.
  std::string nameOf(int peer) const {
    return peer < 0 ? "any rank" : "rank " + std::to_string(peerRank(peer));
  }

  // A request posted to or from `peer`; one that failed at once names the peer too (a send to
  // a peer that is gone fails there).
  Status track(void* request, const char* call, int peer) {
    if (UCS_PTR_IS_ERR(request)) {
      const std::string what = std::string(call) + " " + nameOf(peer);
      const Status failure = ucxFailure(what.c_str(), UCS_PTR_STATUS(request));
      markBroken();
      return failure;
    }
    requests_.push_back(request);
    return Status::kSuccess;
  }

  Status end(Ticket ticket) {
    tickets_.close(ticket, requests_.size());
    return Status::kSuccess;
  }

  Status waitRange(size_t first, size_t last) {
    const auto poll = [&](bool* done) {
      ucs_status_t failure = UCS_OK;
      size_t failedRequest = 0;
      *done = true;
      {
        std::lock_guard<std::mutex> guard(fabric_->lock);
        if (!fabric_->progress()) return stoppedFailure();
        for (size_t i = first; i < last && failure == UCS_OK; ++i) {
          void*& request = requests_[i];
          if (request == nullptr) continue;
          const ucs_status_t status = ucp_request_check_status(request);
          if (status == UCS_INPROGRESS) {
            *done = false;
            continue;
          }
          if (i == receiveFromAnyRequest_) ucp_tag_recv_request_test(request, &receivedFromAny_);
          ucp_request_free(request);
          request = nullptr;
          failure = status;
          failedRequest = i;
        }
      }
      return failure == UCS_OK ? Status::kSuccess : failed(failure, failedRequest);
    };
    return pollUntilDone(
        *this, options_.timeoutSeconds, poll, [&] { abandon(); },
        [&] {
          const std::string pending = tickets_.pendingWork(
              *this, first, last, [&](size_t i) { return requests_[i] != nullptr; });
          abandon();
          return timedOut(options_.timeoutSeconds, pending);
        });
  }

  Status failed(ucs_status_t status, size_t request) {
    const TicketBook::Entry* entry = tickets_.entryOf(request);
    const std::string with = "UCX, with " + nameOf(entry != nullptr ? entry->peer : -1);
    const Status result = ucxFailure(with.c_str(), status);
    abandon();
    return result;
  }

  std::shared_ptr<Fabric> fabric_;
  std::vector<int> members_;
  int rank_;
  int context_;
  TransportOptions options_;
  bool abandoned_ = false;
  Clock::time_point abandonedAt_;
  std::vector<void*> requests_;              // nullptr: complete
  size_t receiveFromAnyRequest_ = SIZE_MAX;  // in requests_, while one is pending
  ucp_tag_recv_info_t receivedFromAny_{};
  std::unique_ptr<CallNotice> noticeIn_ = std::make_unique<CallNotice>();
  void* noticeReceive_ = nullptr;
  std::vector<std::unique_ptr<CallNotice>> noticesOut_;
  std::vector<void*> noticeSends_;
  TicketBook tickets_;
};

}  // namespace

Status createUcxTransport(Bootstrap& bootstrap, const TransportOptions& options,
                          std::unique_ptr<Transport>* out) {
  std::shared_ptr<Fabric> fabric;
  ZCCL_CHECK(createFabric(bootstrap, options, &fabric));
  std::vector<int> members(static_cast<size_t>(bootstrap.size()));
  for (int r = 0; r < bootstrap.size(); ++r) members[static_cast<size_t>(r)] = r;
  *out = std::make_unique<UcxTransport>(std::move(fabric), std::move(members), bootstrap.rank(), 0,
                                        options);
  return Status::kSuccess;
}

}  // namespace zccl
