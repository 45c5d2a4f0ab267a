#!/usr/bin/env python3
"""exp17_sparse_forward.py - the reference conv2d forward on spike-like inputs: the dense
implicit GEMM, the zero-skipping GEMM (core/ref/sparse_gemm.h) and im2col + OpenBLAS; and
its weight gradient: dense against zero-skipping (core/ref/conv_sparse_dw.h).

  python3 bench/exp17_sparse_forward.py [--quick] [--isa avx2] [--densities 0.01,0.15,0.38,0.47p]

Runs `conv_bench REPS 2 10 1 DENSITIES only` (bench/conv_bench.c: 2 samples x T = 10, one
call of 20 rows as vgg-dvs's steps at N = 2 make them): for each conv shape of
the Spiking VGG and SEW-ResNet, each input density (the fraction of nonzero inputs; plain:
0/1 spikes as after a spiking neuron; with a p: multiples of 1/9 as after an average pool
of spikes) and 1 and 2 threads, the three forwards side by side, the zero-skipping one
forced on and off (remat_sparse_mode_set), best of 3 calls (2 with --quick). Rates are the
dense flops over the time (effective GFLOP/s); the sparse output is compared bit for bit
with the dense one (exit 1 on a difference). Then the weight gradient alone (a step of 4
samples, no input gradient), dense and zero-skipping forced, bits compared the same way
(saved as dw_rows). The one-thread rows are timed by the calling
thread's CPU time (REMAT_CLOCK=thread-cpu, set here: a shared machine's other jobs do not
count), the two-thread rows by the wall clock. OPENBLAS_CORETYPE as in exp8_conv_speed.py.
Saved as exp17_sparse_forward (exp17_sparse_forward_avx2 with --isa avx2).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

DENSITIES = "0.01,0.15,0.38,0.47p"


def main():
    quick = C.arg_quick()
    isa = C.arg_isa()
    dens = sys.argv[sys.argv.index("--densities") + 1] if "--densities" in sys.argv else DENSITIES
    if not re.fullmatch(r"(0(\.\d+)?|1(\.0*)?)p?(,(0(\.\d+)?|1(\.0*)?)p?)*", dens):
        sys.exit("exp17: --densities: %r: expected fractions in [0, 1], comma-separated, e.g. %s" % (dens, DENSITIES))
    exe = C.bench_bin("conv_bench")
    if not os.access(exe, os.X_OK):
        sys.exit("exp17: %s not built (bazel build -c opt //bench:conv_bench)" % exe)
    env = dict(os.environ)
    env.setdefault("OPENBLAS_CORETYPE", C.best_openblas_coretype())
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    env.pop("OPENBLAS_L2_SIZE", None)
    env["REMAT_CLOCK"] = "thread-cpu"
    cmd = [exe, "2" if quick else "3", "2", "10", "1", dens, "only"]
    _, out, _, _ = C.run(cmd, ok=(0, 1), env=env, timeout=3600)
    print(out, end="")
    fwd_out, _, dw_out = out.partition("weight gradient on spike-like inputs")
    rows, dw_rows = [], []
    for line in dw_out.splitlines():
        m = re.match(r"(.+?)\s+(\d)\s+([\d.]+)(p?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(same|DIFF)$", line)
        if m:
            dw_rows.append({"shape": m.group(1).strip(), "threads": int(m.group(2)), "density": float(m.group(3)),
                            "values": "pooled" if m.group(4) else "spikes", "dense_gflops": float(m.group(5)),
                            "sparse_gflops": float(m.group(6)), "sparse_over_dense": float(m.group(7)),
                            "bits": m.group(8)})
    for line in fwd_out.splitlines():
        m = re.match(r"(.+?)\s+(\d)\s+([\d.]+)(p?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(same|DIFF)$",
                     line)
        if m:
            rows.append({"shape": m.group(1).strip(), "threads": int(m.group(2)), "density": float(m.group(3)),
                         "values": "pooled" if m.group(4) else "spikes", "dense_gflops": float(m.group(5)),
                         "sparse_gflops": float(m.group(6)), "openblas_gflops": float(m.group(7)),
                         "sparse_over_dense": float(m.group(8)), "sparse_over_openblas": float(m.group(9)),
                         "bits": m.group(10)})
    name = "exp17_sparse_forward" + ("_avx2" if isa == "avx2" else "")
    C.save(name, {"command": "python3 bench/exp17_sparse_forward.py" + (" --quick" if quick else "") +
                  (" --isa avx2" if isa == "avx2" else "") + (" --densities " + dens if dens != DENSITIES else ""),
                  "densities": dens, "clock": "thread CPU time at 1 thread, wall at 2",
                  "openblas_coretype": env["OPENBLAS_CORETYPE"], "isa_label": C.isa_label(isa),
                  "input_grad": True, "rows": rows, "dw_rows": dw_rows}, rows)
    if any(r["bits"] != "same" for r in rows) or not rows:
        sys.exit("exp17: the zero-skipping forward differed from the dense one (or no rows were parsed)")
    if any(r["bits"] != "same" for r in dw_rows) or not dw_rows:
        sys.exit("exp17: the zero-skipping weight gradient differed from the dense one (or no rows were parsed)")


if __name__ == "__main__":
    main()
