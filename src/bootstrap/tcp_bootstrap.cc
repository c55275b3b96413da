// The unique-id rendezvous: a root thread that every rank connects to over TCP. The root
// checks each arrival (the id's nonce, the rank's number and the job's size), names who is
// missing when the time is up, and then serves the all-gathers of the setup; strangers that
// connect are dropped. Only small setup messages travel here.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "bootstrap/bootstrap.h"
#include "bootstrap/socket.h"
#include "common/env.h"
#include "common/log.h"

namespace zccl {
namespace {

constexpr uint32_t kIdMagic = 0x4449435au;  // "ZCID"
constexpr uint32_t kIdVersion = 1;
constexpr size_t kMaxPayload = size_t{64} << 20;

enum FrameType : uint32_t {
  kHello = 1,
  kWelcome = 2,
  kError = 3,
  kGather = 4,
  kGathered = 5,
  kBye = 6
};

struct IdLayout {
  uint32_t magic;
  uint32_t version;
  uint64_t nonce;
  uint32_t addressLength;
  uint32_t reserved;
  char address[sizeof(sockaddr_in6)];
};
static_assert(sizeof(IdLayout) <= kUniqueIdBytes, "the id must fit zcclUniqueId");

struct Hello {
  uint64_t nonce;
  int32_t rank;
  int32_t nranks;
  char host[64];
};

struct ErrorReport {
  int32_t status;
  char message[500];
};

uint64_t randomNonce() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

uint64_t hashName(const std::string& name) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : name) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

void writeId(const SocketAddress& address, uint64_t nonce, UniqueIdBytes* id) {
  std::memset(id->bytes, 0, sizeof(id->bytes));
  IdLayout layout{kIdMagic, kIdVersion, nonce, address.length, 0, {}};
  std::memcpy(layout.address, &address.storage,
              std::min<size_t>(address.length, sizeof(layout.address)));
  std::memcpy(id->bytes, &layout, sizeof(layout));
}

}  // namespace

Status parseUniqueId(const UniqueIdBytes& id, SocketAddress* address, uint64_t* nonce) {
  IdLayout layout;
  std::memcpy(&layout, id.bytes, sizeof(layout));
  if (layout.magic != kIdMagic || layout.version != kIdVersion ||
      layout.addressLength > sizeof(layout.address) || layout.addressLength == 0) {
    return fail(Status::kInvalidArgument,
                "commId: not a zccl unique id (magic 0x%x, version %u); get it from "
                "zcclGetUniqueId on one rank and pass it to every rank unchanged",
                layout.magic, layout.version);
  }
  address->length = layout.addressLength;
  std::memcpy(&address->storage, layout.address, layout.addressLength);
  *nonce = layout.nonce;
  return Status::kSuccess;
}

namespace {

std::string rankList(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) {
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  if (ranks.size() > 16) text += " and " + std::to_string(ranks.size() - 16) + " more";
  return text;
}

// The root: one thread, one rendezvous.
class Root {
 public:
  Root(int listenFd, uint64_t nonce, double timeoutSeconds)
      : listenFd_(listenFd), nonce_(nonce), timeoutSeconds_(timeoutSeconds) {}

