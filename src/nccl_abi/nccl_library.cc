// Finding the real NCCL (nccl_library.h).
#include "nccl_abi/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace zccl::nccl {
namespace {

// True when `symbol` lives in a zccl drop-in (one symbol NCCL has not is there).
bool isZcclDropIn(void* symbol) {
  Dl_info info;
  if (symbol == nullptr || dladdr(symbol, &info) == 0 || info.dli_fname == nullptr) return false;
  void* object = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (object == nullptr) return false;
  const bool dropIn = dlsym(object, "zcclNcclGetComm") != nullptr;
  dlclose(object);
  return dropIn;
}

// `handle` if it is NCCL: it has `probe`, and it is not a zccl drop-in.
bool accept(void* handle, const std::string& name, const char* probe, NcclLibrary* library) {
  void* symbol = dlsym(handle, probe);
  if (symbol == nullptr) {
    library->error = name + " has no " + probe + ": not NCCL";
    return false;
  }
  if (isZcclDropIn(symbol)) {
    library->error = name + " is zccl's NCCL drop-in itself, not NCCL";
    return false;
  }
  library->handle = handle;
  library->name = name;
  library->error.clear();
  return true;
}

}  // namespace

NcclLibrary openNcclLibrary(bool afterThisLibrary, const char* probe) {
  NcclLibrary library;
  if (const char* path = std::getenv("ZCCL_NCCL_LIB"); path != nullptr && *path != '\0') {
    const std::string name = std::string("ZCCL_NCCL_LIB=") + path;
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      library.error = name + ": " + dlerror();
    } else if (!accept(handle, name, probe, &library)) {
      dlclose(handle);
    }
    return library;
  }
  if (afterThisLibrary && dlsym(RTLD_NEXT, probe) != nullptr &&
      accept(RTLD_NEXT, "the NCCL after this library in the lookup order", probe, &library)) {
    return library;
  }
  void* handle = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    library.error = std::string("libnccl.so.2: ") + dlerror();
  } else if (!accept(handle, "libnccl.so.2", probe, &library)) {
    dlclose(handle);
  }
  if (library.handle == nullptr) {
    library.error += "; set ZCCL_NCCL_LIB to the path of the real libnccl.so.2";
  }
  return library;
}

}  // namespace zccl::nccl
