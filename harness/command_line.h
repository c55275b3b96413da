// The numbers every program of this repository reads from its command line: whole, in range,
// or refused by name ("zero_demo: --steps abc: a whole number from 1 to 2147483647"). atoi's
// "abc" -> 0 and "2x" -> 2 pass junk on silently.
#pragma once

#include <getopt.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

namespace zccl_harness {

// Option `letter` as a user writes it: its long name where it has one.
inline std::string optionName(const option* options, int letter) {
  for (const option* o = options; o->name != nullptr; ++o) {
    if (o->val == letter) return std::string("--") + o->name;
  }
  return std::string("-") + static_cast<char>(letter);
}

// Says on stderr what was wrong with `flag`'s `text`; false, for the caller to return.
inline bool refuseArgument(const char* program, const std::string& flag, const char* text,
                           const std::string& expected) {
  std::fprintf(stderr, "%s: %s %s: %s\n", program, flag.c_str(), text, expected.c_str());
  return false;
}

// `text`, all of it, as an integer from `least` to `most`.
template <typename Integer>
bool parseInteger(const char* text, Integer least, Integer most, Integer* value) {
  static_assert(std::is_integral_v<Integer>);
  if (std::isspace(static_cast<unsigned char>(*text)) != 0) return false;
  char* end = nullptr;
  errno = 0;
  Integer number = 0;
  if constexpr (std::is_signed_v<Integer>) {
    const long long parsed = std::strtoll(text, &end, 10);
    if (parsed < std::numeric_limits<Integer>::min() ||
        parsed > std::numeric_limits<Integer>::max()) {
      return false;
    }
    number = static_cast<Integer>(parsed);
  } else {
    if (*text == '-') return false;  // strtoull would wrap it around
    const unsigned long long parsed = std::strtoull(text, &end, 10);
    if (parsed > std::numeric_limits<Integer>::max()) return false;
    number = static_cast<Integer>(parsed);
  }
  if (end == text || *end != '\0' || errno == ERANGE || number < least || number > most) {
    return false;
  }
  *value = number;
  return true;
}

// The expectation parseInteger refused, in words.
template <typename Integer>
std::string wholeNumberFrom(Integer least, Integer most = std::numeric_limits<Integer>::max()) {
  return "a whole number from " + std::to_string(least) + " to " + std::to_string(most);
}

// parseInteger, or false after refuseArgument says what `flag` takes.
template <typename Integer>
bool integerArgument(const char* program, const std::string& flag, const char* text, Integer least,
                     Integer most, Integer* value) {
  return parseInteger(text, least, most, value) ||
         refuseArgument(program, flag, text, wholeNumberFrom(least, most));
}

// `text`, all of it, as a finite real number from `least` to `most`.
inline bool parseReal(const char* text, double least, double most, double* value) {
  char* end = nullptr;
  const double number = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(number)) return false;
  if (!(number >= least && number <= most)) return false;
  *value = number;
  return true;
}

// The expectation parseReal refused, in words.
inline std::string numberFrom(double least, double most) {
  char text[96];
  std::snprintf(text, sizeof(text), "a number from %g to %g", least, most);
  return text;
}

// A byte count: a number, not negative, with an optional K, M or G (powers of 1024).
inline bool parseSize(const char* text, size_t* value) {
  char* end = nullptr;
  double number = std::strtod(text, &end);
  if (end == text || !(number >= 0)) return false;
  if (*end != '\0') {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(*end)));
    const double scale = unit == 'K'   ? 1024.0
                         : unit == 'M' ? 1048576.0
                         : unit == 'G' ? 1073741824.0
                                       : 0;
    if (scale == 0 || end[1] != '\0') return false;
    number *= scale;
  }
  if (!(number < 1.8e19)) return false;
  *value = static_cast<size_t>(number);
  return true;
}

}  // namespace zccl_harness
