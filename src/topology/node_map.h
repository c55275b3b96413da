// Which node each rank of a group lives on: the base of every intra/inter-node split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace zccl {

class NodeMap {
 public:
  NodeMap() = default;
  // nodeOfRank[r] is r's node; nodes are numbered 0.. in order of their lowest rank.
  explicit NodeMap(std::vector<int> nodeOfRank);

  int nodeOf(int rank) const { return nodeOfRank_[static_cast<size_t>(rank)]; }
  int numNodes() const { return numNodes_; }
  int numRanks() const { return static_cast<int>(nodeOfRank_.size()); }
  // Position of `rank` among the ranks of its node, and how many ranks that node has.
  int localRank(int rank) const;
  int localSize(int rank) const;
  bool sameNode(int a, int b) const { return nodeOf(a) == nodeOf(b); }
  // The map of a sub-group whose rank i was rank parentRanks[i] here.
  NodeMap subset(const std::vector<int>& parentRanks) const;
  // Every node holds the same number of ranks (what two-level algorithms need).
  bool isUniform() const;
  // The rank at position `local` of node `node`.
  int rankAt(int node, int local) const;

 private:
  std::vector<int> nodeOfRank_;
  int numNodes_ = 0;
};

// This process's host: a hash of the host name, the boot id and the IPC namespace, so that
// ranks with equal identities can share memory (and emulated nodes in namespaces of their
// own differ). ZCCL_HOSTID, when set, stands for all three (as NCCL_HOSTID does).
uint64_t localHostIdentity();

// A rank's process as another process can check on it: the kernel it runs on (boot id), its
// PID namespace and its PID.
struct ProcessLocator {
  uint64_t kernel = 0;
  uint64_t pidNamespace = 0;
  int64_t pid = 0;
};
ProcessLocator localProcess();
// True when `process` shares this process's kernel and PID namespace and no longer exists:
// how a survivor names a rank that died on its own machine.
bool processHasExited(const ProcessLocator& process);

// The node map of a group from every member's host identity, in rank order: ranks of one
// host form a node; with ranksPerNode > 0 every host is further cut into emulated nodes of
// that many consecutive ranks, so that one host can stand in for several.
NodeMap nodeMapFromHosts(const std::vector<uint64_t>& hostOfRank, int ranksPerNode);

}  // namespace zccl
