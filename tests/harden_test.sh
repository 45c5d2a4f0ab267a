#!/usr/bin/env bash
# harden_test.sh - the adversarial cases of a user's files and of commands that
# must return: outputs that are inputs, the user's own *.tmp files, /dev/null,
# /dev/full, read-only files and folders, a file-size limit (a full disk without a
# mount), FIFOs with and without a peer, SIGTERM in the middle of a write, two
# writers of one path, gnuplot that fails, truncates or hangs, and inputs that are
# folders or FIFOs. Every case runs under `timeout`, so a hang fails the test
# instead of stalling CI.
set -u
remat="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-remat}" 2>/dev/null || true
tmp="${TEST_TMPDIR:-/tmp}/harden.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
fails=0 passes=0
LIMIT=60 # seconds any one command may take here

ok() { passes=$((passes+1)); }
bad() { echo "FAIL: $*"; fails=$((fails+1)); }

expect() { # expect <code> <stderr-pattern> -- command...
  local want="$1" pat="$2"; shift 3
  local code
  timeout -k 5 "$LIMIT" "$@" >"$tmp/out" 2>"$tmp/err"; code=$?
  if [ "$code" = 124 ] || [ "$code" = 137 ]; then bad "'$*' did not return within $LIMIT s"; return; fi
  if [ "$code" != "$want" ]; then bad "'$*' exited $code, expected $want; stderr: $(cat "$tmp/err")"; return; fi
  if [ -n "$pat" ] && ! grep -qE -- "$pat" "$tmp/err"; then bad "'$*' stderr does not match /$pat/: $(cat "$tmp/err")"; return; fi
  if [ "$want" = 2 ] && [ "$(wc -l < "$tmp/err")" -ne 1 ]; then bad "'$*' printed more than one error line: $(cat "$tmp/err")"; return; fi
  ok
}

same() { cmp -s "$1" "$2" && ok || bad "$3"; }
no_temps() { # no_temps <dir> <what>
  if ls "$1" | grep -q '\.remat-'; then bad "$2: temporary left in $1: $(ls "$1")"; else ok; fi
}

M=data/models/tiny-mlp-lif.json
P=data/plans/tiny-mlp-lif-ckpt.json
cp "$M" "$tmp/m.json"; cp "$M" "$tmp/m.orig"
timeout "$LIMIT" "$remat" run --model "$M" --trace "$tmp/t.h5" >/dev/null || bad "baseline trace"
timeout "$LIMIT" "$remat" run --model "$M" --dump "$tmp/ref.h5" >/dev/null || bad "reference dump"
cp "$tmp/t.h5" "$tmp/t.orig"

# ---- an output that is an input, by identity: refused before any work ----------
expect 2 "same file as --model" -- "$remat" run --model "$tmp/m.json" --trace "$tmp/m.json"
same "$tmp/m.json" "$tmp/m.orig" "run --model m --trace m changed the model"
expect 2 "same file as --model" -- "$remat" run --model "$tmp/m.json" --dump "$tmp/./m.json"
ln -s m.json "$tmp/link.json"; ln "$tmp/m.json" "$tmp/hard.json"
expect 2 "same file as --model" -- "$remat" run --model "$tmp/link.json" --trace "$tmp/hard.json"
expect 2 "same file as --plan" -- "$remat" run --model "$M" --plan "$tmp/m.json" --trace "$tmp/m.json"
expect 2 "same file as --trace" -- "$remat" run --model "$M" --trace "$tmp/x.h5" --dump "$tmp/x.h5"
[ -e "$tmp/x.h5" ] && bad "run --trace x --dump x wrote x" || ok
expect 2 "same file as --trace" -- "$remat" simulate --trace "$tmp/t.h5" --out "$tmp/t.h5"
expect 2 "same file as --trace" -- "$remat" search --trace "$tmp/t.h5" --budget 1GiB --out "$tmp/t.h5"
expect 2 "same file as --trace" -- "$remat" search --trace "$tmp/t.h5" --level 1 --pareto "$tmp/t.h5"
expect 2 "same file as --out" -- "$remat" search --trace "$tmp/t.h5" --budget 1GiB --out "$tmp/o.json" --pareto "$tmp/o.json"
expect 2 "same file as --trace" -- "$remat" tune --trace "$tmp/t.h5" --budget 1GiB --out "$tmp/t.h5"
same "$tmp/t.h5" "$tmp/t.orig" "a refused command changed the trace"
cp "$tmp/t.h5" "$tmp/fig.dat"
expect 2 "same file as --trace" -- "$remat" plot --trace "$tmp/fig.dat" --out "$tmp/fig.png" --data-only

