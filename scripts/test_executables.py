#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Prints the build's own files that the commands of the tests labelled LABEL run (their
executables, relative to BUILD), read from the CTestTestfile.cmake files CMake wrote, so that
they can be built before they exist (ctest --show-only omits a command it cannot find yet).

  scripts/test_executables.py BUILD LABEL [EXCLUDED_LABELS_REGEX]
"""
import os
import re
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    build, label = os.path.realpath(sys.argv[1]), sys.argv[2]
    excluded = re.compile(sys.argv[3]) if len(sys.argv) == 4 else None
    add = re.compile(r'^add_test\(\[=\[(.+?)\]=\] (.*)\)$')
    props = re.compile(r'^set_tests_properties\(\[=\[(.+?)\]=\] PROPERTIES .*?LABELS "([^"]*)"')
    commands, labels = {}, {}
    for root, _, files in os.walk(build):
        if "CTestTestfile.cmake" not in files:
            continue
        for line in open(os.path.join(root, "CTestTestfile.cmake")):
            if m := add.match(line.strip()):
                commands[m[1]] = re.findall(r'"((?:[^"\\]|\\.)*)"', m[2])
            elif m := props.match(line.strip()):
                labels[m[1]] = m[2].split(";")
    outputs = set()
    for name, command in commands.items():
        mine = labels.get(name, [])
        if label not in mine or (excluded and any(excluded.fullmatch(l) for l in mine)):
            continue
        for arg in command:
            path = os.path.realpath(arg)
            if path.startswith(build + os.sep) and not os.path.isdir(path):
                outputs.add(os.path.relpath(path, build))
    if not outputs:
        sys.exit(f"test_executables.py: no test in {build} is labelled {label}")
    print("\n".join(sorted(outputs)))


if __name__ == "__main__":
    main()
