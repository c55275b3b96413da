#include "topology/node_map.h"

#include <map>
#include <utility>

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

Status discoverNodeMap(MPI_Comm comm, int ranksPerNode, NodeMap* map) {
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm host = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host) != MPI_SUCCESS) {
    return fail(Status::kSystemError, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  }
  int hostRank = 0;
  MPI_Comm_rank(host, &hostRank);
  // The host is named by its lowest rank in comm: rank 0 of `host`, ordered by key = rank.
  int hostLeader = rank;
  MPI_Bcast(&hostLeader, 1, MPI_INT, 0, host);
  MPI_Comm_free(&host);
  // Emulated nodes cut each host into groups of ranksPerNode consecutive host ranks.
  const int slot = ranksPerNode > 0 ? hostRank / ranksPerNode : 0;
  const int mine[2] = {hostLeader, slot};
  std::vector<int> all(2 * static_cast<size_t>(size));
  if (MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, comm) != MPI_SUCCESS) {
    return fail(Status::kSystemError, "MPI_Allgather of node identities failed");
  }
  std::map<std::pair<int, int>, int> ids;
  std::vector<int> nodeOfRank(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const auto key = std::make_pair(all[2 * r], all[2 * r + 1]);
    nodeOfRank[r] = ids.emplace(key, static_cast<int>(ids.size())).first->second;
  }
  *map = NodeMap(std::move(nodeOfRank));
  return Status::kSuccess;
}

}  // namespace zccl
