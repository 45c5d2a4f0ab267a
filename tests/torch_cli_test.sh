#!/usr/bin/env bash
# torch_cli_test.sh - `remat import-torch`, `remat plot` and `remat simulate` on PyTorch
# memory snapshots end to end: exit codes and one-line errors of interfaces.md, no
# output file on error, the --json keys other tools read, and the real snapshots of
# ../shared/fixtures when they are there (skipped, saying so, when not).
set -u
remat="$1"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
tmp="${TEST_TMPDIR:-/tmp}/torch_cli.$$"
mkdir -p "$tmp"
fails=0 passes=0

expect() { # expect <code> <stdout+stderr-pattern> -- command...
  local want="$1" pat="$2"; shift 3
  local code
  "$@" >"$tmp/out" 2>"$tmp/err"; code=$?
  if [ "$code" != "$want" ]; then
    echo "FAIL: '$*' exited $code, expected $want; stderr: $(cat "$tmp/err")"; fails=$((fails+1)); return
  fi
  if [ -n "$pat" ] && ! cat "$tmp/out" "$tmp/err" | grep -qE -- "$pat"; then
    echo "FAIL: '$*' output does not match /$pat/: $(cat "$tmp/out" "$tmp/err" | head -5)"; fails=$((fails+1)); return
  fi
  if [ "$want" = 2 ] && [ "$(wc -l < "$tmp/err")" -ne 1 ]; then
    echo "FAIL: '$*' printed other than one error line: $(cat "$tmp/err")"; fails=$((fails+1)); return
  fi
  passes=$((passes+1))
}
no_file() { if [ -e "$1" ] || [ -e "$1.tmp" ]; then echo "FAIL: $1 written on error"; fails=$((fails+1)); else passes=$((passes+1)); fi; }

S=fuzz/seeds/pickle/snapshot-p4.pickle
O=fuzz/seeds/pickle/old-2023.pickle
expect 0 "check-allocator" -- "$remat" import-torch --help
expect 0 "import-torch" -- "$remat" --help
expect 2 "SNAPSHOT.pickle: missing" -- "$remat" import-torch --out "$tmp/a.h5"
expect 2 "--out: missing" -- "$remat" import-torch "$S"
expect 2 "none.pickle: file: cannot open" -- "$remat" import-torch "$tmp/none.pickle" --out "$tmp/a.h5"
no_file "$tmp/a.h5"
printf '\x80\x04cposix\nsystem\n\x8c\x02id\x85R.' > "$tmp/evil.pickle"
expect 2 "opcode GLOBAL \(0x63\) at offset 2: refused" -- "$remat" import-torch "$tmp/evil.pickle" --out "$tmp/a.h5"
no_file "$tmp/a.h5"
head -c 500 "$S" > "$tmp/trunc.pickle"
expect 2 "trunc.pickle: pickle: .*(truncated|past the end)" -- "$remat" import-torch "$tmp/trunc.pickle" --out "$tmp/a.h5"
no_file "$tmp/a.h5"
expect 2 "top level: expected a dict" -- "$remat" import-torch fuzz/seeds/pickle/scalars.pickle --out "$tmp/a.h5"
no_file "$tmp/a.h5"
expect 2 "expected with --check-allocator" -- "$remat" import-torch "$S" --out "$tmp/a.h5" --json
expect 2 "unexpected argument" -- "$remat" import-torch "$S" extra --out "$tmp/a.h5"
cp "$S" "$tmp/same.pickle"
expect 2 "same.pickle" -- "$remat" import-torch "$tmp/same.pickle" --out "$tmp/same.pickle"
cmp -s "$S" "$tmp/same.pickle" && passes=$((passes+1)) || { echo "FAIL: the input was overwritten"; fails=$((fails+1)); }

expect 0 "device 0: 3 events \(alloc 1, segment_alloc 1, oom 1\)" -- "$remat" import-torch "$S" --out "$tmp/new.h5"
[ -s "$tmp/new.h5" ] && passes=$((passes+1)) || { echo "FAIL: new.h5 not written"; fails=$((fails+1)); }
expect 0 "blocks.address: absent in 2 blocks" -- "$remat" import-torch "$O" --out "$tmp/old.h5"
expect 0 "placed at the recorded address: 1 of 1 allocations" -- "$remat" import-torch "$S" --out "$tmp/new.h5" --quiet --check-allocator
expect 0 '"placed_at_recorded_address":1' -- "$remat" import-torch "$S" --out "$tmp/new.h5" --check-allocator --json
for k in devices device allocations placed_at_recorded_address reserved_end_predicted reserved_end_recorded; do
  grep -q "\"$k\"" "$tmp/out" && passes=$((passes+1)) || { echo "FAIL: --json lacks $k"; fails=$((fails+1)); }