# ---- the user's *.tmp files are never touched; an empty path is refused ----------
echo mine > "$tmp/res.h5.tmp"
expect 0 "" -- "$remat" run --model "$M" --trace "$tmp/res.h5"
[ "$(cat "$tmp/res.h5.tmp")" = mine ] && ok || bad "the user's res.h5.tmp was consumed"
mkdir -p "$tmp/cwd"; echo mine > "$tmp/cwd/.tmp"
(cd "$tmp/cwd" && timeout "$LIMIT" "$remat" run --model "$OLDPWD/$M" --trace "" >/dev/null 2>"$tmp/err"); code=$?
[ "$code" = 2 ] && grep -q "empty path" "$tmp/err" && ok || bad "--trace '' exited $code: $(cat "$tmp/err")"
[ "$(cat "$tmp/cwd/.tmp")" = mine ] && ok || bad "--trace '' deleted ./.tmp"
no_temps "$tmp" "after successful runs"

# ---- destinations that are not regular files -----------------------------------
expect 0 "" -- "$remat" run --model "$M" --trace /dev/null
expect 0 "" -- "$remat" run --model "$M" --dump /dev/null
[ -c /dev/null ] && ok || bad "/dev/null is no longer a character device"
expect 2 "No space left on device" -- "$remat" run --model "$M" --trace /dev/full
expect 2 "No space left on device" -- "$remat" run --model "$M" --dump /dev/full
expect 2 "No space left on device" -- "$remat" search --trace "$tmp/t.h5" --budget 1GiB --out /dev/full
expect 2 "No space left on device" -- "$remat" search --trace "$tmp/t.h5" --budget 1GiB --pareto /dev/full
expect 2 "No space left on device" -- "$remat" simulate --trace "$tmp/t.h5" --out /dev/full
expect 2 "is a directory" -- "$remat" run --model "$M" --trace "$tmp"
# /dev/stdout: a pipe, or a file the shell opened (written through fd 1, not renamed away)
n=$(timeout "$LIMIT" "$remat" search --trace "$tmp/t.h5" --level 1 --pareto /dev/stdout | grep -c '"steps"\|"points"')
[ "$n" -ge 1 ] && ok || bad "--pareto /dev/stdout | ... printed no front"
timeout "$LIMIT" "$remat" search --trace "$tmp/t.h5" --level 1 --out /dev/stdout --json > "$tmp/both.txt"
grep -q '"blocks"' "$tmp/both.txt" && grep -q '"plan"' "$tmp/both.txt" && ok || bad "--out /dev/stdout > file lost the plan or the summary"
mkfifo "$tmp/out.fifo"
cat "$tmp/out.fifo" > "$tmp/from.fifo" &
reader=$!
expect 0 "" -- "$remat" run --model "$M" --dump "$tmp/out.fifo"
wait "$reader"
same "$tmp/from.fifo" "$tmp/ref.h5" "a dump written to a FIFO differs from the file"
[ -p "$tmp/out.fifo" ] && ok || bad "the FIFO was replaced"
REMAT_FIFO_WAIT_S=1 expect 2 "no reader" -- "$remat" run --model "$M" --dump "$tmp/out.fifo"

# ---- read-only destinations and folders: refused, left as they are ----------------
cp "$tmp/t.orig" "$tmp/ro.h5"; chmod 444 "$tmp/ro.h5"
expect 2 "read-only" -- "$remat" run --model "$M" --trace "$tmp/ro.h5"
same "$tmp/ro.h5" "$tmp/t.orig" "a read-only trace was replaced"
if [ "$(id -u)" != 0 ]; then
  mkdir -p "$tmp/rodir"; chmod 555 "$tmp/rodir"
  expect 2 "Permission denied" -- "$remat" run --model "$M" --trace "$tmp/rodir/t.h5"
  chmod 755 "$tmp/rodir"
else
  echo "note: running as root, the read-only folder case is skipped (root writes anywhere)"
