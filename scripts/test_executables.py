#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""Prints the build's own files that the commands of the tests with a label matching LABEL (a
regular expression, as ctest -L takes it, but matching a whole label) run (their executables,
relative to BUILD), read from the CTestTestfile.cmake files CMake wrote, so that they can be
built before they exist (ctest --show-only omits a command it cannot find yet).

  scripts/test_executables.py BUILD LABEL_REGEX [EXCLUDED_LABELS_REGEX]
"""
import os
import re
import subprocess
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    build, label = os.path.realpath(sys.argv[1]), re.compile(sys.argv[2])
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
        if not any(label.fullmatch(l) for l in mine) or (excluded and any(excluded.fullmatch(l) for l in mine)):
            continue
        for arg in command:
            path = os.path.realpath(arg)
            if path.startswith(build + os.sep) and not os.path.isdir(path):
                outputs.add(os.path.relpath(path, build))
    # A command's argument inside the build may be a file the test writes, not a build output:
    # keep what ninja can build.
    targets = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"], check=True, capture_output=True,
                             text=True).stdout
    outputs &= {line.rsplit(": ", 1)[0] for line in targets.splitlines()}
    if not outputs:
        sys.exit(f"test_executables.py: no test in {build} has a label matching {label.pattern}")
    print("\n".join(sorted(outputs)))


if __name__ == "__main__":
    main()
