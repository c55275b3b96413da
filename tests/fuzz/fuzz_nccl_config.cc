// libFuzzer: the ncclConfig_t an NCCL program hands the drop-in, of any NCCL version's layout
// (its size field says how long it is): any size, magic, version and field values. Only the
// pointer fields are fixed (a pointer's target is the program's to keep valid); the reader
// must accept or refuse with a message, and never read past the size it was given.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "nccl_compat/nccl_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using zccl::nccl::ncclConfig_v22800;
  // The struct is exactly the input's bytes (padded to hold the header), so that ASan sees
  // any read past what the size field claims.
  std::vector<uint8_t> bytes(data, data + size);
  if (bytes.size() < sizeof(zccl::nccl::ncclConfigHeader)) {
    bytes.resize(sizeof(zccl::nccl::ncclConfigHeader));
  }
  size_t claimed;
  std::memcpy(&claimed, bytes.data(), sizeof(claimed));
  if (claimed > bytes.size()) {
    claimed = bytes.size();
    std::memcpy(bytes.data(), &claimed, sizeof(claimed));
  }
  static const char kName[] = "fuzzed";
  const char* name = (size % 2) != 0 ? kName : nullptr;
  for (size_t offset :
       {offsetof(ncclConfig_v22800, netName), offsetof(ncclConfig_v22800, commName)}) {
    if (offset + sizeof(name) <= bytes.size())
      std::memcpy(bytes.data() + offset, &name, sizeof(name));
  }
  // A struct holds at least its size field, whatever that says.
  const size_t length = claimed < sizeof(size_t) ? sizeof(size_t) : claimed;
  std::vector<uint8_t> exact(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(length));
  zccl::nccl::CommSettings settings;
  std::string error;
  const auto result = zccl::nccl::readConfig(exact.data(), &settings, &error);
  if (result != zccl::nccl::ncclSuccess && error.empty()) __builtin_trap();  // unexplained
  return 0;
}
