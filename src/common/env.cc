// Typed reads of the environment (env.h).
#include "common/env.h"

#include <cerrno>
#include <cstdlib>

namespace zccl {

std::optional<std::string> envString(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::string(text);
}

Status envInt(const char* name, long min, long max, std::optional<long>* value) {
  value->reset();
  const auto text = envString(name);
  if (!text) return Status::kSuccess;
  char* end = nullptr;
  errno = 0;
  const long parsed = std::strtol(text->c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || parsed < min || parsed > max) {
    return fail(Status::kInvalidArgument, "%s=%s: expected an integer in [%ld, %ld]", name,
                text->c_str(), min, max);
  }
  *value = parsed;
  return Status::kSuccess;
}

Status envDouble(const char* name, double min, double max, std::optional<double>* value) {
  value->reset();
  const auto text = envString(name);
  if (!text) return Status::kSuccess;
  char* end = nullptr;
  errno = 0;
  const double parsed = std::strtod(text->c_str(), &end);
  if (errno != 0 || *end != '\0' || !(parsed >= min && parsed <= max)) {
    return fail(Status::kInvalidArgument, "%s=%s: expected a number in [%g, %g]", name,
                text->c_str(), min, max);
  }
  *value = parsed;
  return Status::kSuccess;
}

}  // namespace zccl
