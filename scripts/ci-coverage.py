#!/usr/bin/env python3
"""Checks that a CI run ran every test it registers, once its passes are done, and prints the
tests per label in each pass.
  scripts/ci-coverage.py PASS=BUILD_DIR[:LABEL_REGEX] ...
Each PASS names a build tree whose JUnit files junit-PASS*.xml (scripts/ctest-pass.sh) say what
ran. Without LABEL_REGEX every test registered in that tree must have run in some pass; with it,
only those with a matching label (the release tree builds only what they need). A registered test
that no pass ran, or that is missing from a JUnit file, fails the check with its name.
"""
import glob
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def registered(build_dir):
    out = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build_dir, check=True,
                         capture_output=True, text=True).stdout
    tests = {}
    for test in json.loads(out).get("tests", []):
        labels = []
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels = list(prop.get("value") or [])
        tests[test["name"]] = labels
    return tests


def ran(build_dir, name):
    names = set()
    for path in glob.glob(os.path.join(build_dir, f"junit-{name}*.xml")):
        for case in ET.parse(path).getroot().iter("testcase"):
            names.add(case.get("name"))
    return names


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    expected = {}  # test -> labels
    passes = []  # (name, tests it ran with their labels)
    for spec in argv:
        name, _, rest = spec.partition("=")
        build_dir, _, regex = rest.partition(":")
        tests = registered(build_dir)
        if regex:
            wanted = re.compile(regex)
            tests = {t: l for t, l in tests.items() if any(wanted.search(x) for x in l)}
        expected.update(tests)
        done = ran(build_dir, name)
        passes.append((name, {t: l for t, l in tests.items() if t in done}))
    ran_anywhere = set().union(*(set(p[1]) for p in passes))
    missing = sorted(set(expected) - ran_anywhere)

    labels = sorted({x for l in expected.values() for x in l} | {"(none)"})
    print("ci-coverage: tests per label in each pass (a test counts once under each of its labels)")
    header = "  %-14s %9s" % ("label", "registered") + "".join(" %9s" % n for n, _ in passes)
    print(header)
    for label in labels:
        def count(tests):
            return sum(1 for l in tests.values() if (label in l) or (label == "(none)" and not l))
        row = "  %-14s %9d" % (label, count(expected))
        row += "".join(" %9d" % count(t) for _, t in passes)
        print(row)
    print("  %-14s %9d" % ("all", len(expected)) + "".join(" %9d" % len(t) for _, t in passes))
    if missing:
        print(f"ci-coverage: {len(missing)} registered tests ran in no pass:", file=sys.stderr)
        for test in missing[:50]:
            print(f"  {test}", file=sys.stderr)
        return 1
    print(f"ci-coverage: every one of the {len(expected)} registered tests ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
