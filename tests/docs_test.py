"""docs_test.py - every command shown in README.md and docs/*.md runs and does what the
doc says (run by tests/docs_test.sh).

Each fenced ```sh block of a file runs, in order, as one bash script (set -e -o
pipefail) in a scratch folder of that file, where `remat` and `./remat` are the built
binary and data/ is the repository's. A block must exit 0. Markers, HTML comments on
the lines just before a block (invisible in the rendered doc):

    <!-- docs-test: expect "TEXT" -->     the block's output holds TEXT (repeatable)
    <!-- docs-test: skip (REASON) -->     not run: REASON says why (placeholder files,
                                           another build, minutes of work)
    <!-- docs-test: skip-file (REASON) --> anywhere in a file: none of its blocks run

Example: python3 tests/docs_test.py --remat bazel-bin/tools/remat --root . README.md docs/plots.md
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

BLOCK = re.compile(r"```(?:sh|bash)\n(.*?)```", re.S)
MARK = re.compile(r"<!--\s*docs-test:\s*(skip-file|skip|expect)\s*(.*?)\s*-->")


def blocks(text: str):
    """(line, code, skip reason or None, [expected texts]) of each sh block."""
    out = []
    for m in BLOCK.finditer(text):
        before = text[: m.start()].rstrip("\n").split("\n")
        skip, expect = None, []
        for line in reversed(before):  # the marker lines just above the fence
            mk = MARK.fullmatch(line.strip())
            if not mk:
                break
            if mk.group(1) == "skip":
                r = mk.group(2).strip()
                skip = (r[1:-1] if r.startswith("(") and r.endswith(")") else r) or "marked skip"
            elif mk.group(1) == "expect":
                expect.append(mk.group(2).strip().strip('"'))
        out.append((text[: m.start()].count("\n") + 1, m.group(1), skip, expect))
    return out


def run_file(path: str, remat: str, root: str) -> int:
    text = open(path).read()
    name = os.path.relpath(path, root)
    fm = re.search(r"<!--\s*docs-test:\s*skip-file\s*(.*?)\s*-->", text)
    if fm:
        r = fm.group(1).strip()
        print("%s: skipped: %s" % (name, r[1:-1] if r.startswith("(") and r.endswith(")") else r))
        return 0
    work = tempfile.mkdtemp(prefix="docs_test.")
    os.symlink(os.path.abspath(remat), os.path.join(work, "remat"))
    for d in ("data",):
        os.symlink(os.path.join(os.path.abspath(root), d), os.path.join(work, d))
    env = dict(os.environ, PATH=work + os.pathsep + os.environ.get("PATH", ""), REMAT_PROGRESS="0")
    failed = 0
    for line, code, skip, expect in blocks(text):
        where = "%s:%d" % (name, line)
        if skip:
            print("%s: skipped: %s" % (where, skip))
            continue
        t0 = time.monotonic()
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=work, env=env, capture_output=True,
                           text=True, timeout=300)
        dt = time.monotonic() - t0
        out = p.stdout + p.stderr
        bad = [e for e in expect if e not in out]
        if p.returncode != 0 or bad:
            failed += 1
            print("%s: FAILED (exit %d%s) in %.1f s:\n%s\n--- output (last 2000 characters):\n%s" %
                  (where, p.returncode, "; missing: " + "; ".join(bad) if bad else "", dt, code, out[-2000:]))
        else:
            print("%s: ok in %.1f s%s" % (where, dt, " (%d expectations)" % len(expect) if expect else ""))
    shutil.rmtree(work, ignore_errors=True)
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--remat", required=True, help="the built remat binary")
    ap.add_argument("--root", required=True, help="the repository root (data/ and the docs)")
    ap.add_argument("files", nargs="+", help="markdown files")
    a = ap.parse_args()
    failed = sum(run_file(f, a.remat, a.root) for f in a.files)
    print("docs test: %s" % ("every block ran as documented" if not failed else "%d block(s) FAILED" % failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
