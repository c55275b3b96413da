// ncclGroupStart / ncclGroupEnd. Host calls made inside a group wait for its end; then each
// communicator's sends and receives run as one zccl group (rings in any direction complete)
// and its collectives follow in the order they were made, which every rank shares. Several
// communicators in one group (one thread driving several ranks, ncclCommInitAll) progress on
// a thread each, as their ranks must; so do communicators created inside the group
// (ncclCommInitRank, ncclCommSplit: nccl-tests' -g N), before the group's calls. Device calls
// go to the real NCCL inside its own group.
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "nccl_compat/call.h"

namespace zccl::nccl {
namespace {

thread_local int groupDepth = 0;
thread_local std::vector<Call> deferred;
thread_local bool realGroup = false;
thread_local std::vector<std::function<ncclResult_t()>> deferredInits;

bool succeeded(ncclResult_t result) { return result == ncclSuccess || result == ncclInProgress; }

// What one thread of a group's end came to, and why where it failed.
struct Outcome {
  ncclResult_t result = ncclSuccess;
  std::string error;

  void set(ncclResult_t to) {
    result = to;
    if (!succeeded(to)) error = lastError();
  }
};

// run(i) for every i < count: on this thread for one, else on a thread each, since each may
// wait for the others as the ranks of one job do.
void runEach(size_t count, const std::function<void(size_t)>& run) {
  if (count == 1) {
    run(0);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (size_t i = 0; i < count; ++i) threads.emplace_back(run, i);
  for (std::thread& thread : threads) thread.join();
}

// The first failure (its reason made this thread's last error), else ncclInProgress where
// anything was queued on a non-blocking communicator, else ncclSuccess.
ncclResult_t combined(const std::vector<Outcome>& outcomes) {
  ncclResult_t result = ncclSuccess;
  for (const Outcome& outcome : outcomes) {
    if (!succeeded(outcome.result)) {
      setLastError(outcome.error);
      return outcome.result;
    }
    if (outcome.result == ncclInProgress) result = ncclInProgress;
  }
  return result;
}

struct CommWork {
  ncclComm* comm;
  std::vector<Call> pointToPoint;
  std::vector<Call> collectives;
};

// On a non-blocking communicator each call is queued (ncclInProgress), and so is the group.
ncclResult_t runWork(const CommWork& work) {
  ncclResult_t result = runPointToPointOverZccl(work.pointToPoint.data(), work.pointToPoint.size());
  for (size_t i = 0; i < work.collectives.size() && succeeded(result); ++i) {
    const ncclResult_t call = runOverZccl(work.collectives[i]);
    if (call != ncclSuccess) result = call;
  }
  return result;
}

std::vector<CommWork> sortByComm(const std::vector<Call>& calls) {
  std::vector<CommWork> works;
  for (const Call& call : calls) {
    CommWork* work = nullptr;
    for (CommWork& existing : works) {
      if (existing.comm == call.comm) work = &existing;
    }
    if (work == nullptr) {
      works.push_back(CommWork{call.comm, {}, {}});
      work = &works.back();
    }
    const bool pointToPoint =
        call.operation == Operation::kSend || call.operation == Operation::kRecv;
    (pointToPoint ? work->pointToPoint : work->collectives).push_back(call);
  }
  return works;
}

ncclResult_t runDeferred(const std::vector<Call>& calls) {
  const std::vector<CommWork> works = sortByComm(calls);
  std::vector<Outcome> outcomes(works.size());
  runEach(works.size(), [&](size_t i) { outcomes[i].set(runWork(works[i])); });
  return combined(outcomes);
}

// Each init joins a rendezvous the others of this thread must join too.
ncclResult_t runInits(const std::vector<std::function<ncclResult_t()>>& inits) {
  std::vector<Outcome> outcomes(inits.size());
  runEach(inits.size(), [&](size_t i) { outcomes[i].set(inits[i]()); });
  return combined(outcomes);
}

ncclResult_t closeRealGroup() {
  if (!realGroup) return ncclSuccess;
  realGroup = false;
  std::string error;
  const NcclFunctions* real = realNccl(&error);
  const ncclResult_t result = real->groupEnd();
  if (result != ncclSuccess && result != ncclInProgress) {
    return fail(result, "ncclGroupEnd (the real NCCL's group of device calls) failed: %s",
                real->getLastError(nullptr));
  }
  return result;
}

}  // namespace

bool insideGroup() { return groupDepth > 0; }
bool realGroupOpen() { return realGroup; }
void deferToGroupEnd(const Call& call) { deferred.push_back(call); }
void deferInitToGroupEnd(std::function<ncclResult_t()> init) {
  deferredInits.push_back(std::move(init));
}

ncclResult_t openRealGroupOnce(const char* function) {
  if (realGroup) return ncclSuccess;
  std::string error;
  const NcclFunctions* real = realNccl(&error);
  if (real == nullptr) return fail(ncclInvalidUsage, "%s: %s", function, error.c_str());
  NCCL_CHECK(real->groupStart());
  realGroup = true;
  return ncclSuccess;
}

ncclResult_t groupStart() {
  ++groupDepth;
  return ncclSuccess;
}

ncclResult_t groupEnd() {
  if (groupDepth == 0) {
    return fail(ncclInvalidUsage, "ncclGroupEnd without a matching ncclGroupStart");
  }
  if (--groupDepth > 0) return ncclSuccess;
  std::vector<std::function<ncclResult_t()>> inits;
  inits.swap(deferredInits);
  std::vector<Call> calls;
  calls.swap(deferred);
  if (!inits.empty()) NCCL_CHECK(runInits(inits));
  const ncclResult_t hostResult = runDeferred(calls);
  const ncclResult_t deviceResult = closeRealGroup();
  return hostResult != ncclSuccess ? hostResult : deviceResult;
}

ncclResult_t groupEndWithoutRunning(const char* function) {
  if (groupDepth == 0)
    return fail(ncclInvalidUsage, "%s without a matching ncclGroupStart", function);
  if (--groupDepth > 0) return ncclSuccess;
  deferred.clear();
  std::vector<std::function<ncclResult_t()>> inits;
  inits.swap(deferredInits);
  if (!inits.empty()) NCCL_CHECK(runInits(inits));  // the communicators are made all the same
  return closeRealGroup();
}

}  // namespace zccl::nccl