fi
expect 2 "No such file or directory" -- "$remat" run --model "$M" --trace "$tmp/missing/dir/t.h5"
# ... refused before the run or search, not after it (nothing on stdout: no summary)
for o in "$tmp/missing/dir/o.json" "$tmp" "" "$tmp/dangling.json"; do
  ln -sf "$tmp/nowhere" "$tmp/dangling.json"
  expect 2 "^remat search: --out: " -- "$remat" search --trace "$tmp/t.h5" --budget 1GiB --out "$o"
  [ -s "$tmp/out" ] && bad "search --out '$o' ran the search before refusing the output" || ok
  expect 2 "^remat run: --trace: " -- "$remat" run --model "$M" --trace "$o"
  [ -s "$tmp/out" ] && bad "run --trace '$o' ran before refusing the output" || ok
done
rm -f "$tmp/dangling.json"

# ---- a full disk: a file-size limit, the old file kept, no temporary left -----------
cp "$tmp/t.orig" "$tmp/full.h5"
# (stderr goes through a pipe: a file would be cut by the limit too)
err=$( (trap '' XFSZ; ulimit -f 8; exec timeout "$LIMIT" "$remat" run --model "$M" --trace "$tmp/full.h5" 2>&1 >/dev/null) ); code=$?
[ "$code" = 2 ] && echo "$err" | grep -q "File too large" && ok || bad "write past ulimit -f exited $code: $err"
same "$tmp/full.h5" "$tmp/t.orig" "a failed write damaged the old trace"
err=$( (trap '' XFSZ; ulimit -f 0; exec timeout "$LIMIT" "$remat" search --trace "$tmp/t.h5" --budget 1GiB --pareto "$tmp/front.json" 2>&1 >/dev/null) ); code=$?
[ "$code" = 2 ] && echo "$err" | grep -q "File too large" && ok || bad "pareto past ulimit -f exited $code: $err"
[ -e "$tmp/front.json" ] && bad "a failed write left front.json" || ok
# gnuplot's image past the limit: the disk error, not "truncated PNG" (SIGXFSZ ignored or not)
if command -v gnuplot >/dev/null 2>&1; then
  for trap_it in yes no; do
    err=$( (if [ $trap_it = yes ]; then trap '' XFSZ; fi; ulimit -f 16; exec timeout "$LIMIT" "$remat" plot --trace "$tmp/t.h5" --out "$tmp/big.png" 2>&1 >/dev/null) ); code=$?
    [ "$code" = 2 ] && echo "$err" | grep -q "big.png: cannot write: File too large" && ok || bad "plot past ulimit -f (XFSZ ignored: $trap_it) exited $code: $err"
    [ -e "$tmp/big.png" ] && bad "a cut image was kept" || ok
  done
else
  echo "note: gnuplot is not installed: the image past ulimit -f is not checked"
fi
no_temps "$tmp" "after failed writes"

# without the shell's trap: remat ignores SIGXFSZ itself (was: killed silently, rc 153, a partial temporary left)
err=$( (ulimit -f 8; exec timeout "$LIMIT" "$remat" run --model "$M" --trace "$tmp/full.h5" 2>&1 >/dev/null) ); code=$?
[ "$code" = 2 ] && echo "$err" | grep -q "File too large" && ok || bad "write past ulimit -f without a trap exited $code: $err"
same "$tmp/full.h5" "$tmp/t.orig" "a write killed by the file-size limit damaged the old trace"
no_temps "$tmp" "after a write past the file-size limit"

# ---- two writers of one path: one whole file --------------------------------------
for i in 1 2 3 4; do timeout "$LIMIT" "$remat" run --model "$M" --dump "$tmp/shared.h5" >/dev/null & done
wait
same "$tmp/shared.h5" "$tmp/ref.h5" "concurrent writers left a damaged dump"
no_temps "$tmp" "after concurrent writers"