  void serve() {
    deadline_ = deadlineIn(timeoutSeconds_);
    while (!finished_) {
      std::vector<pollfd> fds;
      if (listenFd_ >= 0) fds.push_back({listenFd_, POLLIN, 0});
      for (const Peer& p : peers_) fds.push_back({p.fd, POLLIN, 0});
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline_ - std::chrono::steady_clock::now());
      const int ready =
          poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, left.count())));
      if (ready == 0) {
        if (!failed_) timedOut();
        break;
      }
      if (ready < 0) continue;  // EINTR
      if (listenFd_ >= 0 && (fds[0].revents & POLLIN)) acceptAll();
      for (size_t i = 0; i < peers_.size() && !finished_;) {
        i = serviced(i) ? i + 1 : i;  // a dropped peer leaves its slot to the next
      }
      if (failed_) dropArrived();
      if (!finished_ && !failed_) advance();
    }
    for (const Peer& p : peers_) close(p.fd);
    if (listenFd_ >= 0) close(listenFd_);
  }

 private:
  struct Peer {
    explicit Peer(int socket) : fd(socket) {}
    int fd;
    FrameReader reader{kMaxPayload};
    int rank = -1;
    std::string host;
    bool bye = false;
    bool gathered = false;
    std::vector<char> contribution;
  };

  void acceptAll() {
    for (;;) {
      const int fd = accept(listenFd_, nullptr, nullptr);
      if (fd < 0) return;
      setNoDelay(fd);
      peers_.emplace_back(fd);
    }
  }

  // Reads what peer i sent; false when it was dropped (the slot now holds another).
  bool serviced(size_t i) {
    Peer& p = peers_[i];
    p.reader.feed(p.fd);
    while (!finished_ && p.reader.done()) {  // what arrived before a close still counts
      const Frame frame = p.reader.take();
      if (!handle(i, frame)) return false;
    }
    if (!p.reader.failed() || finished_) return true;
    if (p.rank < 0 || failed_) {
      ZCCL_LOG(kInfo, "bootstrap root: dropped a connection that %s", p.reader.error().c_str());
    } else if (!p.bye) {
      abortAll(Status::kRemoteError, "rank " + std::to_string(p.rank) + " (" + p.host +
                                         ") closed its bootstrap connection during setup");
    }
    drop(i);
    return false;
  }

  bool handle(size_t i, const Frame& frame) {
    Peer& p = peers_[i];
    if (p.rank < 0) return handleHello(i, frame);
    if (failed_) return true;  // told already; it is about to be dropped
    if (frame.type == kGather && welcomed_ && !p.gathered) {
      p.contribution = frame.payload;
      p.gathered = true;
    } else if (frame.type == kBye) {
      p.bye = true;
    } else {
      abortAll(Status::kInternalError,
               "rank " + std::to_string(p.rank) + " sent an unexpected bootstrap message");
    }
    return true;
  }

  bool handleHello(size_t i, const Frame& frame) {
    Peer& p = peers_[i];
    Hello hello{};
    if (frame.type != kHello || frame.payload.size() != sizeof(Hello)) {
      ZCCL_LOG(kInfo, "bootstrap root: dropped a connection that did not introduce itself");
      drop(i);
      return false;
    }
    std::memcpy(&hello, frame.payload.data(), sizeof(hello));
    hello.host[sizeof(hello.host) - 1] = '\0';
    if (failed_ && hello.nonce == nonce_) {  // a latecomer to a job that already failed
      reject(p.fd, failure_, failureMessage_);
      drop(i);
      return false;
    }
    if (hello.nonce != nonce_) {
      reject(p.fd, Status::kInvalidArgument,
             "commId: this is not the unique id of the job at this root (rank " +
                 std::to_string(hello.rank) + " from " + hello.host +
                 " brought another); every rank must pass the id rank 0 created");
      drop(i);
      return false;
    }
    if (nranks_ < 0) nranks_ = hello.nranks;
    const std::string who = "rank " + std::to_string(hello.rank) + " (" + hello.host + ")";
    std::string problem;
    if (hello.nranks != nranks_ || hello.nranks <= 0) {
      problem = "nranks differ: " + who + " says nranks=" + std::to_string(hello.nranks) +
                ", an earlier rank said " + std::to_string(nranks_);
    } else if (hello.rank < 0 || hello.rank >= nranks_) {
      problem = who + " is outside [0, nranks=" + std::to_string(nranks_) + ")";
    }
    for (const Peer& other : peers_) {
      if (problem.empty() && other.rank == hello.rank) {
        problem = "rank " + std::to_string(hello.rank) + " was claimed twice: by " + other.host +
                  " and by " + hello.host;
      }
    }
    if (!problem.empty()) {
      // The job is set up wrong: everyone, this arrival included, is told why.
      reject(p.fd, Status::kInvalidUsage, problem);
      abortAll(Status::kInvalidUsage, problem);
      return false;
    }
    p.rank = hello.rank;
    p.host = hello.host;
    return true;
  }

  // Moves on when every rank has arrived (welcome) or has contributed to a round.
  void advance() {
    const int present = static_cast<int>(
        std::count_if(peers_.begin(), peers_.end(), [](const Peer& p) { return p.rank >= 0; }));
    if (!welcomed_) {
      if (nranks_ <= 0 || present < nranks_) return;
      welcomed_ = true;
      close(listenFd_);  // everyone is here: later connections are strangers, refused
      listenFd_ = -1;
      for (size_t i = peers_.size(); i-- > 0;) {
        if (peers_[i].rank < 0) drop(i);  // connected, never introduced itself
      }
      const int32_t size = nranks_;
      for (const Peer& p : peers_) sendFrame(p.fd, kWelcome, &size, sizeof(size), deadlineIn(10));
      deadline_ = deadlineIn(timeoutSeconds_);
      return;
    }
    if (std::all_of(peers_.begin(), peers_.end(), [](const Peer& p) { return p.bye; })) {
      finished_ = true;
      return;
    }
    const bool allIn = std::all_of(peers_.begin(), peers_.end(),
                                   [](const Peer& p) { return p.gathered || p.bye; });
    if (!allIn || present < nranks_) return;
    std::vector<char> all;
    std::vector<Peer*> byRank(static_cast<size_t>(nranks_));
    for (Peer& p : peers_) byRank[static_cast<size_t>(p.rank)] = &p;
    for (Peer* p : byRank) all.insert(all.end(), p->contribution.begin(), p->contribution.end());
    for (Peer& p : peers_) {
      sendFrame(p.fd, kGathered, all.data(), all.size(), deadlineIn(timeoutSeconds_));
      p.gathered = false;
    }
    deadline_ = deadlineIn(timeoutSeconds_);
  }

  void timedOut() {
    std::vector<int> missing;
    std::vector<bool> here(static_cast<size_t>(std::max(nranks_, 0)), false);
    for (const Peer& p : peers_) {
      if (p.rank >= 0 && (!welcomed_ || p.gathered)) here[static_cast<size_t>(p.rank)] = true;
    }
    for (int r = 0; r < nranks_; ++r) {
      if (!here[static_cast<size_t>(r)]) missing.push_back(r);
    }
    const std::string what = welcomed_ ? "did not take part in the setup exchange"
                                       : "did not arrive at the bootstrap root";
    abortAll(Status::kTimeout,
             (nranks_ < 0 ? std::string("no rank arrived")
                          : "rank" + std::string(missing.size() > 1 ? "s " : " ") +
                                rankList(missing) + " of " + std::to_string(nranks_) + " " + what) +
                 " within " + std::to_string(static_cast<int>(timeoutSeconds_)) +
                 " s (ZCCL_BOOTSTRAP_TIMEOUT_S / ZCCL_TIMEOUT_S)");
  }

  void reject(int fd, Status status, const std::string& message) {
    ErrorReport report{static_cast<int32_t>(status), {}};
    std::strncpy(report.message, message.c_str(), sizeof(report.message) - 1);
    sendFrame(fd, kError, &report, sizeof(report), deadlineIn(2));
  }

  // Tells every rank that arrived why the job cannot form. During the rendezvous the root
  // stays until its deadline, to tell latecomers the same.
  void abortAll(Status status, const std::string& message) {
    ZCCL_LOG(kWarn, "bootstrap root: %s", message.c_str());
    for (const Peer& p : peers_) {
      if (p.rank >= 0) reject(p.fd, status, message);
    }
    if (welcomed_) {
      finished_ = true;
      return;
    }
    failed_ = true;
    failure_ = status;
    failureMessage_ = message;
  }

  void dropArrived() {
    for (size_t i = peers_.size(); i-- > 0;) {
      if (peers_[i].rank >= 0) drop(i);
    }
  }

  void drop(size_t i) {
    close(peers_[i].fd);
    peers_.erase(peers_.begin() + static_cast<ptrdiff_t>(i));
  }

  int listenFd_;
  uint64_t nonce_;
  double timeoutSeconds_;
  Deadline deadline_;
  std::vector<Peer> peers_;
  int nranks_ = -1;
  bool welcomed_ = false;
  bool finished_ = false;
  bool failed_ = false;  // the job cannot form; latecomers are told why
  Status failure_ = Status::kSuccess;
  std::string failureMessage_;
};

