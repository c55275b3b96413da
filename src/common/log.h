// Logging to stderr, filtered by ZCCL_DEBUG=NONE|WARN|INFO|TRACE (default WARN: failures),
// prefixed host:pid:rank.
#pragma once

#include <string>

namespace zccl {

enum class LogLevel : int { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// The level from ZCCL_DEBUG, read once, and again after rereadLogLevel().
LogLevel logLevel();
void rereadLogLevel();
inline bool logEnabled(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(logLevel());
}

// The rank shown in the prefix; -1 until a communicator knows it.
void setLogRank(int rank);

// This machine's name (gethostname), as the prefix shows it; read once.
const std::string& hostName();

void logMessage(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace zccl

#define ZCCL_LOG(level, ...)                                    \
  do {                                                          \
    if (::zccl::logEnabled(::zccl::LogLevel::level)) {          \
      ::zccl::logMessage(::zccl::LogLevel::level, __VA_ARGS__); \
    }                                                           \
  } while (0)
