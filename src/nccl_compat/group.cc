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

struct CommWork {
  ncclComm* comm;
  std::vector<Call> pointToPoint;
  std::vector<Call> collectives;
  ncclResult_t result = ncclSuccess;
  std::string error;
};

bool succeeded(ncclResult_t result) { return result == ncclSuccess || result == ncclInProgress; }

// On a non-blocking communicator each call is queued (ncclInProgress), and so is the group.
void runWork(CommWork* work) {
  work->result = runPointToPointOverZccl(work->pointToPoint.data(), work->pointToPoint.size());
  for (size_t i = 0; i < work->collectives.size() && succeeded(work->result); ++i) {
    const ncclResult_t result = runOverZccl(work->collectives[i]);
    if (result != ncclSuccess) work->result = result;
  }
  if (!succeeded(work->result)) work->error = lastError();
}

std::vector<CommWork> sortByComm(const std::vector<Call>& calls) {
  std::vector<CommWork> works;
  for (const Call& call : calls) {
    CommWork* work = nullptr;
    for (CommWork& existing : works) {
      if (existing.comm == call.comm) work = &existing;
    }
    if (work == nullptr) {
      works.push_back(CommWork{call.comm, {}, {}, ncclSuccess, {}});
      work = &works.back();
    }
    const bool pointToPoint =
        call.operation == Operation::kSend || call.operation == Operation::kRecv;
    (pointToPoint ? work->pointToPoint : work->collectives).push_back(call);
  }
  return works;
}

ncclResult_t runDeferred(const std::vector<Call>& calls) {
  std::vector<CommWork> works = sortByComm(calls);
  if (works.size() == 1) {
    runWork(&works[0]);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(works.size());
    for (CommWork& work : works) threads.emplace_back(runWork, &work);
    for (std::thread& thread : threads) thread.join();
  }
  ncclResult_t result = ncclSuccess;
  for (const CommWork& work : works) {
    if (!succeeded(work.result)) {
      setLastError(work.error);
      return work.result;
    }
    if (work.result == ncclInProgress) result = ncclInProgress;
  }
  return result;
}

// Each init joins a rendezvous the others of this thread must join too: a thread each.
ncclResult_t runInits(const std::vector<std::function<ncclResult_t()>>& inits) {
  std::vector<ncclResult_t> results(inits.size(), ncclSuccess);
  std::vector<std::string> errors(inits.size());
  auto run = [&](size_t i) {
    results[i] = inits[i]();
    if (results[i] != ncclSuccess) errors[i] = lastError();
  };
  if (inits.size() == 1) {
    run(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(inits.size());
    for (size_t i = 0; i < inits.size(); ++i) threads.emplace_back(run, i);
    for (std::thread& thread : threads) thread.join();
  }
  for (size_t i = 0; i < inits.size(); ++i) {
    if (results[i] != ncclSuccess) {
      setLastError(errors[i]);
      return results[i];
    }
  }
  return ncclSuccess;
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