Status startRoot(SocketAddress* address, uint64_t nonce) {
  double timeout = 0;
  ZCCL_CHECK(bootstrapTimeout(1800, &timeout));
  // A fixed port (a launcher's, or MASTER_PORT + 1) can be held for a moment by another
  // socket: a connection that drew it as its ephemeral port, or this process's previous root
  // still closing. Retried until the timeout; the ranks retry their connects meanwhile.
  const auto start = std::chrono::steady_clock::now();
  int fd = -1;
  bool inUse = false;
  Status listening = listenOn(address, &fd, &inUse);
  while (
      listening != Status::kSuccess && inUse && address->port() != 0 &&
      (timeout <= 0 ||
       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < timeout)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    listening = listenOn(address, &fd, &inUse);
  }
  if (inUse) {
    return fail(Status::kSystemError, "bootstrap: cannot listen on %s: %s (for %.0f s)",
                address->text().c_str(), strerror(EADDRINUSE), timeout);
  }
  ZCCL_CHECK(listening);
  std::thread([fd, nonce, timeout] { Root(fd, nonce, timeout).serve(); }).detach();
  return Status::kSuccess;
}

// A rank's side of the rendezvous.
class TcpBootstrap final : public Bootstrap {
 public:
  TcpBootstrap(int fd, int rank, int nranks, double timeout)
      : fd_(fd), rank_(rank), nranks_(nranks), timeout_(timeout) {}
  ~TcpBootstrap() override {
    sendQuietly(fd_, kBye);
    close(fd_);
  }

