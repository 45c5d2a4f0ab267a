#!/usr/bin/env bash
# layering_test.sh - no two folders include each other's headers (core/io and core/exec,
# core/exec and core/ref, ...): each folder's dependencies point one way, as its Bazel
# targets do. Reads the source tree the test script lives in (Bazel's runfiles link to
# it); prints every pair of folders that include each other, with an example of each way.
set -u
root="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
[ -d "$root/core" ] || { echo "FAIL: no core/ under $root (the test script's tree)"; exit 1; }
cd "$root"
exec /usr/bin/python3 - <<'PY'
import os, re, sys
SKIP = ("third_party", "bazel-", "tests", "fuzz", "bench", ".git", "cuda/emu", "python")
edges, n = {}, 0
for d, dirs, files in os.walk("."):
    rel = os.path.relpath(d, ".")
    if any(rel.startswith(s) for s in SKIP):
        dirs[:] = []
        continue
    for name in files:
        if not name.endswith((".c", ".h", ".cu", ".cuh", ".cc")):
            continue
        f = os.path.join(rel, name)
        n += 1
        for m in re.finditer(r'#include\s+"([^"]+)"', open(f, errors="replace").read()):
            dst = os.path.dirname(m.group(1))
            if dst and dst != rel and os.path.exists(m.group(1)):
                edges.setdefault((rel, dst), "%s -> %s" % (f, m.group(1)))
cycles = sorted({tuple(sorted(p)) for p in edges if (p[1], p[0]) in edges})
for a, b in cycles:
    print("FAIL: %s and %s include each other: %s; %s" % (a, b, edges[(a, b)], edges[(b, a)]))
print("%d files, %d edges between folders, %d cycles" % (n, len(edges), len(cycles)))
sys.exit(1 if cycles else 0)
PY
