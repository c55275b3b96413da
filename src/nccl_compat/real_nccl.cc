#include "nccl_compat/real_nccl.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace zccl::nccl {
namespace {

struct Loaded {
  RealNccl functions{};
  bool ok = false;
  std::string error;
};

// True when symbol lives in a zccl drop-in (this library or another copy of it): the one
// symbol NCCL has not, zcclNcclGetComm, is there.
bool isZcclDropIn(void* symbol) {
  Dl_info info;
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return false;
  void* object = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (object == nullptr) return false;
  const bool dropIn = dlsym(object, "zcclNcclGetComm") != nullptr;
  dlclose(object);
  return dropIn;
}

template <typename Function>
bool bind(void* library, const char* name, Function* function, std::string* missing) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  if (*function == nullptr) *missing += std::string(missing->empty() ? "" : ", ") + name;
  return *function != nullptr;
}

std::string bindAll(void* library, RealNccl* f) {
  std::string missing;
  bind(library, "ncclGetVersion", &f->getVersion, &missing);
  bind(library, "ncclGetUniqueId", &f->getUniqueId, &missing);
  bind(library, "ncclCommInitRankConfig", &f->commInitRankConfig, &missing);
  bind(library, "ncclCommFinalize", &f->commFinalize, &missing);
  bind(library, "ncclCommDestroy", &f->commDestroy, &missing);
  bind(library, "ncclCommAbort", &f->commAbort, &missing);
  bind(library, "ncclCommGetAsyncError", &f->commGetAsyncError, &missing);
  bind(library, "ncclGetLastError", &f->getLastError, &missing);
  bind(library, "ncclCommRegister", &f->commRegister, &missing);
  bind(library, "ncclCommDeregister", &f->commDeregister, &missing);
  bind(library, "ncclMemAlloc", &f->memAlloc, &missing);
  bind(library, "ncclMemFree", &f->memFree, &missing);
  bind(library, "ncclRedOpCreatePreMulSum", &f->redOpCreatePreMulSum, &missing);
  bind(library, "ncclRedOpDestroy", &f->redOpDestroy, &missing);
  bind(library, "ncclAllReduce", &f->allReduce, &missing);
  bind(library, "ncclReduceScatter", &f->reduceScatter, &missing);
  bind(library, "ncclAllGather", &f->allGather, &missing);
  bind(library, "ncclBroadcast", &f->broadcast, &missing);
  bind(library, "ncclReduce", &f->reduce, &missing);
  bind(library, "ncclAlltoAll", &f->allToAll, &missing);
  bind(library, "ncclGather", &f->gather, &missing);
  bind(library, "ncclScatter", &f->scatter, &missing);
  bind(library, "ncclSend", &f->send, &missing);
  bind(library, "ncclRecv", &f->recv, &missing);
  bind(library, "ncclGroupStart", &f->groupStart, &missing);
  bind(library, "ncclGroupEnd", &f->groupEnd, &missing);
  return missing;
}

// library: a dlopen handle or RTLD_NEXT; name: what it is, for messages.
bool tryLibrary(void* library, const std::string& name, Loaded* loaded) {
  const std::string missing = bindAll(library, &loaded->functions);
  if (!missing.empty()) {
    loaded->error = name + " lacks " + missing;
    return false;
  }
  if (isZcclDropIn(reinterpret_cast<void*>(loaded->functions.allReduce))) {
    loaded->error = name + " is zccl's NCCL drop-in itself, not NCCL";
    return false;
  }
  loaded->ok = true;
  return true;
}

Loaded load() {
  Loaded loaded;
  if (const char* path = std::getenv("ZCCL_NCCL_LIB"); path != nullptr && *path != '\0') {
    void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      loaded.error = std::string("ZCCL_NCCL_LIB=") + path + ": " + dlerror();
    } else {
      tryLibrary(library, std::string("ZCCL_NCCL_LIB=") + path, &loaded);
    }
    return loaded;
  }
  // Preloaded in front of the real NCCL: it is next in the lookup order.
  if (dlsym(RTLD_NEXT, "ncclAllReduce") != nullptr &&
      tryLibrary(RTLD_NEXT, "the NCCL after this library in the lookup order", &loaded)) {
    return loaded;
  }
  void* library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    loaded.error = std::string("libnccl.so.2: ") + dlerror();
  } else {
    tryLibrary(library, "libnccl.so.2", &loaded);
  }
  loaded.error += "; set ZCCL_NCCL_LIB to the path of the real libnccl.so.2";
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
