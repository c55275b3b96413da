// The little socket code zccl writes itself, for the bootstrap only: choosing the address
// to listen on (ZCCL_SOCKET_IFNAME, ZCCL_SOCKET_FAMILY), and framed messages with deadlines.
// No data moves here: collectives go over MPI, UCX or NCCL.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace zccl {

using Deadline = std::chrono::steady_clock::time_point;

// A deadline `seconds` from now (0: none, in practice a day).
Deadline deadlineIn(double seconds);

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  int family() const { return storage.ss_family; }
  int port() const;
  void setPort(int port);
  std::string text() const;  // "10.0.0.1:1234" or "[fe80::1]:1234"
};

// The address this host offers its peers: the first interface that is up and matches
// ZCCL_SOCKET_IFNAME (comma-separated name prefixes; "^" excludes them, "=" names exactly),
// of ZCCL_SOCKET_FAMILY (ipv4 or ipv6; either, IPv4 first, by default); without a name, the
// first such interface that is not loopback, else loopback.
Status localInterfaceAddress(SocketAddress* address);

// host:port, a host name or an address (IPv6 in brackets), resolved.
Status resolveAddress(const std::string& hostPort, SocketAddress* address);

// A listening socket bound to `address` (port 0: any), the port filled in.
// With addressInUse: a port held by another socket sets it and returns kSystemError without
// reporting, for the caller to retry.
Status listenOn(SocketAddress* address, int* fd, bool* addressInUse = nullptr);

// Small messages leave at once (no Nagle).
void setNoDelay(int fd);

// Connects to `address`, retrying while nothing listens there yet, until the deadline.
Status connectTo(const SocketAddress& address, Deadline deadline, int* fd);

// One framed message: a header (magic, type, payload length) and the payload.
struct FrameHeader;
struct Frame {
  uint32_t type = 0;
  std::vector<char> payload;
};

Status sendFrame(int fd, uint32_t type, const void* payload, size_t bytes, Deadline deadline);
Status receiveFrame(int fd, Deadline deadline, size_t maxPayload, Frame* frame);
// A payload-less frame, best effort and silent (the peer may be gone already).
void sendQuietly(int fd, uint32_t type);

// Frames being received without blocking (the root serves many peers at once): feed() reads
// what the socket has; done() while a whole, valid frame is buffered; take() removes it.
class FrameReader {
 public:
  explicit FrameReader(size_t maxPayload) : maxPayload_(maxPayload) {}
  // Reads what is available; false when the peer closed or sent what is not a frame (also
  // a bad header found by done(), buffered after good frames).
  bool feed(int fd);
  bool done();
  Frame take();
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }

 private:
  // The buffered header, or false (with error_ set) when it is not a zccl frame's.
  bool header(FrameHeader* header);

  size_t maxPayload_;
  std::vector<char> buffer_;
  std::string error_;
};

}  // namespace zccl
