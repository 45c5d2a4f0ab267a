#!/usr/bin/env bash
# docs_test.sh - every command shown in README.md and docs/*.md runs and does what the
# doc says (tests/docs_test.py: the markers that skip a block or expect its output).
# Args: the remat binary, the docs test script, then the markdown files.
set -u
remat="$1"; script="$2"; shift 2
root="$(cd "$(dirname "$1")" && pwd)"   # README.md sits at the repository root
exec python3 "$script" --remat "$remat" --root "$root" "$@"
