// libFuzzer: what a stranger (or a broken peer) can send to the rendezvous. The input goes
// (1) to a live root of this process, over TCP, as a connection's bytes; (2) through the
// frame reader the root parses with, and through the receive a rank waits with; (3) as a
// unique id. None of it may crash, hang or be taken for a rank.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "bootstrap/socket.h"

namespace {

zccl::SocketAddress rootAddress() {
  static const zccl::SocketAddress address = [] {
    setenv("ZCCL_BOOTSTRAP_TIMEOUT_S", "100000", 1);  // the root outlives the run
    zccl::UniqueIdBytes id;
    zccl::createUniqueId(&id);
    zccl::SocketAddress root;
    uint64_t nonce = 0;
    zccl::parseUniqueId(id, &root, &nonce);
    return root;
  }();
  return address;
}

void toTheRoot(const uint8_t* data, size_t size) {
  int fd = -1;
  if (zccl::connectTo(rootAddress(), zccl::deadlineIn(2), &fd) != zccl::Status::kSuccess) return;
  send(fd, data, size, MSG_NOSIGNAL);
  zccl::Frame answer;
  zccl::receiveFrame(fd, zccl::deadlineIn(0.02), 1 << 20, &answer);  // an error frame, or none
  // Reset rather than close (and no shutdown before): a connection closed in order holds its
  // port in TIME_WAIT for a minute, and a run's tens of thousands of them would leave no
  // port for what runs next (mpiexec, zcclrun).
  const linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  close(fd);
}

void throughTheReaders(const uint8_t* data, size_t size) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return;
  send(pair[0], data, size, MSG_NOSIGNAL);
  shutdown(pair[0], SHUT_WR);
  zccl::FrameReader reader(1 << 20);
  while (reader.feed(pair[1]) && reader.done()) reader.take();
  close(pair[0]);
  close(pair[1]);
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) return;
  send(pair[0], data, size, MSG_NOSIGNAL);
  shutdown(pair[0], SHUT_WR);
  zccl::Frame frame;
  while (zccl::receiveFrame(pair[1], zccl::deadlineIn(0.01), 1 << 20, &frame) ==
         zccl::Status::kSuccess) {
  }
  close(pair[0]);
  close(pair[1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  toTheRoot(data, size);
  throughTheReaders(data, size);
  zccl::UniqueIdBytes id{};
  std::memcpy(id.bytes, data, std::min(size, sizeof(id.bytes)));
  zccl::SocketAddress address;
  uint64_t nonce = 0;
  zccl::parseUniqueId(id, &address, &nonce);
  return 0;
}
