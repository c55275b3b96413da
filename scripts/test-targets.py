#!/usr/bin/env python3
"""Prints, as a CMake list, the build targets that the tests ctest selects run, so that a tree
which runs only some of its tests (the sanitizer trees) builds only what they need
(ZCCL_SELECTED_PROGRAMS, target selected_programs): every program of the tree named on a
selected test's command line, launchers included. Targets that a test reaches otherwise must be
dependencies of one named there (add_dependencies). The commands are read from the tree's
CTestTestfile.cmake files: ctest itself shows only those of programs already built.

usage: test-targets.py BUILD_DIR [CTEST_SELECTION...]   e.g. test-targets.py build-asan -L asan
"""
import json
import os
import re
import subprocess
import sys


def selected(build_dir, selection):
    """The names of the tests ctest selects."""
    listing = subprocess.run(["ctest", "--show-only=json-v1", *selection], cwd=build_dir,
                             check=True, capture_output=True, text=True).stdout
    return {test["name"] for test in json.loads(listing)["tests"]}


def commands(build_dir):
    """Every test's command line, by name, as the generated CTestTestfile.cmake files hold it:
    add_test([=[NAME]=] "word" "word" ...)."""
    found = {}
    for folder, _, files in os.walk(build_dir):
        if "CTestTestfile.cmake" not in files:
            continue
        with open(os.path.join(folder, "CTestTestfile.cmake")) as listing:
            for name, words in re.findall(r'^add_test\(\[=\[(.+?)\]=\] (.*)\)$', listing.read(),
                                          re.M):
                found[name] = re.findall(r'"((?:[^"\\]|\\.)*)"', words)
    return found


def targets_of(build_dir):
    """The tree's targets, as `cmake --build --target help` lists them ("... name")."""
    listing = subprocess.run(["cmake", "--build", build_dir, "--target", "help"], check=True,
                             capture_output=True, text=True).stdout
    return set(re.findall(r"^\.\.\. (\S+)", listing, re.M))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build_dir = os.path.realpath(sys.argv[1])
    known = targets_of(build_dir)
    needed = set()
    every = commands(build_dir)
    for name in selected(build_dir, sys.argv[2:]):
        for word in every.get(name, []):
            path = os.path.realpath(word)
            if path.startswith(build_dir + os.sep) and os.path.basename(path) in known:
                needed.add(os.path.basename(path))
    if not needed:
        sys.exit(f"test-targets: no test of {build_dir} selected by {sys.argv[2:]} names a target")
    print(";".join(sorted(needed)))


if __name__ == "__main__":
    main()
