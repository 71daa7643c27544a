#!/usr/bin/env python3
"""Reads the JUnit files ctest writes (--output-junit) and prints what a pass cost: its tests,
failures and skips, the test time summed, and its slowest tests.
  scripts/test-report.py [--title T] [--top N] JUNIT.xml...
"""
import argparse
import sys
import xml.etree.ElementTree as ET


def cases(path):
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "run")
        if case.find("failure") is not None or case.find("error") is not None:
            status = "failed"
        elif case.find("skipped") is not None or status in ("notrun", "disabled"):
            status = "skipped"
        else:
            status = "passed"
        yield case.get("name", "?"), float(case.get("time") or 0.0), status


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--title", default="tests")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    rows = []
    for path in args.files:
        try:
            rows.extend(cases(path))
        except (OSError, ET.ParseError) as err:
            print(f"test-report: {path}: {err}", file=sys.stderr)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for _, _, status in rows:
        counts[status] += 1
    total = sum(t for _, t, _ in rows)
    print(f"test-report: {args.title}: {len(rows)} tests, {counts['passed']} passed, "
          f"{counts['failed']} failed, {counts['skipped']} skipped; {total:.0f} s of test time")
    slowest = sorted(rows, key=lambda r: r[1], reverse=True)[: args.top]
    if slowest:
        print(f"test-report: {args.title}: the {len(slowest)} slowest")
        for name, seconds, status in slowest:
            print(f"  {seconds:8.1f} s  {status:<7}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
