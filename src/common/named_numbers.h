// Lists of NAME=NUMBER items separated by commas ("nodes-per-leaf=4,oversubscription=2"), as
// zccl-sim's --machine and ZCCL_FABRIC take them.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace zccl {

struct NamedNumber {
  const char* name;
  double* value;
  const char* zeroMeans = nullptr;  // what 0 asks for; null: the value must be positive
  bool count = false;               // a whole number up to kMaxCount
};

inline constexpr double kMaxCount = 1e6;

// Sets the field each item names; items left out keep their values. An unknown name, an item
// without a number, a value below 0 (or 0 where the field has no meaning for it), or a count
// that is not a whole number up to kMaxCount fails with an error naming `what`, the item and
// every name allowed.
Status parseNamedNumbers(const std::string& text, const char* what,
                         const std::vector<NamedNumber>& fields);

}  // namespace zccl
