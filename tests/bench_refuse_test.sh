#!/usr/bin/env bash
# bench_refuse_test.sh - bench/ scripts refuse a sanitizer binary (timing one measures
# the sanitizer), and .bazelrc keeps the asan build out of bazel-bin (its own output
# folder and symlinks), so test.sh leaves the optimised binaries in place.
set -u
common_dir="$(dirname "$1")"
bazelrc="$2"
test_sh="$3"
fail=0
tmp="${TEST_TMPDIR:-/tmp}/bench_refuse.$$"
mkdir -p "$tmp"
printf '\177ELF fake binary calling __asan_init at start\n' > "$tmp/asan-remat"
printf '\177ELF fake optimised binary\n' > "$tmp/remat"
chmod +x "$tmp/asan-remat" "$tmp/remat"
err=$(REMAT_BIN="$tmp/asan-remat" python3 -c "import sys; sys.path.insert(0, '$common_dir'); import common; common.remat_bin()" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then echo "FAIL: a sanitizer remat binary was accepted"; fail=1; fi
case "$err" in *"a sanitizer build (it holds __asan_init)"*) ;; *) echo "FAIL: message: $err"; fail=1 ;; esac
ok=$(REMAT_BIN="$tmp/remat" python3 -c "import sys; sys.path.insert(0, '$common_dir'); import common; print(common.remat_bin())" 2>&1)
if [ "$ok" != "$tmp/remat" ]; then echo "FAIL: an optimised binary was refused: $ok"; fail=1; fi
# the asan config writes elsewhere, and test.sh counts the asan run's own test logs
grep -q '^build:asan .*--platform_suffix=asan' "$bazelrc" || { echo "FAIL: .bazelrc: asan without its own output folder"; fail=1; }
grep -q '^build:asan .*--symlink_prefix=bazel-asan-' "$bazelrc" || { echo "FAIL: .bazelrc: asan writes bazel-bin"; fail=1; }
grep -q 'count_tests.py bazel-asan-testlogs' "$test_sh" || { echo "FAIL: test.sh does not count the asan test logs"; fail=1; }
rm -rf "$tmp"
[ $fail -eq 0 ] && echo "PASS: bench refuses sanitizer binaries; asan has its own output folder"
exit $fail
