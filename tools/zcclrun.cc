// zcclrun: starts N local processes of a program as one zccl job, without MPI, the way
// torchrun does: each gets ZCCL_RANK, ZCCL_WORLD_SIZE and a rendezvous address
// (ZCCL_ROOT_ADDR) in its environment, for zcclCommInitFromEnv; PyTorch's RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR and MASTER_PORT too.
//
//   zcclrun -n N [--ranks-per-node K] [--timeout SECONDS] [--kill-on-failure] program args...
//   zcclrun -n N --nnodes M --node-rank R --root HOST:PORT [--job ID] program args...
//
// The second form is one node's part of a job of M nodes of N ranks each (run it on every
// node, with the same root, an address of node 0, and job id): ranks R*N .. R*N+N-1.
// A rank that dies does not take the others down (zccl's timeouts end their waits), unless
// --kill-on-failure asks for it; --timeout ends the whole job. Ctrl-C and SIGTERM reach every
// rank. The exit status is 0 when every rank exited with 0, else the first failure's (128 +
// the signal for a rank killed by one, 124 when the timeout ended the job).
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness/command_line.h"

namespace {

struct Settings {
  int ranks = 0;  // on this node
  int ranksPerNode = 0;
  int nodes = 1;
  int nodeRank = 0;
  std::string root;  // host:port of the rendezvous; empty: this host, a free port
  int rootPort = 0;  // root's port
  std::string job;
  double timeoutSeconds = 0;
  bool killOnFailure = false;
  char** program = nullptr;
};

constexpr int kMostRanks = 1 << 20;

volatile sig_atomic_t forwardedSignal = 0;

void onSignal(int signal) { forwardedSignal = signal; }

// A port nobody listens on now (the kernel's choice; the ranks bind it moments later).
// A free port below the kernel's ephemeral range, so that no connection made meanwhile (the
// ranks' own, UCX's) can draw it as its local port before the rendezvous listens on it.
bool bindable(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return free;
}

int freePort() {
  int ephemeralLow = 32768;
  if (FILE* range = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(range, "%d", &ephemeralLow) != 1) ephemeralLow = 32768;
    std::fclose(range);
  }
  const int low = 10000;
  const int high = std::max(low + 1000, ephemeralLow) - 1;
  std::random_device device;
  std::uniform_int_distribution<int> pick(low, high);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = pick(device);
    if (bindable(port)) return port;
  }
  std::fprintf(stderr, "zcclrun: no free port in %d-%d\n", low, high);
  std::exit(1);
}

std::string randomJobId() {
  std::random_device device;
  char text[32];
  std::snprintf(text, sizeof(text), "zcclrun-%08x%08x", device(), device());
  return text;
}

bool refuse(const std::string& flag, const char* text, const std::string& expected) {
  return zccl_harness::refuseArgument("zcclrun", flag, text, expected);
}

bool parseCount(const std::string& flag, const char* text, int least, int* value) {
  return zccl_harness::integerArgument("zcclrun", flag, text, least, kMostRanks, value);
}

// --root HOST:PORT: the rendezvous at PORT, PyTorch's store two above it.
bool parseRoot(const char* text, Settings* s) {
  s->root = text;
  const size_t colon = s->root.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      !zccl_harness::parseInteger(text + colon + 1, 1, 65533, &s->rootPort)) {
    return refuse("--root", text, "HOST:PORT, the port from 1 to 65533");
  }
  return true;
}

bool parse(int argc, char** argv, Settings* s) {
  static const option options[] = {{"ranks-per-node", required_argument, nullptr, 'r'},
                                   {"timeout", required_argument, nullptr, 't'},
                                   {"kill-on-failure", no_argument, nullptr, 'k'},
                                   {"nnodes", required_argument, nullptr, 'N'},
                                   {"node-rank", required_argument, nullptr, 'R'},
                                   {"root", required_argument, nullptr, 'A'},
                                   {"job", required_argument, nullptr, 'J'},
                                   {"help", no_argument, nullptr, 'h'},
                                   {nullptr, 0, nullptr, 0}};
  int c = 0;
  while ((c = getopt_long(argc, argv, "+n:", options, nullptr)) != -1) {
    const std::string flag = zccl_harness::optionName(options, c);
    bool ok = true;
    switch (c) {
      case 'n':
        ok = parseCount(flag, optarg, 1, &s->ranks);
        break;
      case 'r':
        ok = parseCount(flag, optarg, 0, &s->ranksPerNode);
        break;
      case 't':
        ok = zccl_harness::parseReal(optarg, 0, 1e9, &s->timeoutSeconds) ||
             refuse(flag, optarg, zccl_harness::numberFrom(0, 1e9) + " seconds (0: none)");
        break;
      case 'k':
        s->killOnFailure = true;
        break;
      case 'N':
        ok = parseCount(flag, optarg, 1, &s->nodes);
        break;
      case 'R':
        ok = parseCount(flag, optarg, 0, &s->nodeRank);
        break;
      case 'A':
        ok = parseRoot(optarg, s);
        break;
      case 'J':
        s->job = optarg;
        break;
      default:
        return false;
    }
    if (!ok) return false;
  }
  if (s->ranks == 0) return refuse("-n", "(missing)", "the ranks to start on this node");
  if (s->nodeRank >= s->nodes) {
    return refuse("--node-rank", std::to_string(s->nodeRank).c_str(),
                  "less than --nnodes (" + std::to_string(s->nodes) + ")");
  }
  if (s->nodes > 1 && s->root.empty()) {
    return refuse("--nnodes", std::to_string(s->nodes).c_str(),
                  "more than one node needs --root HOST:PORT");
  }
  if (optind >= argc)
    return refuse("program", "(missing)", "the program to run, then its arguments");
  s->program = argv + optind;
  return true;
}