# ---- gnuplot: failures, truncated images and hangs are caught ---------------------
gp="$tmp/gp"; mkdir -p "$gp"
printf '#!/bin/sh\neval "$2"\nprintf "\\211PNG\\r\\n\\032\\n" > "$outfile"\n' > "$gp/truncating"
printf '#!/bin/sh\necho "line 3: no such thing" >&2\nexit 1\n' > "$gp/failing"
printf '#!/bin/sh\necho $$ > "%s/hung.pid"\nexec sleep 300\n' "$gp" > "$gp/hanging"
chmod +x "$gp"/*
echo old > "$tmp/fig.png"
REMAT_GNUPLOT="$gp/truncating" expect 1 "truncated PNG" -- "$remat" plot --trace "$tmp/t.h5" --out "$tmp/fig.png"
[ "$(cat "$tmp/fig.png")" = old ] && ok || bad "a truncated PNG replaced the old image"
REMAT_GNUPLOT="$gp/failing" expect 1 "no such thing" -- "$remat" plot --trace "$tmp/t.h5" --out "$tmp/fig.png"
start=$(date +%s)
REMAT_GNUPLOT="$gp/hanging" REMAT_GNUPLOT_TIMEOUT_S=1 expect 1 "killed" -- "$remat" plot --trace "$tmp/t.h5" --out "$tmp/fig.png"
[ $(( $(date +%s) - start )) -lt 30 ] && ok || bad "a hanging gnuplot was not stopped in time"
[ "$(cat "$tmp/fig.png")" = old ] && ok || bad "a failed gnuplot replaced the old image"
# a gnuplot that started a child of its own: the child goes at the time limit too
printf '#!/bin/sh\nsleep 300 &\necho $! > "%s/child.pid"\nwait\n' "$gp" > "$gp/forking"; chmod +x "$gp/forking"
REMAT_GNUPLOT="$gp/forking" REMAT_GNUPLOT_TIMEOUT_S=1 expect 1 "killed" -- "$remat" plot --trace "$tmp/t.h5" --out "$tmp/fig.png"
sleep 0.3
child=$(cat "$gp/child.pid" 2>/dev/null)
cstate=$( [ -n "$child" ] && awk '{print $3}' "/proc/$child/stat" 2>/dev/null )
case "$cstate" in ""|Z|X) ok;; *) bad "gnuplot's child outlived the time limit (state $cstate)"; kill "$child";; esac
no_temps "$tmp" "after gnuplot failures"

# ---- SIGTERM in the middle of a write: no temporary, the old file kept -------------
rm -f "$gp/hung.pid"
REMAT_GNUPLOT="$gp/hanging" timeout "$LIMIT" "$remat" plot --trace "$tmp/t.h5" --out "$tmp/fig.png" >/dev/null 2>&1 &
victim=$!
for _ in $(seq 1 200); do [ -s "$gp/hung.pid" ] && break; sleep 0.05; done
if ls "$tmp" | grep -q 'fig.png.remat-'; then ok; else bad "no temporary image while gnuplot ran"; fi
kill -TERM "$victim" 2>/dev/null; hung=$(cat "$gp/hung.pid" 2>/dev/null)
wait "$victim" 2>/dev/null
sleep 0.5
state=$( [ -n "$hung" ] && awk '{print $3}' "/proc/$hung/stat" 2>/dev/null )
case "$state" in ""|Z|X) ok;; *) bad "gnuplot outlived remat's SIGTERM (state $state)"; kill "$hung";; esac
no_temps "$tmp" "after SIGTERM"
[ "$(cat "$tmp/fig.png")" = old ] && ok || bad "SIGTERM damaged the old image"

# ---- a crash in the middle of a dump: no temporary left (was: a 0-byte *.remat-XXXXXX) --
"$remat" run --model data/models/mlp-lif.json --dump "$tmp/crash.h5" >/dev/null 2>&1 & # no timeout: the signal goes to remat
victim=$!
for _ in $(seq 1 400); do ls "$tmp" | grep -q 'crash.h5.remat-' && break; sleep 0.02; done
if ls "$tmp" | grep -q 'crash.h5.remat-'; then
  kill -SEGV "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
  no_temps "$tmp" "after a crash (SIGSEGV) during a dump"
  [ -e "$tmp/crash.h5" ] && bad "a crashed dump left crash.h5" || ok
else
  wait "$victim" 2>/dev/null; echo "note: the dump finished before its temporary was seen; the crash case is skipped"
fi

# ---- inputs that are folders or FIFOs: named, and never a hang ---------------------
expect 2 "is a directory" -- "$remat" run --model "$tmp"
expect 2 "is a directory" -- "$remat" simulate --trace "$tmp"
mkfifo "$tmp/in.fifo"
REMAT_FIFO_WAIT_S=1 expect 2 "no writer" -- "$remat" run --model "$tmp/in.fifo"
REMAT_FIFO_WAIT_S=1 expect 2 "no writer" -- "$remat" simulate --trace "$tmp/in.fifo"
REMAT_FIFO_WAIT_S=1 expect 2 "no writer" -- "$remat" import-torch "$tmp/in.fifo" --out "$tmp/snap.h5"
[ -e "$tmp/snap.h5" ] && bad "import-torch from a FIFO without a writer wrote its output" || ok
# a writer that sends the first bytes, then stalls (holding the FIFO open): every reader gives up
stall() { { printf '%b' "$1"; exec sleep 6; } > "$tmp/in.fifo" & writer=$!; }
stall '\x80\x04}'; REMAT_FIFO_WAIT_S=1 expect 2 "sent 3 bytes, then nothing for 1 s" -- "$remat" import-torch "$tmp/in.fifo" --out "$tmp/snap.h5"
kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
stall '\x89HD'; REMAT_FIFO_WAIT_S=1 expect 2 "sent 3 bytes, then nothing" -- "$remat" simulate --trace "$tmp/in.fifo"
kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
stall '{"T": '; REMAT_FIFO_WAIT_S=1 expect 2 "then nothing for 1 s" -- "$remat" run --model "$tmp/in.fifo"
kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
# time limits that are not numbers of seconds: refused, naming the variable
REMAT_FIFO_WAIT_S=abc expect 2 "REMAT_FIFO_WAIT_S: expected a number of seconds" -- "$remat" run --model "$M"
REMAT_FIFO_WAIT_S=-1 expect 2 "REMAT_FIFO_WAIT_S: expected" -- "$remat" simulate --trace "$tmp/t.h5"
REMAT_GNUPLOT_TIMEOUT_S=0 expect 2 "REMAT_GNUPLOT_TIMEOUT_S: expected a number of seconds in 0..86400, above 0" -- "$remat" plot --trace "$tmp/t.h5" --out "$tmp/e.png"
REMAT_GNUPLOT_TIMEOUT_S=1e9 expect 2 "REMAT_GNUPLOT_TIMEOUT_S: expected" -- "$remat" plot --trace "$tmp/t.h5" --out "$tmp/e.png"
[ -e "$tmp/e.png" ] && bad "a refused REMAT_GNUPLOT_TIMEOUT_S still drew" || ok
expect 0 "" -- "$remat" run --model <(cat "$M") --plan <(cat "$P")
expect 0 "" -- "$remat" simulate --trace <(cat "$tmp/t.h5")
expect 2 "not an HDF5 file" -- "$remat" simulate --trace /dev/zero
expect 2 "expected at most" -- "$remat" run --model /dev/zero

# ---- options: repeated ones, the seed range, a trace of a dump step ----------------
expect 2 "given more than once" -- "$remat" run --model "$M" --model "$tmp/m.json"
expect 2 "given more than once" -- "$remat" simulate --trace "$tmp/t.h5" --T 8 --T 16
expect 0 "" -- "$remat" run --model "$M" --seed 18446744073709551615
expect 2 "not a seed" -- "$remat" run --model "$M" --seed 18446744073709551616
expect 2 "not a seed" -- "$remat" run --model "$M" --seed -1
expect 2 "expected one of --trace, --dump" -- "$remat" run --model "$M" --trace "$tmp/td.h5" --dump "$tmp/dd.h5"

# ---- flags named in their own messages; values refused, not silently accepted -------
expect 2 "^remat search: --level: expected 0..4, got -1" -- "$remat" search --trace "$tmp/t.h5" --level -1
expect 2 "^remat run: --T: expected 1..1048576" -- "$remat" run --model "$M" --T 1048577
expect 2 "allocator config: round_bytes: expected a power of two" -- "$remat" run --model "$M" --allocator-config round_bytes=3
expect 2 "^remat tune: --budget: expected a positive memory budget, e.g. 8GiB or 8GB, got 0" -- \
  "$remat" tune --trace "$tmp/t.h5" --budget 0
expect 2 "max_split_size: given more than once" -- \
  "$remat" run --model "$M" --allocator-config max_split_size=64MiB,max_split_size=128MiB
expect 2 "expandable_segments: given more than once" -- \
  "$remat" simulate --trace "$tmp/t.h5" --allocator-config expandable_segments:True,expandable_segments:False
expect 2 "expected /spanN with N >= 2" -- "$remat" run --model "$M" --plan b1/span0
expect 2 "'b1/k02': expected options" -- "$remat" run --model "$M" --plan b1/k02
expect 2 "expected /kN with N >= 1" -- "$remat" run --model "$M" --plan b1/k0
expect 2 "^remat search: --preset: applies to --level" -- "$remat" search --trace "$tmp/t.h5" --preset speed --budget 1GiB
expect 2 "^remat tune: --backend: expected ref or cuda, got 'bogus'" -- \
  "$remat" tune --trace "$tmp/t.h5" --budget 1GiB --backend bogus
expect 2 "^remat verify: --sample: 0 \(expected a positive count" -- "$remat" verify --model "$M" --grid --sample 0

# ---- demo: one error line on stderr (its stages go to stdout) ----------------------
mkdir -p "$tmp/demo/baseline.h5"
expect 2 "is a directory" -- "$remat" demo --model "$M" --out "$tmp/demo" --no-plots

# ---- a dead layer (nothing reads its output): refused at load, naming it -----------
for prec in fp32 bf16; do
  cat > "$tmp/dead-$prec.json" <<EOF
{"name": "dead", "T": 4, "N": 2, "input": {"shape": [8], "kind": "spikes", "rate": 0.5}, "classes": 4,
 "loss": "rate_mse", "precision": "$prec",
 "layers": [{"name": "fc1", "type": "linear", "out": 8}, {"name": "l1", "type": "lif"},
            {"name": "fc2", "type": "linear", "out": 4, "input": "input"}, {"name": "l2", "type": "lif"}],
 "blocks": [{"name": "b1", "layers": ["fc1", "l1", "fc2", "l2"]}]}
EOF
  d="$tmp/dead-$prec.json"; why='layers\[1\]: .*nothing reads the output of "l1"'
  expect 2 "$why" -- "$remat" run --model "$d"
  expect 2 "$why" -- "$remat" run --model "$d" --dump "$tmp/dead.h5"
  expect 2 "$why" -- "$remat" verify --model "$d" --plan "$P"
  expect 2 "$why" -- "$remat" verify --model "$d" --grid
  expect 2 "$why" -- "$remat" demo --model "$d" --out "$tmp/dead-demo" --no-plots
done
[ -e "$tmp/dead.h5" ] && bad "a refused dead-layer model wrote its dump" || ok
no_temps "$tmp" "after dead-layer models"

# ---- memory bombs: a 300-byte model needing GBs .. TBs, refused before allocating ----
cat > "$tmp/bomb.json" <<'EOF'
{"name": "bomb", "T": 1, "N": 1, "input": {"shape": [16777216]}, "classes": 4096, "loss": "rate_mse",
 "layers": [{"name": "fc", "type": "linear", "out": 4096}, {"name": "sn", "type": "if"}],
 "blocks": [{"name": "b", "layers": ["fc", "sn"]}]}
EOF
cat > "$tmp/mid.json" <<'EOF'
{"name": "mid", "T": 4, "N": 64, "input": {"shape": [65536]}, "classes": 4, "loss": "rate_mse",
 "layers": [{"name": "fc", "type": "linear", "out": 4096}, {"name": "sn", "type": "if"},
            {"name": "fc2", "type": "linear", "out": 4}],
 "blocks": [{"name": "b", "layers": ["fc", "sn", "fc2"]}]}
EOF
cat > "$tmp/wsbomb.json" <<'EOF'
{"name": "wsbomb", "T": 1, "N": 1, "input": {"shape": [16384, 64, 64]}, "classes": 4, "loss": "rate_mse",
 "layers": [{"name": "c1", "type": "conv2d", "out": 16, "kernel": 63, "padding": 31}, {"name": "sn", "type": "if"},
            {"name": "flat", "type": "flatten"}, {"name": "fc", "type": "linear", "out": 4}],
 "blocks": [{"name": "b", "layers": ["c1", "sn", "flat", "fc"]}]}
EOF
need='layers\[0\] \("fc"\): a training step needs [0-9.]+ GiB \([0-9]+ B\) at its peak, more than'
REMAT_HOST_MEMORY=64GiB expect 2 "bomb.json: $need the 64.0 GiB" -- "$remat" run --model "$tmp/bomb.json"
REMAT_HOST_MEMORY=64GiB expect 2 "bomb.json: $need" -- "$remat" run --model "$tmp/bomb.json" --dump "$tmp/bomb.h5"
REMAT_HOST_MEMORY=2GiB expect 2 "mid.json: $need .*REMAT_HOST_MEMORY" -- "$remat" run --model "$tmp/mid.json"
echo '{"model": "mid", "blocks": [{"name": "b", "checkpoint": true}]}' > "$tmp/mid-plan.json"
REMAT_HOST_MEMORY=2GiB expect 2 "mid.json: $need" -- "$remat" verify --model "$tmp/mid.json" --plan "$tmp/mid-plan.json"
REMAT_HOST_MEMORY=2GiB expect 2 "mid.json: $need" -- "$remat" demo --model "$tmp/mid.json" --out "$tmp/mid-demo" --no-plots
REMAT_HOST_MEMORY=4GiB expect 2 'wsbomb.json: layers\[[0-9]+\] \("[a-z0-9]+"\): a training step needs' -- \
  "$remat" run --model "$tmp/wsbomb.json"
REMAT_HOST_MEMORY=lots expect 2 "REMAT_HOST_MEMORY: expected a size" -- "$remat" run --model "$M"
REMAT_HOST_MEMORY=1MiB expect 0 "" -- "$remat" simulate --trace "$tmp/t.h5" --plan "$P"   # nothing allocated there
[ -e "$tmp/bomb.h5" ] && bad "a refused memory bomb wrote its dump" || ok

# ---- work bounded by the input: refused up front, with the limit and why ------------
expect 2 "above 65536" -- "$remat" search --trace "$tmp/t.h5" --budget 1GiB --T 1048576
expect 2 "above 1048576" -- "$remat" simulate --trace "$tmp/t.h5" --N 2000000
expect 2 "above the largest T" -- "$remat" tune --trace "$tmp/t.h5" --budget 1GiB --dim T --max 9999999
expect 2 "more than --max-plans" -- "$remat" verify --model "$M" --grid --sample 2147483647

# ---- search work bounded by the input: long chains -------------------------------
chain() { # chain <blocks> <T>: a chain of linear + lif blocks
  local n="$1" i layers="" blocks=""
  for i in $(seq 0 $((n - 1))); do
    layers="$layers{\"name\": \"fc$i\", \"type\": \"linear\", \"out\": $([ "$i" = $((n - 1)) ] && echo 4 || echo 8)}, {\"name\": \"sn$i\", \"type\": \"lif\"},"
    blocks="$blocks{\"name\": \"b$i\", \"layers\": [\"fc$i\", \"sn$i\"]},"
  done
  echo "{\"name\": \"chain$n\", \"T\": $2, \"N\": 1, \"input\": {\"shape\": [8], \"kind\": \"spikes\"}, \"classes\": 4, \"loss\": \"rate_mse\", \"layers\": [${layers%,}], \"blocks\": [${blocks%,}]}"
}
chain 2048 4 > "$tmp/chain2048.json"
timeout "$LIMIT" "$remat" run --model "$tmp/chain2048.json" --trace "$tmp/chain2048.h5" >/dev/null || bad "2048-block chain trace"
expect 2 "above the limit of 4194304 \(REMAT_LEVEL_WORK" -- "$remat" search --trace "$tmp/chain2048.h5" --level 4
chain 64 1 > "$tmp/chain64.json"
timeout "$LIMIT" "$remat" run --model "$tmp/chain64.json" --trace "$tmp/chain64.h5" >/dev/null || bad "64-block chain trace"
timeout "$LIMIT" "$remat" search --trace "$tmp/chain64.h5" --budget 64MiB --device-overhead 0 > "$tmp/out" 2>&1
grep -q "span plans: 2048 of 10080 simulated, evenly spaced (the limit: 131072 simulated blocks" "$tmp/out" && ok ||
  bad "search on 64 blocks: no span limit line: $(tail -3 "$tmp/out")"

rm -rf "$tmp"
echo "harden: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
