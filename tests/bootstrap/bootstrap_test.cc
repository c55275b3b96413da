// The unique-id and environment rendezvous, rank by rank in processes of their own
// (bootstrap_peer): a job that forms, IPv6, and every fault the root must name: a rank that
// never arrives, a wrong id, a rank claimed twice, nranks that disagree, strangers on the
// port. Each ends within the timeout on every live rank, and no process is left behind.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "zccl/zccl.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kTimeout = 3.0;  // ZCCL_BOOTSTRAP_TIMEOUT_S of every scenario

struct Peer {
  std::vector<std::string> args;                                 // after the program
  std::vector<std::pair<std::string, std::string>> environment;  // added to ours
};

struct Outcome {
  int exitCode = -1;
  std::string output;
};

std::string hex(const zcclUniqueId& id) {
  std::string text;
  char pair[3];
  for (const char c : id.internal) {
    std::snprintf(pair, sizeof(pair), "%02x", static_cast<unsigned char>(c));
    text += pair;
  }
  return text;
}

// Runs every peer at once; each must end within `limit` seconds or it is killed (and the
// test fails). Returns their exit codes and output.
std::vector<Outcome> runPeers(const std::vector<Peer>& peers, double limit, double* seconds) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  const auto start = Clock::now();
  for (const Peer& peer : peers) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      close(fds[0]);
      for (const auto& [name, value] : peer.environment) setenv(name.c_str(), value.c_str(), 1);
      setenv("ZCCL_BOOTSTRAP_TIMEOUT_S", std::to_string(kTimeout).c_str(), 1);
      std::vector<char*> argv{const_cast<char*>(ZCCL_BOOTSTRAP_PEER)};
      for (const std::string& a : peer.args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<Outcome> outcomes(peers.size());
  size_t left = peers.size();
  while (left > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      if (outcomes[i].exitCode >= 0 || waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      outcomes[i].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      --left;
    }
    if (std::chrono::duration<double>(Clock::now() - start).count() > limit) {
      for (size_t i = 0; i < pids.size(); ++i) {
        if (outcomes[i].exitCode >= 0) continue;
        kill(pids[i], SIGKILL);
        waitpid(pids[i], nullptr, 0);
        ADD_FAILURE() << "peer " << i << " was still running after " << limit << " s";
        outcomes[i].exitCode = 137;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  *seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (size_t i = 0; i < pipes.size(); ++i) {
    char buffer[4096];
    ssize_t got = 0;
    while ((got = read(pipes[i], buffer, sizeof(buffer))) > 0)
      outcomes[i].output.append(buffer, got);
    close(pipes[i]);
  }
  return outcomes;
}

Peer byId(const zcclUniqueId& id, int rank, int nranks) {
  return Peer{{std::to_string(rank), std::to_string(nranks), hex(id)}, {}};
}

void expectFailure(const Outcome& o, zcclResult_t code, const std::string& mentions) {
  EXPECT_EQ(o.exitCode, 10 + static_cast<int>(code)) << o.output;
  EXPECT_NE(o.output.find(mentions), std::string::npos) << o.output;
}

zcclUniqueId newId() {
  setenv("ZCCL_BOOTSTRAP_TIMEOUT_S", std::to_string(kTimeout).c_str(), 1);
  zcclUniqueId id;
  EXPECT_EQ(zcclGetUniqueId(&id), zcclSuccess) << zcclGetLastError(nullptr);
  return id;
}

TEST(Bootstrap, ThreeRanksFormAJob) {
  const zcclUniqueId id = newId();
  double seconds = 0;
  const auto outcomes = runPeers({byId(id, 0, 3), byId(id, 1, 3), byId(id, 2, 3)}, 30, &seconds);
  for (const Outcome& o : outcomes) EXPECT_EQ(o.exitCode, 0) << o.output;
}

TEST(Bootstrap, OverIpv6Loopback) {
  setenv("ZCCL_SOCKET_IFNAME", "lo", 1);
  setenv("ZCCL_SOCKET_FAMILY", "ipv6", 1);
  const zcclUniqueId id = newId();
  unsetenv("ZCCL_SOCKET_IFNAME");
  unsetenv("ZCCL_SOCKET_FAMILY");
  double seconds = 0;
  const auto outcomes = runPeers({byId(id, 0, 2), byId(id, 1, 2)}, 30, &seconds);
  for (const Outcome& o : outcomes) EXPECT_EQ(o.exitCode, 0) << o.output;
}

TEST(Bootstrap, ARankThatNeverArrivesIsNamedWithinTheTimeout) {
  const zcclUniqueId id = newId();
  double seconds = 0;
  const auto outcomes = runPeers({byId(id, 0, 3), byId(id, 1, 3)}, kTimeout + 15, &seconds);
  for (const Outcome& o : outcomes) expectFailure(o, zcclTimeout, "rank 2 of 3 did not arrive");
  EXPECT_LT(seconds, kTimeout + 5);
}

TEST(Bootstrap, AWrongIdIsRefused) {
  const zcclUniqueId id = newId();
  zcclUniqueId otherJob = id;
  for (int i = 8; i < 16; ++i) otherJob.internal[i] ^= 0x5a;  // the job's nonce
  double seconds = 0;
  const auto outcomes = runPeers(
      {byId(id, 0, 3), byId(id, 1, 3), byId(otherJob, 2, 3), Peer{{"2", "3", "garbage"}, {}}},
      kTimeout + 15, &seconds);
  expectFailure(outcomes[0], zcclTimeout, "rank 2 of 3 did not arrive");
  expectFailure(outcomes[1], zcclTimeout, "rank 2 of 3 did not arrive");
  expectFailure(outcomes[2], zcclInvalidArgument, "not the unique id of the job");
  expectFailure(outcomes[3], zcclInvalidArgument, "not a zccl unique id");
}

TEST(Bootstrap, ARankClaimedTwiceFailsEveryone) {
  const zcclUniqueId id = newId();
  double seconds = 0;
  const auto outcomes =
      runPeers({byId(id, 0, 3), byId(id, 1, 3), byId(id, 1, 3)}, kTimeout + 15, &seconds);
  for (const Outcome& o : outcomes) expectFailure(o, zcclInvalidUsage, "rank 1 was claimed twice");
}

TEST(Bootstrap, NranksThatDisagreeFailEveryone) {
  const zcclUniqueId id = newId();
  double seconds = 0;
  const auto outcomes =
      runPeers({byId(id, 0, 3), byId(id, 1, 3), byId(id, 2, 4)}, kTimeout + 15, &seconds);
  for (const Outcome& o : outcomes) expectFailure(o, zcclInvalidUsage, "nranks differ");
}

int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// Connects to the root at `port` (once rank 0 has started it) and sends `junk`.
int stranger(int port, const std::string& junk) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int attempt = 0; attempt < 500; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      if (!junk.empty()) send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
      return fd;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

TEST(Bootstrap, StrangersOnThePortAreDropped) {
  const int port = freePort();
  const auto env = [&](int rank) {
    return Peer{{},
                {{"ZCCL_RANK", std::to_string(rank)},
                 {"ZCCL_WORLD_SIZE", "3"},
                 {"ZCCL_ROOT_ADDR", "127.0.0.1:" + std::to_string(port)},
                 {"ZCCL_JOB_ID", "strangers"},
                 {"PEER_DELAY_MS", rank == 2 ? "1500" : "0"}}};  // strangers come mid-rendezvous
  };
  std::vector<int> strangers;
  std::thread visitors([&] {
    strangers.push_back(stranger(port, "GET / HTTP/1.1\r\n\r\n"));  // garbage
    strangers.push_back(stranger(port, ""));                        // silent
    std::string header(16, '\0');  // a frame header announcing a huge payload
    header[0] = 'Z';
    header[8] = '\x7f';
    strangers.push_back(stranger(port, header));
  });
  double seconds = 0;
  const auto outcomes = runPeers({env(0), env(1), env(2)}, 30, &seconds);
  visitors.join();
  for (const Outcome& o : outcomes) EXPECT_EQ(o.exitCode, 0) << o.output;
  for (int fd : strangers) {
    EXPECT_GE(fd, 0) << "the root was not listening";
    close(fd);
  }
}

// A key-value store in this process, as a framework would offer one (zcclStore's callbacks).
class MemoryStore {
 public:
  zcclStore callbacks() {
    return zcclStore{this, &MemoryStore::set, &MemoryStore::get, &MemoryStore::wait};
  }

 private:
  static zcclResult_t set(void* self, const char* key, const void* value, size_t bytes) {
    auto* store = static_cast<MemoryStore*>(self);
    std::lock_guard<std::mutex> lock(store->mutex_);
    store->values_[key] = std::string(static_cast<const char*>(value), bytes);
    store->changed_.notify_all();
    return zcclSuccess;
  }
  static zcclResult_t get(void* self, const char* key, void* value, size_t* bytes) {
    auto* store = static_cast<MemoryStore*>(self);
    std::lock_guard<std::mutex> lock(store->mutex_);
    const std::string& stored = store->values_.at(key);
    const size_t capacity = *bytes;
    *bytes = stored.size();
    if (stored.size() > capacity) return zcclInvalidUsage;
    std::memcpy(value, stored.data(), stored.size());
    return zcclSuccess;
  }
  static zcclResult_t wait(void* self, const char* const* keys, int count, double seconds) {
    auto* store = static_cast<MemoryStore*>(self);
    std::unique_lock<std::mutex> lock(store->mutex_);
    const bool all = store->changed_.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
      for (int i = 0; i < count; ++i) {
        if (store->values_.count(keys[i]) == 0) return false;
      }
      return true;
    });
    return all ? zcclSuccess : zcclTimeout;
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

// `ranks` of `nranks` ranks join through `store`, each on a thread; their results.
std::vector<zcclResult_t> joinThroughStore(MemoryStore* store, int ranks, int nranks,
                                           std::vector<std::string>* errors) {
  setenv("ZCCL_BOOTSTRAP_TIMEOUT_S", std::to_string(kTimeout).c_str(), 1);
  const zcclStore callbacks = store->callbacks();
  std::vector<zcclResult_t> results(static_cast<size_t>(ranks));
  errors->resize(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      zcclComm_t comm = nullptr;
      results[r] = zcclCommInitStore(&comm, nranks, r, &callbacks, "job", nullptr);
      (*errors)[r] = zcclGetLastError(nullptr);
      if (results[r] != zcclSuccess) return;
      float value = 1.0f;
      results[r] = zcclAllReduce(&value, &value, 1, zcclFloat32, zcclSum, comm, nullptr);
      if (value != static_cast<float>(nranks)) results[r] = zcclInternalError;
      zcclCommDestroy(comm);
    });
  }
  for (std::thread& t : threads) t.join();
  return results;
}

TEST(Bootstrap, ThroughAFrameworksStore) {
  MemoryStore store;
  std::vector<std::string> errors;
  const auto results = joinThroughStore(&store, 3, 3, &errors);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r], zcclSuccess) << errors[r];
}

TEST(Bootstrap, ThroughAStoreARankThatNeverArrivesIsNamed) {
  MemoryStore store;
  std::vector<std::string> errors;
  const auto start = Clock::now();
  const auto results = joinThroughStore(&store, 2, 3, &errors);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), kTimeout + 5);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r], zcclTimeout);
    EXPECT_NE(errors[r].find("rank(s) 2 of 3 did not arrive"), std::string::npos) << errors[r];
  }
}

}  // namespace
