// The engine's own collectives (MPI_Allgather, ncclAllGather, ...), which some transports
// offer beside their point-to-point messages: the "native" algorithm runs them, for numbers
// side by side with zccl's own. kAvg is not accepted here (callers sum and divide), nor are
// NCCL's in-place layouts (callers stage them).
#pragma once

#include <cstddef>

#include "common/status.h"
#include "common/types.h"

namespace zccl {

class EngineCollectives {
 public:
  virtual ~EngineCollectives() = default;
  virtual Status allGather(const void* send, void* recv, size_t count, DataType type) = 0;
  virtual Status reduceScatter(const void* send, void* recv, size_t recvCount, DataType type,
                               RedOp op) = 0;
  virtual Status allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op) = 0;
  virtual Status broadcast(void* data, size_t count, DataType type, int root) = 0;
  virtual Status allToAll(const void* send, void* recv, size_t count, DataType type) = 0;
  // Rooted: recv (reduce, gather) or send (scatter) is read on the root only. In place at the
  // root: reduce with send == recv, gather with send == nullptr, scatter with recv == nullptr.
  virtual Status reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                        int root) = 0;
  virtual Status gather(const void* send, void* recv, size_t count, DataType type, int root) = 0;
  virtual Status scatter(const void* send, void* recv, size_t count, DataType type, int root) = 0;
};

}  // namespace zccl
