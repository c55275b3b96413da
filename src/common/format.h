// printf-style formatting into a std::string of the exact length, for the functions that
// take a format and its arguments (errors, log lines, reports).
#pragma once

#include <cstdarg>
#include <string>

namespace zccl {

// `args` is consumed (va_end stays with the caller that started it).
std::string formatList(const char* format, va_list args) __attribute__((format(printf, 1, 0)));

}  // namespace zccl
