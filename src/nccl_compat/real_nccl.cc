#include "nccl_compat/real_nccl.h"

#include <string>

#include "common/nccl_library.h"

namespace zccl::nccl {
namespace {

struct Loaded {
  RealNccl functions{};
  bool ok = false;
  std::string error;
};

std::string bindAll(void* library, RealNccl* f) {
  std::string missing;
  bindNcclSymbol(library, "ncclGetVersion", &f->getVersion, &missing);
  bindNcclSymbol(library, "ncclGetUniqueId", &f->getUniqueId, &missing);
  bindNcclSymbol(library, "ncclCommInitRankConfig", &f->commInitRankConfig, &missing);
  bindNcclSymbol(library, "ncclCommFinalize", &f->commFinalize, &missing);
  bindNcclSymbol(library, "ncclCommDestroy", &f->commDestroy, &missing);
  bindNcclSymbol(library, "ncclCommAbort", &f->commAbort, &missing);
  bindNcclSymbol(library, "ncclCommGetAsyncError", &f->commGetAsyncError, &missing);
  bindNcclSymbol(library, "ncclGetLastError", &f->getLastError, &missing);
  bindNcclSymbol(library, "ncclCommRegister", &f->commRegister, &missing);
  bindNcclSymbol(library, "ncclCommDeregister", &f->commDeregister, &missing);
  bindNcclSymbol(library, "ncclMemAlloc", &f->memAlloc, &missing);
  bindNcclSymbol(library, "ncclMemFree", &f->memFree, &missing);
  bindNcclSymbol(library, "ncclRedOpCreatePreMulSum", &f->redOpCreatePreMulSum, &missing);
  bindNcclSymbol(library, "ncclRedOpDestroy", &f->redOpDestroy, &missing);
  bindNcclSymbol(library, "ncclAllReduce", &f->allReduce, &missing);
  bindNcclSymbol(library, "ncclReduceScatter", &f->reduceScatter, &missing);
  bindNcclSymbol(library, "ncclAllGather", &f->allGather, &missing);
  bindNcclSymbol(library, "ncclBroadcast", &f->broadcast, &missing);
  bindNcclSymbol(library, "ncclReduce", &f->reduce, &missing);
  bindNcclSymbol(library, "ncclAlltoAll", &f->allToAll, &missing);
  bindNcclSymbol(library, "ncclGather", &f->gather, &missing);
  bindNcclSymbol(library, "ncclScatter", &f->scatter, &missing);
  bindNcclSymbol(library, "ncclSend", &f->send, &missing);
  bindNcclSymbol(library, "ncclRecv", &f->recv, &missing);
  bindNcclSymbol(library, "ncclGroupStart", &f->groupStart, &missing);
  bindNcclSymbol(library, "ncclGroupEnd", &f->groupEnd, &missing);
  return missing;
}

Loaded load() {
  Loaded loaded;
  const NcclLibrary library = openNcclLibrary(/*afterThisLibrary=*/true, "ncclAllReduce");
  if (library.handle == nullptr) {
    loaded.error = library.error;
    return loaded;
  }
  const std::string missing = bindAll(library.handle, &loaded.functions);
  if (!missing.empty()) {
    loaded.error = library.name + " lacks " + missing;
    return loaded;
  }
  loaded.ok = true;
  return loaded;
}

}  // namespace

const RealNccl* realNccl(std::string* error) {
  static const Loaded loaded = load();
  if (!loaded.ok) {
    *error = "device buffers go to the real NCCL, which could not be loaded: " + loaded.error;
    return nullptr;
  }
  return &loaded.functions;
}

}  // namespace zccl::nccl
