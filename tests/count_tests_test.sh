#!/usr/bin/env bash
# count_tests_test.sh - tools/count_tests.py on a synthetic bazel-testlogs tree: of each
# target, only the logs its last run wrote count (a stale unsharded test.xml next to the
# shards of a now-sharded target, shards of an old shard count, shards of a target that
# runs unsharded again), and a failed case gives exit 1.
#   bash tests/count_tests_test.sh tools/count_tests.py
set -u
count="$(readlink -f "$1")"
tmp="$(mktemp -d "${TEST_TMPDIR:-/tmp}/count_tests.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail=0
# xml DIR WHEN PASSED [SKIPPED [FAILED]]: a test.xml with those cases, its mtime WHEN
xml() {
  mkdir -p "$1"
  { echo '<?xml version="1.0" encoding="UTF-8"?><testsuites><testsuite name="s">'
    for ((i = 0; i < $3; i++)); do echo "<testcase name=\"p$i\" status=\"run\"/>"; done
    for ((i = 0; i < ${4:-0}; i++)); do echo "<testcase name=\"s$i\" status=\"notrun\"/>"; done
    for ((i = 0; i < ${5:-0}; i++)); do echo "<testcase name=\"f$i\"><failure message=\"x\"/></testcase>"; done
    echo '</testsuite></testsuites>'; } > "$1/test.xml"
  touch -d "$2" "$1/test.xml"
}
check() {  # check ROOT EXIT LINE
  local out rc
  out="$(python3 "$count" "$1")"; rc=$?
  if [ "$out" != "$3" ] || [ "$rc" -ne "$2" ]; then
    echo "FAIL: $1: got '$out' (exit $rc), expected '$3' (exit $2)"; fail=1
  else
    echo "ok: $out (exit $rc)"
  fi
}
old="2026-01-01 10:00" new="2026-01-01 11:00"
L="$tmp/ok/tests"
xml "$L/plain_test" "$new" 3
xml "$L/sim_test" "$old" 25                       # stale: the target was unsharded then
for s in 1 2 3 4; do xml "$L/sim_test/shard_${s}_of_4" "$new" 2; done
xml "$L/sim_test/shard_3_of_4" "$new" 2 1
for s in 1 2; do xml "$L/grid_test/shard_${s}_of_2" "$old" 10; done   # the old shard count
for s in 1 2 3; do xml "$L/grid_test/shard_${s}_of_3" "$new" 1; done
for s in 1 2; do xml "$L/back_test/shard_${s}_of_2" "$old" 10; done   # unsharded again
xml "$L/back_test" "$new" 4
xml "$L/pkg" "$new" 1                             # a target and one in a folder of its name
xml "$L/pkg/inner_test" "$new" 1
check "$tmp/ok" 0 "tests: 20 passed, 0 failed, 1 skipped"
# a failure in a current shard counts; one in a stale log does not
xml "$tmp/bad/tests/sim_test" "$old" 0 0 5
for s in 1 2; do xml "$tmp/bad/tests/sim_test/shard_${s}_of_2" "$new" 1; done
check "$tmp/bad" 0 "tests: 2 passed, 0 failed, 0 skipped"
xml "$tmp/bad/tests/sim_test/shard_2_of_2" "$new" 1 0 1
check "$tmp/bad" 1 "tests: 2 passed, 1 failed, 0 skipped"
[ "$fail" -eq 0 ] && echo "count_tests_test: all passed"
exit "$fail"
