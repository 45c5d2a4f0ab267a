#!/usr/bin/env python3
"""exp0_gemm.py - the reference backend's deterministic GEMM against OpenBLAS
(bench/gemm_bench.c, built by //bench:gemm_bench), parsed into bench/results/exp0_gemm.json.

  python3 bench/exp0_gemm.py [--reps R]

gemm_bench prints, per shape, layout (nt: C = A B^T, nn, tn) and thread count, the best of
R timed calls in GFLOP/s for ours and for cblas_sgemm on the same operands, their ratio
and the largest relative difference of the results.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402


def main():
    reps = C.arg_int("--reps", 3)
    C.run(C.bazel_cmd() + ["build", "//bench:gemm_bench"], timeout=1800)
    binp = os.path.join(C.bazel_bin(), "bench", "gemm_bench")
    rc, out, err, wall = C.run([binp, str(reps)], timeout=1200)
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) != 9 or f[0] not in ("nt", "nn", "tn"):
            continue
        rows.append({"op": f[0], "threads": int(f[1]), "M": int(f[2]), "N": int(f[3]), "K": int(f[4]),
                     "ours_gflops": float(f[5]), "openblas_gflops": float(f[6]), "ratio": float(f[7]),
                     "max_rel_diff": float(f[8])})
    for r in rows:
        print("%s thr %d %5dx%5dx%5d ours %7.1f openblas %7.1f GFLOP/s (%.2f)" % (
            r["op"], r["threads"], r["M"], r["N"], r["K"], r["ours_gflops"], r["openblas_gflops"], r["ratio"]))
    C.save("exp0_gemm", {"input_grad": None, "title": "GEMM: reference backend against OpenBLAS",
                         "command": "python3 bench/exp0_gemm.py --reps %d" % reps,
                         "commands": ["bazel run //bench:gemm_bench -- %d" % reps], "reps": reps,
                         "wall_s": wall, "rows": rows}, rows)


if __name__ == "__main__":
    main()