  int rank() const override { return rank_; }
  int size() const override { return nranks_; }

  Status allGather(const void* mine, size_t bytes, void* all) override {
    ZCCL_CHECK(sendFrame(fd_, kGather, mine, bytes, deadlineIn(timeout_)));
    Frame frame;
    ZCCL_CHECK(expect(kGathered, &frame));
    if (frame.payload.size() != bytes * static_cast<size_t>(nranks_)) {
      return fail(Status::kInvalidUsage,
                  "bootstrap: ranks contributed different sizes to one exchange (%zu bytes in "
                  "all, %zu from each of %d expected)",
                  frame.payload.size(), bytes, nranks_);
    }
    std::memcpy(all, frame.payload.data(), frame.payload.size());
    return Status::kSuccess;
  }

  // The root's answer; its error report becomes this rank's error.
  Status expect(uint32_t type, Frame* frame) {
    const Status received = receiveFrame(fd_, deadlineIn(timeout_ + 5), kMaxPayload, frame);
    if (received == Status::kTimeout) {
      return fail(Status::kTimeout, "bootstrap: rank %d heard nothing from the root within %g s",
                  rank_, timeout_);
    }
    ZCCL_CHECK(received);
    if (frame->type == kError && frame->payload.size() == sizeof(ErrorReport)) {
      ErrorReport report;
      std::memcpy(&report, frame->payload.data(), sizeof(report));
      report.message[sizeof(report.message) - 1] = '\0';
      return fail(static_cast<Status>(report.status), "rank %d: %s", rank_, report.message);
    }
    if (frame->type != type) {
      return fail(Status::kInternalError, "bootstrap: unexpected message %u from the root",
                  frame->type);
    }
    return Status::kSuccess;
  }

 private:
  int fd_;
  int rank_;
  int nranks_;
  double timeout_;
};

}  // namespace

Status bootstrapTimeout(double fallback, double* seconds) {
  std::optional<double> timeout;
  ZCCL_CHECK(envDouble("ZCCL_BOOTSTRAP_TIMEOUT_S", 0, 1e9, &timeout));
  *seconds = timeout.value_or(fallback);
  return Status::kSuccess;
}

Status createUniqueId(UniqueIdBytes* id) {
  SocketAddress address;
  ZCCL_CHECK(localInterfaceAddress(&address));
  address.setPort(0);
  const uint64_t nonce = randomNonce();
  ZCCL_CHECK(startRoot(&address, nonce));
  writeId(address, nonce, id);
  return Status::kSuccess;
}

Status uniqueIdAt(const std::string& hostPort, const std::string& jobName, bool serve,
                  UniqueIdBytes* id) {
  SocketAddress address;
  ZCCL_CHECK(resolveAddress(hostPort, &address));
  const uint64_t nonce = hashName(jobName);
  if (serve) {
    SocketAddress any = address;  // every interface, the same port
    if (any.family() == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&any.storage)->sin_addr.s_addr = htonl(INADDR_ANY);
    } else {
      reinterpret_cast<sockaddr_in6*>(&any.storage)->sin6_addr = in6addr_any;
    }
    ZCCL_CHECK(startRoot(&any, nonce));
  }
  writeId(address, nonce, id);
  return Status::kSuccess;
}

Status connectBootstrap(const UniqueIdBytes& id, int rank, int nranks, double timeoutSeconds,
                        std::unique_ptr<Bootstrap>* out) {
  SocketAddress address;
  uint64_t nonce = 0;
  ZCCL_CHECK(parseUniqueId(id, &address, &nonce));
  if (nranks <= 0) return fail(Status::kInvalidArgument, "nranks=%d: expected > 0", nranks);
  if (rank < 0 || rank >= nranks) {
    return fail(Status::kInvalidArgument, "rank=%d: outside [0, nranks=%d)", rank, nranks);
  }
  int fd = -1;
  ZCCL_CHECK(connectTo(address, deadlineIn(timeoutSeconds), &fd));
  auto bootstrap = std::make_unique<TcpBootstrap>(fd, rank, nranks, timeoutSeconds);
  Hello hello{nonce, rank, nranks, {}};
  gethostname(hello.host, sizeof(hello.host) - 1);
  ZCCL_CHECK(sendFrame(fd, kHello, &hello, sizeof(hello), deadlineIn(timeoutSeconds)));
  Frame welcome;
  ZCCL_CHECK(bootstrap->expect(kWelcome, &welcome));
  *out = std::move(bootstrap);
  return Status::kSuccess;
}

}  // namespace zccl
