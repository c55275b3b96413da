// The logger (log.h).
#include "common/log.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/format.h"

namespace zccl {
namespace {

std::atomic<int> logRank{-1};
// ZCCL_DEBUG's level once read; read again after rereadLogLevel (ncclResetDebugInit).
constexpr int kLevelUnread = -1;
std::atomic<int> cachedLevel{kLevelUnread};

LogLevel parseLevel(const char* text) {
  if (text == nullptr || *text == '\0') return LogLevel::kWarn;  // failures, by default
  std::string value(text);
  for (auto& c : value) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (value == "WARN") return LogLevel::kWarn;
  if (value == "INFO") return LogLevel::kInfo;
  if (value == "TRACE") return LogLevel::kTrace;
  if (value == "NONE" || value == "OFF") return LogLevel::kNone;
  std::fprintf(stderr, "zccl: ignoring ZCCL_DEBUG=%s (expected NONE, WARN, INFO or TRACE)\n", text);
  return LogLevel::kWarn;
}

const char* levelName(LogLevel level) {
  switch (level) {
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kTrace:
      return "TRACE";
    case LogLevel::kNone:
      break;
  }
  return "";
}

}  // namespace

LogLevel logLevel() {
  int level = cachedLevel.load(std::memory_order_relaxed);
  if (level == kLevelUnread) {
    level = static_cast<int>(parseLevel(std::getenv("ZCCL_DEBUG")));
    cachedLevel.store(level, std::memory_order_relaxed);
  }
  return static_cast<LogLevel>(level);
}

void rereadLogLevel() { cachedLevel.store(kLevelUnread, std::memory_order_relaxed); }

void setLogRank(int rank) { logRank.store(rank); }

const std::string& hostName() {
  static const std::string host = [] {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    return std::string(name);
  }();
  return host;
}

void logMessage(LogLevel level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const std::string message = formatList(format, args);
  va_end(args);
  // One fprintf per line so that lines of concurrent ranks do not interleave mid-line.
  std::fprintf(stderr, "%s:%d:%d zccl %s %s\n", hostName().c_str(), static_cast<int>(getpid()),
               logRank.load(), levelName(level), message.c_str());
}

}  // namespace zccl
