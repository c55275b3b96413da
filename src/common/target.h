// Code compiled for an instruction set beyond the baseline, inside an ordinary file: functions
// defined between ZCCL_BEGIN_TARGET("avx2") and ZCCL_END_TARGET are compiled for that set (call
// them only where the CPU has it). Unlike a file compiled with other flags, the inline functions
// they use from headers stay baseline code wherever they are not inlined, so the linker cannot
// keep a copy with instructions that some CPU lacks for every caller.
#pragma once

#include <initializer_list>

#define ZCCL_PRAGMA(text) _Pragma(#text)
#if defined(__clang__)
#define ZCCL_BEGIN_TARGET(isa) \
  ZCCL_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define ZCCL_END_TARGET ZCCL_PRAGMA(clang attribute pop)
#else
#define ZCCL_BEGIN_TARGET(isa) ZCCL_PRAGMA(GCC push_options) ZCCL_PRAGMA(GCC target(isa))
#define ZCCL_END_TARGET ZCCL_PRAGMA(GCC pop_options)
#endif

namespace zccl {

// Whether this CPU runs code compiled for AVX2, or for AVX-512 F, BW and VL.
inline bool cpuHasAvx2() { return __builtin_cpu_supports("avx2"); }
inline bool cpuHasAvx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

// The first of `sets` (each null where the CPU lacks its instruction set), else `baseline`.
template <typename Set>
const Set& firstSupported(std::initializer_list<const Set*> sets, const Set& baseline) {
  for (const Set* set : sets) {
    if (set != nullptr) return *set;
  }
  return baseline;
}

}  // namespace zccl
