// Finding the real NCCL at run time (dlopen), for the NCCL drop-in's device buffers and the
// NCCL transport: ZCCL_NCCL_LIB when set, else (for the drop-in, preloaded in front of NCCL)
// the NCCL after the calling library in the lookup order, else libnccl.so.2; never zccl's own
// drop-in, which the build tree names libnccl.so.2 too.
#pragma once

#include <string>

namespace zccl::nccl {

struct NcclLibrary {
  void* handle = nullptr;  // a dlopen handle or RTLD_NEXT; nullptr when none was found
  std::string name;        // what it is, for messages
  std::string error;       // why none was found
};

// `afterThisLibrary`: try RTLD_NEXT (relative to the object that compiled this file) before
// libnccl.so.2. `probe` names one function NCCL has: a library without it is not NCCL.
NcclLibrary openNcclLibrary(bool afterThisLibrary, const char* probe);

}  // namespace zccl::nccl
