// How every C entry point runs its body: Status (and any C++ exception) becomes a result
// code, and a failure's message is kept on the communicator for zcclGetLastError.
#pragma once

#include <exception>
#include <new>

#include "core/comm.h"

namespace zccl {

template <typename Body>
zcclResult_t guarded(zcclComm* comm, Body&& body) {
  clearThreadError();
  Status status;
  try {
    status = body();
  } catch (const std::bad_alloc&) {
    status = fail(Status::kSystemError, "out of memory");
  } catch (const std::exception& error) {
    status = fail(Status::kInternalError, "unexpected exception: %s", error.what());
  }
  if (status != Status::kSuccess && comm != nullptr) comm->lastError = lastThreadError();
  return static_cast<zcclResult_t>(status);
}

}  // namespace zccl
