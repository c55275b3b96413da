// NAME=NUMBER lists (named_numbers.h).
#include "common/named_numbers.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace zccl {
namespace {

// "gpus-per-node, ..., nodes-per-leaf (0: one switch), ...": what the text may name.
std::string fieldNames(const std::vector<NamedNumber>& fields) {
  std::string names;
  for (const NamedNumber& field : fields) {
    if (!names.empty()) names += ", ";
    names += field.name;
    if (field.zeroMeans != nullptr) names += std::string(" (0: ") + field.zeroMeans + ")";
  }
  return names;
}

}  // namespace

Status parseNamedNumbers(const std::string& text, const char* what,
                         const std::vector<NamedNumber>& fields) {
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const size_t equals = item.find('=');
    const std::string name = item.substr(0, equals);
    const NamedNumber* field = nullptr;
    for (const NamedNumber& f : fields) field = name == f.name ? &f : field;
    char* end = nullptr;
    const double value =
        equals == std::string::npos ? 0 : std::strtod(item.c_str() + equals + 1, &end);
    if (field == nullptr || equals == std::string::npos || end == nullptr || *end != '\0' ||
        !(value > 0 || (value == 0 && field->zeroMeans != nullptr))) {
      return fail(Status::kInvalidArgument, "%s: '%s': expected NAME=POSITIVE with NAME one of %s",
                  what, item.c_str(), fieldNames(fields).c_str());
    }
    if (field->count && !(value == std::floor(value) && value <= kMaxCount)) {
      return fail(Status::kInvalidArgument, "%s: '%s': %s counts, a whole number up to %g", what,
                  item.c_str(), field->name, kMaxCount);
    }
    *field->value = value;
  }
  return Status::kSuccess;
}

}  // namespace zccl
