// Host identities and the node map built from them (node_map.h).
#include "topology/node_map.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <utility>

#include "common/log.h"

namespace zccl {

NodeMap::NodeMap(std::vector<int> nodeOfRank) : nodeOfRank_(std::move(nodeOfRank)) {
  // Renumber so that node ids are dense and ordered by each node's lowest rank.
  std::map<int, int> dense;
  for (int& node : nodeOfRank_) {
    const auto inserted = dense.emplace(node, static_cast<int>(dense.size()));
    node = inserted.first->second;
  }
  numNodes_ = static_cast<int>(dense.size());
}

int NodeMap::localRank(int rank) const {
  int position = 0;
  for (int r = 0; r < rank; ++r) position += sameNode(r, rank) ? 1 : 0;
  return position;
}

int NodeMap::localSize(int rank) const {
  int count = 0;
  for (int r = 0; r < numRanks(); ++r) count += sameNode(r, rank) ? 1 : 0;
  return count;
}

bool NodeMap::isUniform() const {
  for (int r = 0; r < numRanks(); ++r) {
    if (localSize(r) != localSize(0)) return false;
  }
  return true;
}

int NodeMap::rankAt(int node, int local) const {
  int position = 0;
  for (int r = 0; r < numRanks(); ++r) {
    if (nodeOf(r) != node) continue;
    if (position++ == local) return r;
  }
  return -1;
}

NodeMap NodeMap::subset(const std::vector<int>& parentRanks) const {
  std::vector<int> nodes;
  nodes.reserve(parentRanks.size());
  for (int parent : parentRanks) nodes.push_back(nodeOf(parent));
  return NodeMap(std::move(nodes));
}

namespace {

std::string readFirstLine(const char* path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

}  // namespace

uint64_t localHostIdentity() {
  if (const char* hostId = std::getenv("ZCCL_HOSTID"); hostId != nullptr && *hostId != '\0') {
    return fnv1a(hostId);
  }
  char ipc[128] = {};
  const ssize_t length = readlink("/proc/self/ns/ipc", ipc, sizeof(ipc) - 1);
  if (length > 0) ipc[length] = '\0';
  return fnv1a(hostName() + "|" + readFirstLine("/proc/sys/kernel/random/boot_id") + "|" + ipc);
}

ProcessLocator localProcess() {
  struct stat pidNamespace {};
  stat("/proc/self/ns/pid", &pidNamespace);
  return ProcessLocator{fnv1a(readFirstLine("/proc/sys/kernel/random/boot_id")),
                        static_cast<uint64_t>(pidNamespace.st_ino), static_cast<int64_t>(getpid())};
}

bool processHasExited(const ProcessLocator& process) {
  const ProcessLocator self = localProcess();
  if (process.kernel != self.kernel || process.pidNamespace != self.pidNamespace) return false;
  return kill(static_cast<pid_t>(process.pid), 0) != 0 && errno == ESRCH;
}

NodeMap nodeMapFromHosts(const std::vector<uint64_t>& hostOfRank, int ranksPerNode) {
  std::map<uint64_t, int> ranksSeen;  // per host, its ranks so far: the next one's host rank
  std::map<std::pair<uint64_t, int>, int> ids;
  std::vector<int> nodeOfRank;
  nodeOfRank.reserve(hostOfRank.size());
  for (const uint64_t host : hostOfRank) {
    const int hostRank = ranksSeen[host]++;
    const int slot = ranksPerNode > 0 ? hostRank / ranksPerNode : 0;
    nodeOfRank.push_back(
        ids.emplace(std::make_pair(host, slot), static_cast<int>(ids.size())).first->second);
  }
  return NodeMap(std::move(nodeOfRank));
}

}  // namespace zccl
