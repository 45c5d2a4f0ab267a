#!/usr/bin/env python3
"""exp8_conv_speed.py - the reference conv2d against im2col + OpenBLAS sgemm.

  python3 bench/exp8_conv_speed.py [--quick] [--isa avx2]

Runs bench/conv_bench.c (bazel-bin/bench/conv_bench): the convolutions of the Spiking
VGG and of SEW-ResNet, forward and backward, 1 and 2 threads, best of 3 calls, ours
and OpenBLAS side by side in one run. OPENBLAS_CORETYPE is set here (never in tests or
CI) to the best kernel this CPU supports: OpenBLAS 0.3.21 does not know every CPU and
otherwise silently falls back to a generic kernel (Prescott on the current Intel
machines). The kernel it used is printed by the benchmark and stored, with our SIMD path.
--isa avx2 runs both sides on their AVX2 code paths (REMAT_SIMD=avx2, OPENBLAS_CORETYPE=
Haswell: common.arg_isa), saved as exp8_conv_speed_avx2: what this CPU says of an AVX2
machine's kernels where no such machine is at hand.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402


def main():
    quick = C.arg_quick()
    isa = C.arg_isa()
    exe = C.bench_bin("conv_bench")
    if not os.access(exe, os.X_OK):
        sys.exit("exp8: %s not built (bazel build //bench:conv_bench)" % exe)
    env = dict(os.environ)
    env["OPENBLAS_CORETYPE"] = C.best_openblas_coretype()
    # OpenBLAS's threads would spin into our alternated 2-thread calls (gemm_bench.c)
    env.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    env.pop("OPENBLAS_L2_SIZE", None)
    cmd = [exe, "2" if quick else "3", "4"]
    _, out, _, _ = C.run(cmd, env=env, timeout=3600)
    print(out, end="")
    kernel = re.search(r"openblas kernel: (\S+)", out).group(1)
    ours = re.search(r"ours simd: (\S+)", out).group(1)
    rows = []
    for line in out.splitlines():
        m = re.match(r"(.+?)\s+(\d)\s+(fwd|bwd)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)\s+(\S+)$", line)
        if m:
            rows.append({"shape": m.group(1).strip(), "threads": int(m.group(2)), "pass": m.group(3),
                         "ours_gflops": float(m.group(4)), "openblas_gflops": float(m.group(5)),
                         "ratio": float(m.group(4)) / float(m.group(5)), "max_rel_diff": float(m.group(7)),
                         "cpu_ratio": None if m.group(8) == "-" else float(m.group(8))})
    name = "exp8_conv_speed" + ("" if isa == "native" else "_" + isa)
    C.save(name, {"command": "python3 bench/exp8_conv_speed.py" + (" --quick" if quick else "") +
                  ("" if isa == "native" else " --isa " + isa),
                  "isa": isa, "isa_label": C.isa_label(isa), "ours_simd": ours,
                  "openblas_kernel": kernel, "openblas_coretype": env["OPENBLAS_CORETYPE"],
                  "openblas_thread_timeout": env["OPENBLAS_THREAD_TIMEOUT"],
                  "rows": rows, "input_grad": True}, rows)


if __name__ == "__main__":
    main()
