#!/usr/bin/env python3
"""Sums the GoogleTest results Bazel left in bazel-testlogs/**/test.xml and prints
one closing line: 'tests: N passed, M failed, K skipped'. Exit 1 if any failed.

    python3 tools/count_tests.py [TESTLOGS]        (default bazel-testlogs)

Bazel never deletes a target's old logs: a target run unsharded once and sharded since
keeps its unsharded test.xml next to its shard_I_of_N/test.xml files (and a change of
shard count leaves the old shard folders). Of one target's logs, only the layout the
last run wrote is counted: its logs are grouped by layout (plain, shard_*_of_N, run_*_of_M,
...) and the group holding the newest test.xml wins. Counting by layout, not by the
run's start time, keeps a cached target's results (Bazel does not rewrite them).
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

# a folder Bazel adds below a target's own for one of its shards or runs
_PART = re.compile(r"^(shard|run)_\d+_of_(\d+)$")


def _target_and_layout(rel_dir):
    """(target folder, layout) of a test.xml's folder, relative to the testlogs root:
    'tests/sim_test/shard_2_of_4' -> ('tests/sim_test', 'shard_of_4')."""
    parts = rel_dir.split(os.sep) if rel_dir else []
    layout = []
    while parts and _PART.match(parts[-1]):
        m = _PART.match(parts.pop())
        layout.insert(0, "%s_of_%s" % (m.group(1), m.group(2)))
    return os.sep.join(parts), "/".join(layout)


def current_logs(root):
    """The test.xml files under root that the last run of each target wrote (sorted)."""
    groups = {}  # target -> layout -> [(mtime, path)]
    for path in glob.glob(os.path.join(root, "**", "test.xml"), recursive=True):
        target, layout = _target_and_layout(os.path.relpath(os.path.dirname(path), root))
        groups.setdefault(target, {}).setdefault(layout, []).append((os.path.getmtime(path), path))
    keep = []
    for layouts in groups.values():
        newest = max(layouts.values(), key=lambda files: max(files))
        keep.extend(p for _, p in newest)
    return sorted(keep)


def count(paths):
    """(passed, failed, skipped) test cases of these test.xml files; an unreadable file is one failure."""
    passed = failed = skipped = 0
    for path in paths:
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
    return passed, failed, skipped


def main(argv):
    root = argv[1] if len(argv) > 1 else "bazel-testlogs"
    passed, failed, skipped = count(current_logs(root))
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
