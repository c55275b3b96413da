// zcclSharedMemoryCreate and zcclSharedMemoryDestroy: one POSIX shared-memory segment that the
// ranks of a one-node communicator map. Rank 0 creates it under a name nobody else can guess,
// the others open it by that name, and rank 0 unlinks it once every rank has answered, so that
// only the mappings keep it: nothing is left in /dev/shm after the call, whatever the outcome.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/guarded.h"

using zccl::Status;

struct zcclSharedMemory {
  void* base;
  size_t bytes;
};

namespace zccl {
namespace {

constexpr size_t kNameBytes = 44;  // "/zccl-<pid>-<64 random bits>" and its end

// What each rank tells the others before the segment is opened: rank 0 also its name, or
// why it could not make it.
struct Offer {
  uint64_t bytes;
  int32_t madeErrno;  // rank 0: 0, or errno of the step that failed
  char name[kNameBytes];
};

// What each rank tells the others after opening it.
struct Answer {
  int32_t openErrno;  // 0: mapped
};

// Maps `bytes` of the segment open as `fd`; nullptr (errno set) on failure.
void* mapSegment(int fd, size_t bytes) {
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return base == MAP_FAILED ? nullptr : base;
}

// Rank 0: a new segment of `bytes` under a fresh name; errno, or 0 with *base mapped.
int createSegment(size_t bytes, char (&name)[kNameBytes], void** base) {
  std::random_device entropy;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::snprintf(name, sizeof(name), "/zccl-%d-%08x%08x", static_cast<int>(getpid()), entropy(),
                  entropy());
    const int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return errno;
    int error = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
    if (error == 0) {
      *base = mapSegment(fd, bytes);
      if (*base == nullptr) error = errno;
    }
    close(fd);
    if (error != 0) shm_unlink(name);
    return error;
  }
  return EEXIST;
}

// Another rank: rank 0's segment by its name; errno, or 0 with *base mapped.
int openSegment(const char* name, size_t bytes, void** base) {
  const int fd = shm_open(name, O_RDWR, 0);
  if (fd < 0) return errno;
  *base = mapSegment(fd, bytes);
  const int error = *base == nullptr ? errno : 0;
  close(fd);
  return error;
}

// The same verdict on every rank from every rank's offer.
Status checkOffers(const std::vector<Offer>& offers) {
  std::string zero, differing;
  for (size_t r = 0; r < offers.size(); ++r) {
    if (offers[r].bytes == 0) zero += (zero.empty() ? "" : ", ") + std::to_string(r);
    if (offers[r].bytes != offers[0].bytes) {
      differing += ", rank " + std::to_string(r) + " " + std::to_string(offers[r].bytes);
    }
  }
  if (!zero.empty()) {
    return fail(Status::kInvalidArgument, "zcclSharedMemoryCreate: bytes=0 on rank(s) %s",
                zero.c_str());
  }
  if (!differing.empty()) {
    return fail(Status::kInvalidArgument,
                "zcclSharedMemoryCreate: the ranks asked for different sizes: rank 0 bytes=%llu%s",
                static_cast<unsigned long long>(offers[0].bytes), differing.c_str());
  }
  if (offers[0].madeErrno != 0) {
    return fail(Status::kSystemError,
                "zcclSharedMemoryCreate: rank 0 could not make a segment of %llu bytes in "
                "/dev/shm: %s",
                static_cast<unsigned long long>(offers[0].bytes),
                std::strerror(offers[0].madeErrno));
  }
  return Status::kSuccess;
}

Status checkAnswers(const std::vector<Answer>& answers, const char* name) {
  std::string failed;
  for (size_t r = 0; r < answers.size(); ++r) {
    if (answers[r].openErrno == 0) continue;
    failed += (failed.empty() ? "rank " : ", rank ") + std::to_string(r) + " (" +
              std::strerror(answers[r].openErrno) + ")";
  }
  if (failed.empty()) return Status::kSuccess;
  return fail(Status::kSystemError,
              "zcclSharedMemoryCreate: %s could not map rank 0's segment %s: ranks that the node "
              "map puts on one node must share /dev/shm (ZCCL_HOSTID, ZCCL_RANKS_PER_NODE)",
              failed.c_str(), name);
}

Status createShared(zcclComm* comm, size_t bytes, void** base) {
  if (comm->nodes.numNodes() > 1) {
    return fail(Status::kInvalidUsage,
                "zcclSharedMemoryCreate: comm=%p spans %d nodes; shared memory needs ranks of one "
                "node (zcclCommSplitNode)",
                static_cast<void*>(comm), comm->nodes.numNodes());
  }
  ZCCL_CHECK(drainQueuedWork(comm));
  const int ranks = comm->size();
  const bool creator = comm->rank() == 0;
  Offer mine{};
  mine.bytes = bytes;
  void* mapped = nullptr;
  if (creator && bytes > 0) mine.madeErrno = createSegment(bytes, mine.name, &mapped);
  std::vector<Offer> offers(static_cast<size_t>(ranks));
  Status status = comm->transport->allGatherControl(&mine, sizeof(Offer), offers.data());
  const Offer& made = offers[0];
  if (status == Status::kSuccess) status = checkOffers(offers);
  Answer answer{};
  if (status == Status::kSuccess && !creator) {
    answer.openErrno = openSegment(made.name, bytes, &mapped);
  }
  if (status == Status::kSuccess) {
    std::vector<Answer> answers(static_cast<size_t>(ranks));
    status = comm->transport->allGatherControl(&answer, sizeof(Answer), answers.data());
    if (status == Status::kSuccess) status = checkAnswers(answers, made.name);
  }
  // Its own name: rank 0's entry of the exchange is not there if the exchange failed.
  if (creator && mapped != nullptr) shm_unlink(mine.name);
  if (status != Status::kSuccess) {
    if (mapped != nullptr) munmap(mapped, bytes);
    return status;
  }
  *base = mapped;
  return Status::kSuccess;
}

}  // namespace
}  // namespace zccl

extern "C" {

zcclResult_t zcclSharedMemoryCreate(zcclComm_t comm, size_t bytes, void** base,
                                    zcclSharedMemory_t* shared) {
  return zccl::guardedComm(comm, [&] {
    if (base == nullptr || shared == nullptr) {
      return zccl::fail(Status::kInvalidArgument, "base=%p shared=%p: both outputs are needed",
                        static_cast<void*>(base), static_cast<void*>(shared));
    }
    *base = nullptr;
    *shared = nullptr;
    void* mapped = nullptr;
    ZCCL_CHECK(zccl::createShared(comm, bytes, &mapped));
    *shared = new zcclSharedMemory{mapped, bytes};
    *base = mapped;
    return Status::kSuccess;
  });
}

zcclResult_t zcclSharedMemoryDestroy(zcclSharedMemory_t shared) {
  if (shared == nullptr) return zcclSuccess;
  munmap(shared->base, shared->bytes);
  delete shared;
  return zcclSuccess;
}

}  // extern "C"
