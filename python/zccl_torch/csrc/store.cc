// zccl's rendezvous through a c10d store (store.h).
#include "store.h"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace zccl_torch {
namespace {

c10d::Store* storeFrom(void* context) { return static_cast<c10d::Store*>(context); }

zcclResult_t setValue(void* context, const char* key, const void* value, size_t bytes) {
  try {
    const auto* begin = static_cast<const uint8_t*>(value);
    storeFrom(context)->set(key, std::vector<uint8_t>(begin, begin + bytes));
    return zcclSuccess;
  } catch (const std::exception&) {
    return zcclSystemError;
  }
}

zcclResult_t getValue(void* context, const char* key, void* value, size_t* bytes) {
  try {
    const std::vector<uint8_t> stored = storeFrom(context)->get(key);
    const size_t capacity = *bytes;
    *bytes = stored.size();
    if (stored.size() > capacity) return zcclInvalidUsage;
    if (!stored.empty()) std::memcpy(value, stored.data(), stored.size());
    return zcclSuccess;
  } catch (const std::exception&) {
    return zcclSystemError;
  }
}

zcclResult_t waitKeys(void* context, const char* const* keys, int count, double timeoutSeconds) {
  std::vector<std::string> names(keys, keys + count);
  try {
    if (timeoutSeconds > 0) {
      storeFrom(context)->wait(
          names, std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000.0)));
    } else {
      storeFrom(context)->wait(names);
    }
    return zcclSuccess;
  } catch (const c10::DistStoreError&) {
    return zcclTimeout;
  } catch (const std::exception&) {
    return zcclTimeout;
  }
}

}  // namespace

zcclStore storeOf(c10d::Store* store) {
  zcclStore bridge{};
  bridge.context = store;
  bridge.set = setValue;
  bridge.get = getValue;
  bridge.wait = waitKeys;
  return bridge;
}

}  // namespace zccl_torch
