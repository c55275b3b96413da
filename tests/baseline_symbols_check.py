#!/usr/bin/env python3
"""Functions other files can reach hold baseline x86-64 instructions only.

zccl compiles its AVX2 and AVX-512 loops inside ZCCL_BEGIN_TARGET regions (common/target.h),
in anonymous namespaces, and reaches them through tables chosen from cpuid. Two things would
break that: a weak copy of an inline function or template, emitted by a file compiled for AVX,
that the linker keeps for every caller; and a global function compiled for AVX that a caller
runs before any cpuid check (the tables' getters). Either way a CPU without AVX would stop on
an illegal instruction. Every object file, or archive, given is disassembled; each global or
weak function that uses an AVX instruction (its mnemonic starts with v: VEX and EVEX
encodings) is named, and the check fails.

usage: baseline_symbols_check.py OBJECT_OR_ARCHIVE...
"""
import re
import subprocess
import sys

# nm's types for functions other files can reach: text, weak, unique (GNU).
SHARED_TYPES = {"T", "W", "u", "i"}
FUNCTION_START = re.compile(r"^[0-9a-f]+ <(.+)>:$")
INSTRUCTION = re.compile(r"^\s*[0-9a-f]+:\t(\S+)")


def shared_functions(path):
    out = subprocess.run(["nm", "--defined-only", path], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in SHARED_TYPES:
            names.add(parts[2])
    return names


def avx_functions(path):
    """The functions of `path` with an AVX instruction, by mangled name: the first such."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], check=True,
                         capture_output=True, text=True).stdout
    found, current = {}, None
    for line in out.splitlines():
        start = FUNCTION_START.match(line)
        if start:
            current = start.group(1)
            continue
        instruction = INSTRUCTION.match(line)
        if current and instruction and instruction.group(1).startswith("v"):
            found.setdefault(current, instruction.group(1))
    return found


def main(paths):
    if not paths:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    bad = []
    for path in paths:
        shared = shared_functions(path)
        for name, mnemonic in sorted(avx_functions(path).items()):
            if name in shared:
                bad.append(f"{path}: {name} ({mnemonic})")
    for line in bad:
        print("AVX in a function the linker may share:", line)
    print(f"{len(paths)} files, {len(bad)} shared functions with AVX instructions")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
