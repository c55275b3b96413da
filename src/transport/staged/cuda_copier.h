// The staged transport's copies on a CUDA stream: asynchronous copies, each followed by an
// event that waitCopy waits for; staging memory page-locked (cudaHostAlloc). Built only with
// CUDA (ZCCL_HAVE_CUDA).
#pragma once

#include <memory>

#include "transport/staged/staged_transport.h"

struct CUstream_st;

namespace zccl {

std::unique_ptr<DeviceCopier> makeCudaCopier(CUstream_st* stream);

}  // namespace zccl
