#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
"""The tests a root run may not skip.

    scripts/required_tests.py BUILD JUNIT LABEL[,LABEL...]

Reads the tests of build directory BUILD (ctest --show-only=json-v1) and the results in JUNIT
(ctest --output-junit), and prints each test with one of the LABELs that was skipped, with the
reason it printed. Exit status 1 when there is one, 0 otherwise, 2 on bad usage.

scripts/test.sh runs it as root on the optimised stage's results with netns,slurm: those tests
skip only without root or a package, and as root the set-up has installed the packages, so a
skip there is a failure the suite must not hide (a namespace or Slurm test that cannot fail).
"""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET


def labelled(build, labels):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True,
                         check=True).stdout
    names = set()
    for test in json.loads(out)["tests"]:
        for prop in test.get("properties", []):
            if prop["name"] == "LABELS" and labels & set(prop["value"]):
                names.add(test["name"])
    return names


def reason(case):
    out = case.findtext("system-out") or ""
    lines = [line for line in out.splitlines() if "skip" in line.lower()]
    return lines[-1].strip() if lines else "(it printed no reason)"


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build, junit, labels = argv[1], argv[2], set(argv[3].split(","))
    required = labelled(build, labels)
    skipped = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        if name in required and (case.get("status") == "notrun" or case.find("skipped") is not None):
            skipped.append((name, reason(case)))
    for name, why in skipped:
        print(f"required_tests: {name} was skipped as root: {why}")
    if skipped:
        print(f"required_tests: {len(skipped)} test(s) labelled {','.join(sorted(labels))} skipped; as root they "
              "must run (DSGD_ALLOW_ROOT_SKIPS=1 accepts the skips, on a host that cannot make namespaces)")
    return 1 if skipped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
