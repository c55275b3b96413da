// How every C entry point runs its body: Status (and any C++ exception) becomes a result
// code; on a communicator, the handle is checked to be live, kept alive while the body runs,
// and a failure's message is kept on it for zcclGetLastError.
#pragma once

#include <exception>
#include <new>

#include "core/comm.h"

namespace zccl {

template <typename Body>
Status runBody(Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(Status::kSystemError, "out of memory");
  } catch (const std::exception& error) {
    return fail(Status::kInternalError, "unexpected exception: %s", error.what());
  }
}

// An entry point that needs no communicator.
template <typename Body>
zcclResult_t guarded(Body&& body) {
  clearThreadError();
  return static_cast<zcclResult_t>(runBody(body));
}

// An entry point on `comm`.
template <typename Body>
zcclResult_t guardedComm(zcclComm* comm, Body&& body) {
  clearThreadError();
  if (comm == nullptr)
    return static_cast<zcclResult_t>(fail(Status::kInvalidArgument, "comm=NULL"));
  if (!acquireComm(comm)) {
    return static_cast<zcclResult_t>(
        fail(Status::kInvalidUsage,
             "comm=%p is not a live communicator: it was destroyed or aborted, or never created",
             static_cast<void*>(comm)));
  }
  const Status status = runBody(body);
  if (status != Status::kSuccess) comm->lastError = lastThreadError();
  releaseComm(comm);
  return static_cast<zcclResult_t>(status);
}

}  // namespace zccl
