// The bootstrap's sockets (socket.h).
#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "common/env.h"

namespace zccl {

struct FrameHeader {
  uint32_t magic;
  uint32_t type;
  uint64_t bytes;
};
static_assert(sizeof(FrameHeader) == 16, "the bootstrap's wire format");

namespace {

constexpr uint32_t kFrameMagic = 0x3153425au;  // "ZBS1"

int remainingMs(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
}

// Waits until fd is ready for `events` or the deadline passes.
Status waitReady(int fd, short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int ready = poll(&p, 1, remainingMs(deadline));
    if (ready > 0) return Status::kSuccess;
    if (ready == 0) return fail(Status::kTimeout, "bootstrap: %s timed out", what);
    if (errno != EINTR) return fail(Status::kSystemError, "bootstrap: poll: %s", strerror(errno));
  }
}

Status writeAll(int fd, const char* data, size_t bytes, Deadline deadline) {
  while (bytes > 0) {
    ZCCL_CHECK(waitReady(fd, POLLOUT, deadline, "sending"));
    const ssize_t sent = send(fd, data, bytes, MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(Status::kRemoteError, "bootstrap: send: %s", strerror(errno));
    }
    data += sent;
    bytes -= static_cast<size_t>(sent);
  }
  return Status::kSuccess;
}

Status readAll(int fd, char* data, size_t bytes, Deadline deadline) {
  while (bytes > 0) {
    ZCCL_CHECK(waitReady(fd, POLLIN, deadline, "waiting for the peer"));
    const ssize_t got = recv(fd, data, bytes, 0);
    if (got == 0) return fail(Status::kRemoteError, "bootstrap: the peer closed the connection");
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(Status::kRemoteError, "bootstrap: recv: %s", strerror(errno));
    }
    data += got;
    bytes -= static_cast<size_t>(got);
  }
  return Status::kSuccess;
}

bool isLinkLocal(const sockaddr* address) {
  if (address->sa_family != AF_INET6) return false;
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
  return IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr);
}

// ZCCL_SOCKET_IFNAME's filter: prefixes, "^" excluding, "=" exact.
bool nameMatches(const std::string& filter, const std::string& name) {
  if (filter.empty()) return true;
  std::string list = filter;
  const bool exclude = list[0] == '^';
  if (exclude) list.erase(0, 1);
  const bool exact = !list.empty() && list[0] == '=';
  if (exact) list.erase(0, 1);
  bool matched = false;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    if (!item.empty()) matched |= exact ? name == item : name.compare(0, item.size(), item) == 0;
    start = end + 1;
  }
  return matched != exclude;
}

}  // namespace

void setNoDelay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Deadline deadlineIn(double seconds) {
  const double bounded = seconds > 0 ? std::min(seconds, 86400.0) : 86400.0;
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(bounded));
}

int SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
}

void SocketAddress::setPort(int port) {
  const uint16_t network = htons(static_cast<uint16_t>(port));
  if (family() == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = network;
  } else {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = network;
  }
}

std::string SocketAddress::text() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host,
              sizeof(host));
    return std::string(host) + ":" + std::to_string(port());
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
            sizeof(host));
  return "[" + std::string(host) + "]:" + std::to_string(port());
}

Status localInterfaceAddress(SocketAddress* address) {
  const std::string filter = envString("ZCCL_SOCKET_IFNAME").value_or("");
  const std::string family = envString("ZCCL_SOCKET_FAMILY").value_or("");
  if (!family.empty() && family != "ipv4" && family != "ipv6") {
    return fail(Status::kInvalidArgument, "ZCCL_SOCKET_FAMILY=%s: expected ipv4 or ipv6",
                family.c_str());
  }
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) {
    return fail(Status::kSystemError, "getifaddrs: %s", strerror(errno));
  }
  // Preference: a match that is not loopback over loopback; IPv4 over IPv6 (unless asked).
  const ifaddrs* best = nullptr;
  int bestScore = -1;
  for (const ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    const int f = i->ifa_addr->sa_family;
    if (f != AF_INET && f != AF_INET6) continue;
    if ((family == "ipv4" && f != AF_INET) || (family == "ipv6" && f != AF_INET6)) continue;
    if (isLinkLocal(i->ifa_addr) || !nameMatches(filter, i->ifa_name)) continue;
    const bool loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    const int score = (loopback && filter.empty() ? 0 : 2) + (f == AF_INET ? 1 : 0);
    if (score > bestScore) {
      best = i;
      bestScore = score;
    }
  }
  if (best != nullptr) {
    address->length =
        best->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    std::memcpy(&address->storage, best->ifa_addr, address->length);
  }
  freeifaddrs(interfaces);
  if (best == nullptr) {
    return fail(Status::kInvalidArgument,
                "ZCCL_SOCKET_IFNAME=%s ZCCL_SOCKET_FAMILY=%s: no interface that is up matches",
                filter.c_str(), family.c_str());
  }
  return Status::kSuccess;
}

