#!/usr/bin/env python3
"""Sums the GoogleTest results Bazel left in bazel-testlogs/**/test.xml and prints
one closing line: 'tests: N passed, M failed, K skipped'. Exit 1 if any failed."""
import glob
import os
import sys
import xml.etree.ElementTree as ET

root = sys.argv[1] if len(sys.argv) > 1 else "bazel-testlogs"
passed = failed = skipped = 0
for path in glob.glob(os.path.join(root, "**", "test.xml"), recursive=True):
    try:
        tree = ET.parse(path)
    except ET.ParseError:
        failed += 1
        continue
    for case in tree.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("result") == "skipped" or case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
