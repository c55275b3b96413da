// Reading an ncclConfig_t of any NCCL version's layout (nccl_config.h).
#include "nccl_compat/nccl_config.h"

#include <cstdio>
#include <cstring>

namespace zccl::nccl {
namespace {

// The size of NCCL 2.28's struct is the most we read; a larger struct is a newer NCCL's.
constexpr size_t kKnownBytes = sizeof(ncclConfig_v22800);
constexpr size_t kSmallestConfig = offsetof(ncclConfig_v22800, blocking) + sizeof(int);
// NCCL adds a few ints a release; a size beyond this is not a config struct's.
constexpr size_t kLargestConfig = 4096;

// True when `field` (offset, width) lies inside what the caller's size covers.
template <typename Field>
bool covers(size_t size, size_t offset) {
  return offset + sizeof(Field) <= size;
}

std::string readName(const char* name) {
  if (name == nullptr) return {};
  // Bounded: a name is for log lines, and a corrupt pointer to an unterminated buffer must
  // not take the reader further than this.
  return std::string(name, strnlen(name, 256));
}

}  // namespace

ncclResult_t readConfig(const void* config, CommSettings* settings, std::string* error) {
  *settings = CommSettings{};
  if (config == nullptr) return ncclSuccess;
  // The size first: it says how much of the struct may be read at all.
  size_t size = 0;
  std::memcpy(&size, config, sizeof(size));
  char text[256];
  if (size < kSmallestConfig || size > kLargestConfig) {
    std::snprintf(text, sizeof(text),
                  "config->size=%zu is not the size of an NCCL ncclConfig_t (%zu to %zu bytes): "
                  "initialise the struct with NCCL_CONFIG_INITIALIZER",
                  size, kSmallestConfig, kLargestConfig);
    *error = text;
    return ncclInvalidArgument;
  }
  ncclConfigHeader header;
  std::memcpy(&header, config, sizeof(header));
  if (header.magic != kConfigMagic) {
    std::snprintf(text, sizeof(text),
                  "config->magic=0x%x is not NCCL's 0x%x: initialise the struct with "
                  "NCCL_CONFIG_INITIALIZER",
                  header.magic, kConfigMagic);
    *error = text;
    return ncclInvalidArgument;
  }
  ncclConfig_v22800 known;
  std::memset(&known, 0, sizeof(known));
  const size_t readable = header.size < kKnownBytes ? header.size : kKnownBytes;
  std::memcpy(&known, config, readable);
  if (known.blocking != kConfigUndefInt && known.blocking != 0 && known.blocking != 1) {
    std::snprintf(text, sizeof(text), "config->blocking=%d: expected 0 or 1", known.blocking);
    *error = text;
    return ncclInvalidArgument;
  }
  settings->blocking = known.blocking != 0;
  if (covers<const char*>(header.size, offsetof(ncclConfig_v22800, commName))) {
    settings->name = readName(known.commName);
  }
  const auto* bytes = static_cast<const unsigned char*>(config);
  settings->rawConfig.assign(bytes, bytes + header.size);
  return ncclSuccess;
}

}  // namespace zccl::nccl