Status resolveAddress(const std::string& hostPort, SocketAddress* address) {
  const size_t colon = hostPort.rfind(':');
  if (colon == std::string::npos || colon + 1 == hostPort.size()) {
    return fail(Status::kInvalidArgument, "%s: expected host:port", hostPort.c_str());
  }
  std::string host = hostPort.substr(0, colon);
  const std::string port = hostPort.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr) {
    return fail(Status::kInvalidArgument, "%s: cannot resolve: %s", hostPort.c_str(),
                gai_strerror(rc));
  }
  address->length = found->ai_addrlen;
  std::memcpy(&address->storage, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  return Status::kSuccess;
}

Status listenOn(SocketAddress* address, int* fd, bool* addressInUse) {
  if (addressInUse != nullptr) *addressInUse = false;
  const int s = socket(address->family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail(Status::kSystemError, "socket: %s", strerror(errno));
  const int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, reinterpret_cast<const sockaddr*>(&address->storage), address->length) != 0 ||
      listen(s, 1024) != 0) {
    const std::string why = strerror(errno);
    if (addressInUse != nullptr && errno == EADDRINUSE) {
      *addressInUse = true;  // the caller retries, and reports if it gives up
      close(s);
      return Status::kSystemError;
    }
    close(s);
    return fail(Status::kSystemError, "bootstrap: cannot listen on %s: %s", address->text().c_str(),
                why.c_str());
  }
  socklen_t length = address->length;
  getsockname(s, reinterpret_cast<sockaddr*>(&address->storage), &length);
  fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
  *fd = s;
  return Status::kSuccess;
}

Status connectTo(const SocketAddress& address, Deadline deadline, int* fd) {
  auto pause = std::chrono::milliseconds(1);  // doubles up to 100 ms while the root starts
  for (;;) {
    const int s = socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return fail(Status::kSystemError, "socket: %s", strerror(errno));
    if (connect(s, reinterpret_cast<const sockaddr*>(&address.storage), address.length) == 0) {
      setNoDelay(s);
      *fd = s;
      return Status::kSuccess;
    }
    const int error = errno;
    close(s);
    const bool later = error == ECONNREFUSED || error == ETIMEDOUT || error == EHOSTUNREACH ||
                       error == ENETUNREACH || error == EINTR;
    if (!later) {
      return fail(Status::kSystemError, "bootstrap: connect to %s: %s", address.text().c_str(),
                  strerror(error));
    }
    if (remainingMs(deadline) == 0) {
      return fail(Status::kTimeout, "bootstrap: no root listens at %s (%s) before the timeout",
                  address.text().c_str(), strerror(error));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(100));
  }
}

Status sendFrame(int fd, uint32_t type, const void* payload, size_t bytes, Deadline deadline) {
  // One write: a header sent apart would wait for the peer's delayed ACK (Nagle, ~40 ms).
  const FrameHeader header{kFrameMagic, type, bytes};
  std::vector<char> frame(reinterpret_cast<const char*>(&header),
                          reinterpret_cast<const char*>(&header) + sizeof(header));
  const char* data = static_cast<const char*>(payload);
  frame.insert(frame.end(), data, data + bytes);
  return writeAll(fd, frame.data(), frame.size(), deadline);
}

void sendQuietly(int fd, uint32_t type) {
  const FrameHeader header{kFrameMagic, type, 0};
  send(fd, &header, sizeof(header), MSG_NOSIGNAL | MSG_DONTWAIT);
}

Status receiveFrame(int fd, Deadline deadline, size_t maxPayload, Frame* frame) {
  FrameHeader header{};
  ZCCL_CHECK(readAll(fd, reinterpret_cast<char*>(&header), sizeof(header), deadline));
  if (header.magic != kFrameMagic || header.bytes > maxPayload) {
    return fail(Status::kRemoteError, "bootstrap: the peer sent what is not a zccl frame");
  }
  frame->type = header.type;
  frame->payload.resize(header.bytes);
  return readAll(fd, frame->payload.data(), header.bytes, deadline);
}

bool FrameReader::header(FrameHeader* header) {
  if (buffer_.size() < sizeof(FrameHeader)) return false;
  std::memcpy(header, buffer_.data(), sizeof(*header));
  if (header->magic != kFrameMagic || header->bytes > maxPayload_) {
    error_ = "sent what is not a zccl frame";
    return false;
  }
  return true;
}

bool FrameReader::feed(int fd) {
  char chunk[4096];
  for (;;) {
    const ssize_t got = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (got == 0) {
      error_ = "closed the connection";
      break;
    }
    if (got < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) error_ = strerror(errno);
      break;
    }
    buffer_.insert(buffer_.end(), chunk, chunk + got);
  }
  FrameHeader first{};
  header(&first);
  return !failed();
}

bool FrameReader::done() {
  FrameHeader next{};
  return header(&next) && buffer_.size() - sizeof(FrameHeader) >= next.bytes;
}

Frame FrameReader::take() {
  FrameHeader next{};
  header(&next);
  Frame frame;
  frame.type = next.type;
  const auto begin = buffer_.begin() + sizeof(FrameHeader);
  frame.payload.assign(begin, begin + static_cast<ptrdiff_t>(next.bytes));
  buffer_.erase(buffer_.begin(), begin + static_cast<ptrdiff_t>(next.bytes));
  return frame;
}

}  // namespace zccl
