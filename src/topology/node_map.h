// Which node each rank of a group lives on: the base of every intra/inter-node split.
#pragma once

#include <mpi.h>

#include <vector>

#include "common/status.h"

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

// Collective over comm. Ranks sharing memory (MPI_COMM_TYPE_SHARED) form a node; with
// ranksPerNode > 0 every such node is further cut into emulated nodes of that many
// consecutive ranks, so that one host can stand in for several.
Status discoverNodeMap(MPI_Comm comm, int ranksPerNode, NodeMap* map);

}  // namespace zccl
