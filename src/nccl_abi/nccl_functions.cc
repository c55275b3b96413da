// Binding the real NCCL's functions (nccl_functions.h).
#include "nccl_abi/nccl_functions.h"

#include <dlfcn.h>

#include "nccl_abi/nccl_library.h"

namespace zccl::nccl {
namespace {

struct Loaded {
  NcclFunctions functions{};
  std::string error;  // empty once loaded
};

// Binds `name` into *function; appends it to *missing when the library lacks it.
template <typename Function>
void bind(void* library, const char* name, Function* function, std::string* missing) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  if (*function == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
}

// What every user needs, and (`newer`) what only the drop-in does.
void bindAll(void* library, NcclFunctions* f, std::string* missing, std::string* newer) {
  bind(library, "ncclGetErrorString", &f->getErrorString, missing);
  bind(library, "ncclGetUniqueId", &f->getUniqueId, missing);
  bind(library, "ncclCommInitRank", &f->commInitRank, missing);
  bind(library, "ncclCommDestroy", &f->commDestroy, missing);
  bind(library, "ncclCommAbort", &f->commAbort, missing);
  bind(library, "ncclCommGetAsyncError", &f->commGetAsyncError, missing);
  bind(library, "ncclAllReduce", &f->allReduce, missing);
  bind(library, "ncclReduceScatter", &f->reduceScatter, missing);
  bind(library, "ncclAllGather", &f->allGather, missing);
  bind(library, "ncclBroadcast", &f->broadcast, missing);
  bind(library, "ncclReduce", &f->reduce, missing);
  bind(library, "ncclSend", &f->send, missing);
  bind(library, "ncclRecv", &f->recv, missing);
  bind(library, "ncclGroupStart", &f->groupStart, missing);
  bind(library, "ncclGroupEnd", &f->groupEnd, missing);
  bind(library, "ncclGetVersion", &f->getVersion, newer);
  bind(library, "ncclCommInitRankConfig", &f->commInitRankConfig, newer);
  bind(library, "ncclCommFinalize", &f->commFinalize, newer);
  bind(library, "ncclGetLastError", &f->getLastError, newer);
  bind(library, "ncclCommRegister", &f->commRegister, newer);
  bind(library, "ncclCommDeregister", &f->commDeregister, newer);
  bind(library, "ncclMemAlloc", &f->memAlloc, newer);
  bind(library, "ncclMemFree", &f->memFree, newer);
  bind(library, "ncclRedOpCreatePreMulSum", &f->redOpCreatePreMulSum, newer);
  bind(library, "ncclRedOpDestroy", &f->redOpDestroy, newer);
  bind(library, "ncclAlltoAll", &f->allToAll, newer);
  bind(library, "ncclGather", &f->gather, newer);
  bind(library, "ncclScatter", &f->scatter, newer);
}

Loaded load(NcclUser user) {
  Loaded loaded;
  const NcclLibrary library =
      openNcclLibrary(/*afterThisLibrary=*/user == NcclUser::kDropIn, "ncclAllReduce");
  if (library.handle == nullptr) {
    loaded.error = library.error;
    return loaded;
  }
  std::string missing;
  std::string newer;
  bindAll(library.handle, &loaded.functions, &missing, &newer);
  if (user == NcclUser::kDropIn && !newer.empty()) {
    missing += (missing.empty() ? "" : ", ") + newer;
  }
  if (!missing.empty()) loaded.error = library.name + " lacks " + missing;
  return loaded;
}

}  // namespace

const NcclFunctions* loadNcclFunctions(NcclUser user, std::string* error) {
  static const Loaded forTransport = load(NcclUser::kTransport);
  static const Loaded forDropIn = load(NcclUser::kDropIn);
  const Loaded& loaded = user == NcclUser::kDropIn ? forDropIn : forTransport;
  if (!loaded.error.empty()) {
    *error = loaded.error;
    return nullptr;
  }
  return &loaded.functions;
}

}  // namespace zccl::nccl
