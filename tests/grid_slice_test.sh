#!/usr/bin/env bash
# grid_slice_test.sh - a verify grid split into slices (--slice i/n) and merged (--merge)
# reports what one process verifying the whole grid reports: byte-identical --json
# (--no-times), and the same exit code; bad slices are refused (docs/mpi.md).
set -u
remat="$1"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
tmp="${TEST_TMPDIR:-/tmp}/grid_slice.$$"
mkdir -p "$tmp"
fails=0 passes=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
check() { if [ "$1" = "$2" ]; then passes=$((passes+1)); else fail "$3: got $1, expected $2"; fi; }

M=data/models/tiny-resnet-bn.json
"$remat" verify --model $M --grid --sample 24 --equivalence-only --json --no-times > "$tmp/whole.json" 2>/dev/null
check $? 0 "whole grid"
if grep -q '"wall_s"\|"total_wall_s"\|"slice"' "$tmp/whole.json"; then fail "--no-times left times or slice fields"; fi
for n in 1 2 5; do
  args=()
  for ((i = 0; i < n; i++)); do
    "$remat" verify --model $M --grid --sample 24 --equivalence-only --slice "$i/$n" --json > "$tmp/s$i.json" 2>/dev/null
    check $? 0 "slice $i/$n"
    grep -q "\"slice\": \"$i/$n\"" "$tmp/s$i.json" || fail "slice $i/$n: no slice field"
    args+=(--merge "$tmp/s$i.json")
  done
  "$remat" verify "${args[@]}" --json --no-times > "$tmp/merged.json" 2>/dev/null
  check $? 0 "merge of $n slices"
  cmp -s "$tmp/whole.json" "$tmp/merged.json" && passes=$((passes+1)) || fail "merge of $n slices differs from the whole grid"
done
# the human report of a merge works too, and a missing or repeated slice is refused (exit 2)
"$remat" verify --merge "$tmp/s0.json" --merge "$tmp/s1.json" --merge "$tmp/s2.json" --merge "$tmp/s3.json" \
  --merge "$tmp/s4.json" | grep -q "verdict" || fail "human merge report"
"$remat" verify --merge "$tmp/s0.json" --merge "$tmp/s1.json" > /dev/null 2> "$tmp/err"
check $? 2 "a missing slice"
grep -q "missing" "$tmp/err" || fail "missing slice message: $(cat "$tmp/err")"
"$remat" verify --merge "$tmp/s0.json" --merge "$tmp/s0.json" > /dev/null 2> "$tmp/err"
check $? 2 "a repeated slice"
"$remat" verify --merge "$tmp/whole.json" > /dev/null 2> "$tmp/err"
check $? 2 "a whole-grid report is not a slice"
grep -q "slice" "$tmp/err" || fail "not-a-slice message: $(cat "$tmp/err")"
"$remat" verify --model $M --grid --slice 3/3 > /dev/null 2> "$tmp/err"
check $? 2 "--slice 3/3"
"$remat" verify --model $M --plan b1 --slice 0/2 > /dev/null 2> "$tmp/err"
check $? 2 "--slice without --grid"
echo "grid_slice_test: $passes passed, $fails failed"
rm -rf "$tmp"
[ "$fails" = 0 ]
