// Code compiled for an instruction set beyond the baseline, inside an ordinary file: functions
// defined between ZCCL_BEGIN_TARGET("avx2") and ZCCL_END_TARGET are compiled for that set (call
// them only where the CPU has it). Unlike a file compiled with other flags, the inline functions
// they use from headers stay baseline code wherever they are not inlined, so the linker cannot
// keep a copy with instructions that some CPU lacks for every caller.
#pragma once

#define ZCCL_PRAGMA(text) _Pragma(#text)
#if defined(__clang__)
#define ZCCL_BEGIN_TARGET(isa) \
  ZCCL_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define ZCCL_END_TARGET ZCCL_PRAGMA(clang attribute pop)
#else
#define ZCCL_BEGIN_TARGET(isa) ZCCL_PRAGMA(GCC push_options) ZCCL_PRAGMA(GCC target(isa))
#define ZCCL_END_TARGET ZCCL_PRAGMA(GCC pop_options)
#endif