// The rendezvous and PyTorch's store of the job: host:port each.
struct Addresses {
  std::string rendezvous;
  std::string masterAddress;
  int masterPort;
};

pid_t launch(const Settings& s, int local, const Addresses& at, const std::string& job) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);  // its own group: zcclrun signals it and whatever it starts
  const auto set = [](const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
  };
  const int rank = s.nodeRank * s.ranks + local;
  const int worldSize = s.nodes * s.ranks;
  set("ZCCL_RANK", std::to_string(rank));
  set("ZCCL_WORLD_SIZE", std::to_string(worldSize));
  set("ZCCL_ROOT_ADDR", at.rendezvous);
  set("ZCCL_JOB_ID", job);
  if (s.ranksPerNode > 0) set("ZCCL_RANKS_PER_NODE", std::to_string(s.ranksPerNode));
  set("RANK", std::to_string(rank));
  set("LOCAL_RANK", std::to_string(local));
  set("WORLD_SIZE", std::to_string(worldSize));
  set("LOCAL_WORLD_SIZE", std::to_string(s.ranks));
  set("GROUP_RANK", std::to_string(s.nodeRank));
  set("MASTER_ADDR", at.masterAddress);
  set("MASTER_PORT", std::to_string(at.masterPort));
  execvp(s.program[0], s.program);
  std::fprintf(stderr, "zcclrun: cannot run %s: %s\n", s.program[0], std::strerror(errno));
  _exit(127);
}

void signalAll(const std::vector<pid_t>& pids, const std::vector<bool>& running, int signal) {
  for (size_t r = 0; r < pids.size(); ++r) {
    if (running[r]) kill(-pids[r], signal);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  if (!parse(argc, argv, &s)) {
    std::fprintf(stderr,
                 "usage: zcclrun -n N [--ranks-per-node K] [--timeout SECONDS] "
                 "[--kill-on-failure]\n"
                 "               [--nnodes M --node-rank R --root HOST:PORT [--job ID]] "
                 "program [args...]\n");
    return 2;
  }
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);

  Addresses at;
  if (s.root.empty()) {
    const int rendezvousPort = freePort();
    int storePort = freePort();
    while (storePort == rendezvousPort || storePort == rendezvousPort + 1) storePort = freePort();
    at = Addresses{"127.0.0.1:" + std::to_string(rendezvousPort), "127.0.0.1", storePort};
  } else {
    // Across nodes: the rendezvous at the given port, PyTorch's store two ports above it.
    at = Addresses{s.root, s.root.substr(0, s.root.rfind(':')), s.rootPort + 2};
  }
  const std::string job = !s.job.empty()   ? s.job
                          : s.root.empty() ? randomJobId()
                                           : "zcclrun " + s.root;
  std::vector<pid_t> pids;
  pids.reserve(static_cast<size_t>(s.ranks));
  for (int r = 0; r < s.ranks; ++r) pids.push_back(launch(s, r, at, job));
  std::vector<bool> running(pids.size(), true);
  int remaining = s.ranks;
  int status = 0;
  const auto start = std::chrono::steady_clock::now();
  bool killing = false;
  auto killDeadline = start;
  while (remaining > 0) {
    int waitStatus = 0;
    const pid_t pid = waitpid(-1, &waitStatus, WNOHANG);
    if (pid > 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] != pid || !running[r]) continue;
        running[r] = false;
        --remaining;
        int code = 0;
        if (WIFSIGNALED(waitStatus)) {
          code = 128 + WTERMSIG(waitStatus);
          if (!killing) {
            std::fprintf(stderr, "zcclrun: rank %d (pid %d) was killed by signal %d\n",
                         s.nodeRank * s.ranks + static_cast<int>(r), pid, WTERMSIG(waitStatus));
          }
        } else {
          code = WEXITSTATUS(waitStatus);
          if (code != 0 && !killing) {
            std::fprintf(stderr, "zcclrun: rank %d (pid %d) exited with %d\n",
                         s.nodeRank * s.ranks + static_cast<int>(r), pid, code);
          }
        }
        if (code != 0 && status == 0) status = code;
        if (code != 0 && s.killOnFailure && !killing) {
          signalAll(pids, running, SIGTERM);
          killing = true;
          killDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        }
      }
      continue;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (forwardedSignal != 0) {
      signalAll(pids, running, forwardedSignal);
      if (status == 0) status = 128 + forwardedSignal;
      forwardedSignal = 0;
      killing = true;
      killDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    } else if (s.timeoutSeconds > 0 && elapsed > s.timeoutSeconds && !killing) {
      std::fprintf(stderr, "zcclrun: the job ran past --timeout %g s; ending it\n",
                   s.timeoutSeconds);
      signalAll(pids, running, SIGTERM);
      status = 124;
      killing = true;
      killDeadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    } else if (killing && std::chrono::steady_clock::now() > killDeadline) {
      signalAll(pids, running, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}
