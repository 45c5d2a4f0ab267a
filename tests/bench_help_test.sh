#!/usr/bin/env bash
# bench_help_test.sh - every bench/ script answers --help with its usage (its docstring)
# and exit 0 without running anything: no remat command, no results file written.
# Arguments: the scripts (bench/*.py from //bench:scripts).
set -u
fail=0
n=0
for script in "$@"; do
    name=$(basename "$script")
    [ "$name" = common.py ] && continue
    n=$((n + 1))
    # A remat binary that records being called: --help must not reach it.
    tmp="${TEST_TMPDIR:-/tmp}/bench_help.$$"
    mkdir -p "$tmp"
    printf '#!/bin/sh\ntouch "%s/called"\nexit 1\n' "$tmp" > "$tmp/remat"
    chmod +x "$tmp/remat"
    out=$(cd "$tmp" && REMAT_BIN="$tmp/remat" timeout 60 python3 "$OLDPWD/$script" --help 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then echo "FAIL: $name --help: exit $rc: $(echo "$out" | tail -1)"; fail=1; fi
    stem=${name%.py}
    case "$out" in *"$stem"*|*usage:*) ;; *) echo "FAIL: $name --help: no usage text: $(echo "$out" | head -1)"; fail=1 ;; esac
    if [ -e "$tmp/called" ]; then echo "FAIL: $name --help ran remat"; fail=1; fi
    rm -rf "$tmp"
done
[ $n -ge 20 ] || { echo "FAIL: only $n scripts given"; fail=1; }
[ $fail -eq 0 ] && echo "PASS: $n bench scripts answer --help without running"
exit $fail