done
expect 0 "fragmentation at peak" -- "$remat" import-torch "$S" --out "$tmp/new.h5" --quiet --check-allocator --allocator-config expandable_segments=true
expect 2 "import-torch: --allocator-config: allocator config: bogus" -- "$remat" import-torch "$S" --out "$tmp/b.h5" --check-allocator --allocator-config bogus=1
no_file "$tmp/b.h5"
# a check refused as bad input writes no file (exit 2); its message names the file and the entry
expect 2 "streams-65.pickle: device_traces\[0\]\[64\] \(alloc of 512 bytes at 0x10008000000, stream 64\): stream 64: more than 64 streams" -- "$remat" import-torch fuzz/seeds/pickle/streams-65.pickle --out "$tmp/b.h5" --check-allocator
no_file "$tmp/b.h5"
expect 2 "alloc-600g.pickle: device_traces\[0\]\[0\] \(alloc of 644245094400 bytes .*\): 644245094400 bytes exceed" -- "$remat" import-torch fuzz/seeds/pickle/alloc-600g.pickle --out "$tmp/b.h5" --check-allocator
no_file "$tmp/b.h5"
# without the check the same files import (exit 0, written); simulate names the trace and the entry
expect 0 "" -- "$remat" import-torch fuzz/seeds/pickle/streams-65.pickle --out "$tmp/s65.h5" --quiet
expect 2 "s65.h5: device_traces\[0\]\[64\]" -- "$remat" simulate --trace "$tmp/s65.h5"
# a check that runs and disagrees: exit 1, and the file is written
expect 1 "placed at the recorded address: 0 of 1" -- "$remat" import-torch fuzz/seeds/pickle/misplaced.pickle --out "$tmp/mp.h5" --check-allocator
[ -s "$tmp/mp.h5" ] && passes=$((passes+1)) || { echo "FAIL: exit 1 without the file"; fails=$((fails+1)); }
expect 0 '"reserved_end_recorded":2097152' -- "$remat" simulate --trace "$tmp/new.h5" --allocator caching --json
expect 0 "what-if" -- "$remat" simulate --trace "$tmp/new.h5" --allocator-config "expandable_segments=true;max_split_size=64MiB"
expect 2 "imported allocation stream takes only" -- "$remat" simulate --trace "$tmp/new.h5" --plan data/plans/x.json
expect 0 "peak allocated" -- "$remat" plot --trace "$tmp/new.h5" --out "$tmp/new.png" --data-only
[ -s "$tmp/new.dat" ] && [ -s "$tmp/new.gp" ] && passes=$((passes+1)) || { echo "FAIL: plot data not written"; fails=$((fails+1)); }
expect 0 "wrote" -- "$remat" plot --trace "$tmp/old.h5" --out "$tmp/old.png" --data-only
expect 2 "--device" -- "$remat" plot --trace "$tmp/new.h5" --device 3 --out "$tmp/d.png" --data-only
expect 2 "imported allocation stream: expected it alone" -- "$remat" plot --trace "$tmp/new.h5" --trace "$tmp/old.h5" --out "$tmp/d.png"
expect 2 "external allocation stream written by .remat import-torch." -- "$remat" search --trace "$tmp/new.h5" --budget 1GiB
# two devices, expandable segments, an out-of-memory on device 1 (oom entries carry
# device_free and no addr, as PyTorch writes them): placement reported per device
X=fuzz/seeds/pickle/oom-expandable-2dev.pickle
expect 0 "oom 1, user_defined 1" -- "$remat" import-torch "$X" --out "$tmp/oom.h5" --check-allocator
expect 0 '"device":1,"allocations":4,"placed_at_recorded_address":4,"reserved_end_predicted":104857600,"reserved_end_recorded":104857600' -- "$remat" simulate --trace "$tmp/oom.h5" --json

fx=""
for d in "${REMAT_TORCH_FIXTURES:-}" "$(dirname "$(readlink -f "$S")")/../../../../shared/fixtures/torch-snapshots"; do
  [ -n "$d" ] && [ -d "$d" ] && { fx="$d"; break; }
done
if [ -z "$fx" ]; then
  echo "SKIP: ../shared/fixtures/torch-snapshots is absent: real snapshots not imported"
else
  expect 0 "placed at the recorded address: 1721 of 1721 allocations" -- "$remat" import-torch "$fx/cs336-memory_snapshot.pickle" --out "$tmp/cs.h5" --check-allocator
  expect 0 "5163 events" -- "$remat" plot --trace "$tmp/cs.h5" --out "$tmp/cs.png" --data-only
  expect 0 "176 segments" -- "$remat" import-torch "$fx/llm-inference-oom_snapshot.pickle" --out "$tmp/oom.h5"
  expect 0 "257 segments" -- "$remat" import-torch "$fx/llm-inference-1.3b_snapshot.pickle" --out "$tmp/13b.h5"
fi
echo "torch_cli_test: $passes passed, $fails failed"
rm -rf "$tmp"
[ "$fails" -eq 0 ]
