// Typed reads of ZCCL_* environment variables; a malformed value is an error naming it.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace zccl {

std::optional<std::string> envString(const char* name);
// *value is the variable's value, or nullopt when it is unset or empty; a value that is not
// a number in [min, max] fails.
Status envInt(const char* name, long min, long max, std::optional<long>* value);
Status envDouble(const char* name, double min, double max, std::optional<double>* value);

}  // namespace zccl
