#!/usr/bin/env python3
"""exp0_gemm.py - the reference backend's deterministic GEMM against OpenBLAS on its widest
core (bench/gemm_bench.c, built by //bench:gemm_bench), parsed into bench/results/exp0_gemm.json.

  python3 bench/exp0_gemm.py [--reps R] [--shapes all|linear|conv|convsample]

gemm_bench prints which kernels run (our SIMD path: core/ref/simd.h; OpenBLAS's core, which
it sets with OPENBLAS_CORETYPE to the widest one the CPU runs, since OpenBLAS 0.3.21
misdetects some CPUs), then per shape, layout (nt: C = A B^T, nn, tn), thread count and SIMD
path (every vector path the CPU has: --paths all) the best of R alternating calls in GFLOP/s
for ours and for cblas_sgemm on the same operands, their ratio, the largest relative
difference of the results, and whether the paths gave the same bits; on one thread also the
ratio from CPU time (cpu_ratio), which a loaded shared machine disturbs far less.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402


def main():
    reps = C.arg_int("--reps", 3)
    shapes = sys.argv[sys.argv.index("--shapes") + 1] if "--shapes" in sys.argv else "all"
    C.run(C.bazel_cmd() + ["build", "//bench:gemm_bench"], timeout=1800)
    binp = C.bench_bin("gemm_bench")
    args = [str(reps), "--paths", "all", "--shapes", shapes]
    rc, out, err, wall = C.run([binp] + args, timeout=3600)
    rows, openblas, ours = [], "?", "?"
    for line in out.splitlines():
        if line.startswith("# openblas: "):
            openblas = line[len("# openblas: "):]
        elif line.startswith("# ours: "):
            ours = line[len("# ours: "):]
        f = line.split()
        if len(f) != 13 or f[0] not in ("nt", "nn", "tn"):
            continue
        rows.append({"op": f[0], "threads": int(f[1]), "M": int(f[2]), "N": int(f[3]), "K": int(f[4]),
                     "path": f[5], "ours_gflops": float(f[6]), "openblas_gflops": float(f[7]), "ratio": float(f[8]),
                     "cpu_ratio": None if f[9] == "-" else float(f[9]), "max_rel_diff": float(f[10]), "bits": f[11],
                     "set": f[12]})
    for r in rows:
        print("%s thr %d %5dx%5dx%5d %-6s ours %7.1f openblas %7.1f GFLOP/s (%.2f; cpu %s) %s" % (
            r["op"], r["threads"], r["M"], r["N"], r["K"], r["path"], r["ours_gflops"], r["openblas_gflops"],
            r["ratio"], "-" if r["cpu_ratio"] is None else "%.2f" % r["cpu_ratio"], r["bits"]))
    if any(r["bits"] == "DIFF" for r in rows):
        sys.exit("exp0_gemm: two SIMD paths gave different bits (the determinism contract is broken)")
    C.save("exp0_gemm", {"input_grad": None, "title": "GEMM: reference backend against OpenBLAS",
                         "command": "python3 bench/exp0_gemm.py --reps %d%s" % (
                             reps, "" if shapes == "all" else " --shapes " + shapes),
                         "commands": ["bazel run //bench:gemm_bench -- " + " ".join(args)], "reps": reps,
                         "openblas_core": openblas, "ours_paths": ours, "wall_s": wall, "rows": rows}, rows)


if __name__ == "__main__":
    main()
