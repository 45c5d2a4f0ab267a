#!/usr/bin/env python3
"""exp4_pytorch.py - remat's reference backend against PyTorch on the CPU, same models.

  python3 bench/exp4_pytorch.py [--quick] [--rounds R] [--threads N] [--models a,b] [--isa avx2] [--save NAME]

For each shipped model (3block-if, mlp-lif, resnet-bn):
  PyTorch (Debian python3-torch, bench/pytorch/snn.py):
    plain       - autograd keeps what each op saves;
    checkpoint  - torch.utils.checkpoint(block, use_reentrant=False) around every block;
  remat (`remat run`, reference backend):
    plain       - no plan;
    ckpt/block  - the same plan as torch's: every block checkpointed, input uncompressed, k=1;
    level 4     - the plan `remat search --level 4` chooses from the baseline trace.
Step time: R rounds; each round runs every configuration once in a fresh process, four
training steps each (torch: one warm-up step and three timed ones; remat: --iters 4), and
takes the best step after the first; the ratios of a round are measured side by side.
Given: median and range over the rounds (3block-if, whose steps are the longest: one
round fewer, at least 2).
Peak: exact live tensor bytes of a step after the first (torch: profiler memory events,
bench/pytorch/measure.py; remat: peak_live_bytes), deterministic.
Both sides use the same number of threads (--threads, default 1; for torch also
OpenBLAS's, see measure.py) and treat the input alike: by default a training step (remat
--no-input-grad, torch input without requires_grad); --input-grad computes dL/dinput on
both sides.
--isa avx2: every library on its AVX2 code path (remat REMAT_SIMD=avx2, OpenBLAS
OPENBLAS_CORETYPE=Haswell, oneDNN ONEDNN_MAX_CPU_ISA=AVX2: common.arg_isa), each one's
kernel printed and stored; on an AVX-512 CPU that is the AVX2 code, not an AVX2 machine.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

MEASURE = os.path.join(C.ROOT, "bench", "pytorch", "measure.py")


# The environment of every torch process (main sets OPENBLAS_CORETYPE in it).
TORCH_ENV = {}


def torch_cmd(model, ckpt, threads, repeats, memory):
    cmd = [C.TORCH_PYTHON, MEASURE, "--model", model, "--threads", threads, "--repeats", repeats, "--json"]
    if ckpt:
        cmd.append("--checkpoint")
    if not memory:
        cmd.append("--no-memory")
    if C.TRAIN_FLAGS:
        cmd.append("--no-input-grad")
    return [str(c) for c in cmd]


def main():
    quick = C.arg_quick()
    isa = C.arg_isa()
    rounds = C.arg_int("--rounds", 2 if quick else 3)
    threads = C.arg_int("--threads", 1)
    models = ["3block-if", "mlp-lif", "resnet-bn"]
    if "--models" in sys.argv:  # name or name:N (the model file at batch N)
        models = sys.argv[sys.argv.index("--models") + 1].split(",")
    save_as = sys.argv[sys.argv.index("--save") + 1] if "--save" in sys.argv else "exp4_pytorch"
    rc = C.run([C.TORCH_PYTHON, "-c", "import torch; print(torch.__version__)"], ok=(0, 1))
    if rc[0] != 0:
        sys.exit("exp4: torch does not import in %s; run bench/setup-pytorch.sh" % C.TORCH_PYTHON)
    torch_version = rc[1].strip()
    # which BLAS Debian's torch calls (libblas.so.3 is an alternative: OpenBLAS or the
    # reference BLAS), on its best kernel: every torch process runs with OPENBLAS_CORETYPE
    # set (as bench/gemm_bench.c sets it for our comparison with OpenBLAS), and the probe
    # asks the loaded OpenBLAS which kernel it chose and times the models' linear layer
    coretype = C.best_openblas_coretype()
    TORCH_ENV.update(os.environ, OPENBLAS_CORETYPE=coretype)
    probe = ("import ctypes, torch, time, os\n"
             "torch.set_num_threads(%d)\n"
             "a = torch.rand(8192, 512); w = torch.rand(512, 512); torch.nn.functional.linear(a, w)\n"
             "best = min((lambda t0: (torch.nn.functional.linear(a, w), time.perf_counter() - t0)[1])"
             "(time.perf_counter()) for _ in range(5))\n"
             "print(2 * 8192 * 512 * 512 / best / 1e9)\n"
             "try:\n"
             "    f = ctypes.CDLL('libblas.so.3').openblas_get_corename\n"
             "    f.restype = ctypes.c_char_p\n"
             "    print(f().decode())\n"
             "except (OSError, AttributeError):\n"
             "    print('(not OpenBLAS)')\n" % threads)
    env = dict(TORCH_ENV, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    probe_out = C.run([C.TORCH_PYTHON, "-c", probe], env=env)[1].split()
    gemm, torch_kernel = float(probe_out[0]), probe_out[1]
    print("torch %s: BLAS %s, OpenBLAS kernel %s (OPENBLAS_CORETYPE=%s), linear 8192x512x512 %.1f GFLOP/s" % (
        torch_version, os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3"), torch_kernel, coretype, gemm))
    # which kernel torch's convolutions run (oneDNN's verbose log names the implementation
    # of each primitive, e.g. jit:avx512_core): one forward and backward of a 3x3 conv
    conv_probe = ("import torch\n"
                  "torch.set_num_threads(%d)\n"
                  "x = torch.rand(2, 64, 24, 24, requires_grad=True); w = torch.rand(64, 64, 3, 3, requires_grad=True)\n"
                  "torch.nn.functional.conv2d(x, w, padding=1).sum().backward()\n" % threads)
    log = C.run([C.TORCH_PYTHON, "-c", conv_probe], env=dict(env, DNNL_VERBOSE="1", ONEDNN_VERBOSE="1"))[1]
    impls = []
    for line in log.splitlines():
        f = line.split(",")
        if len(f) > 5 and f[1] == "exec" and f[3] == "convolution" and f[4] + " " + f[5] not in impls:
            impls.append(f[4] + " " + f[5])
    torch_conv = "; ".join(impls) if impls else "(not oneDNN)"
    print("torch convolutions: %s" % torch_conv)
    simd = C.remat_simd()
    print("remat: simd %s (REMAT_SIMD=%s)" % (simd, os.environ.get("REMAT_SIMD", "(unset)")))
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    commands, rows = [], []
    for entry in models:
        name, _, batch = entry.partition(":")
        model = os.path.join(C.ROOT, "data/models/%s.json" % name)
        if batch:
            model = C.write_model(model, "%s-N%s" % (name, batch), N=int(batch))
        import json
        with open(model) as f:
            spec = json.load(f)
        trace = os.path.join(C.WORK, "%s-exp4-base.h5" % name)
        os.makedirs(C.WORK, exist_ok=True)
        cmd = ["run", "--model", model, "--iters", 2, "--threads", threads, "--trace", trace] + C.TRAIN_FLAGS
        C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        l4 = os.path.join(C.WORK, "%s-exp4-level4.json" % name)
        cmd = ["search", "--trace", trace, "--budget-on", "live", "--level", 4, "--out", l4]
        l4res = C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        perblock = C.write_plan(name, [{"name": b["name"], "checkpoint": True} for b in spec["blocks"]],
                                "%s-ckpt-per-block" % name, "every block checkpointed, uncompressed, k=1 "
                                "(what torch.utils.checkpoint per block does)")
        configs = [("torch plain", "torch", False), ("torch checkpoint", "torch", True),
                   ("remat plain", "remat", None), ("remat ckpt/block", "remat", perblock),
                   ("remat level 4", "remat", l4)]
        meas = {c[0]: [] for c in configs}
        peaks = {}
        # torch peaks: one profiled pass each (deterministic)
        for cname, kind, arg in configs:
            if kind != "torch":
                continue
            cmd = torch_cmd(model, arg, threads, 0, True)
            d = C.run_json(cmd, env=TORCH_ENV)
            peaks[cname] = d["peak_live_bytes"]
            commands.append(C.show(cmd))
        # 3block-if's steps are the longest (about 80 GFLOP): one round fewer keeps run-all in time
        model_rounds = max(2, rounds - 1) if name == "3block-if" else rounds
        for r in range(model_rounds):
            for cname, kind, arg in configs:
                if kind == "torch":
                    cmd = torch_cmd(model, arg, threads, C.MEASURE_ITERS - 1, False)
                    d = C.run_json(cmd, env=TORCH_ENV)
                    meas[cname].append(d["step_time_min_s"])
                else:
                    cmd = [C.remat_bin(), "run", "--model", model, "--iters", C.MEASURE_ITERS, "--threads", threads]
                    cmd += C.TRAIN_FLAGS
                    if arg:
                        cmd += ["--plan", arg]
                    cmd = [str(c) for c in cmd] + ["--json"]
                    d = C.run_json(cmd)
                    meas[cname].append(C.steady(d)["step_time_s"])
                    peaks[cname] = C.steady(d)["peak_live_bytes"]
                if r == 0:
                    commands.append(C.show(cmd))
        tp = meas["torch plain"]
        for cname, kind, arg in configs:
            row = {"model": name, "T": spec["T"], "N": spec["N"], "config": cname, "peak_bytes": peaks[cname],
                   "rounds": model_rounds,
                   "step_s": C.stats(meas[cname]),
                   "time_vs_torch_plain": C.stats([a / b for a, b in zip(meas[cname], tp)]),
                   "peak_vs_torch_plain": peaks[cname] / peaks["torch plain"],
                   "plan": l4res.get("label") if cname == "remat level 4" else ""}
            rows.append(row)
            print("%-10s %-17s peak %8.1f MiB (%.2fx torch plain)  step %.3f s (%.3f..%.3f; %.2fx torch plain)" % (
                name, cname, C.mib(row["peak_bytes"]), row["peak_vs_torch_plain"], row["step_s"]["median"],
                row["step_s"]["min"], row["step_s"]["max"], row["time_vs_torch_plain"]["median"]), flush=True)
    C.save(save_as, {
        "title": "Against PyTorch on the CPU",
        "command": "python3 bench/exp4_pytorch.py" + (" --quick" if quick else "") +
                   " --rounds %d --threads %d" % (rounds, threads) + ("" if isa == "native" else " --isa " + isa) +
                   ((" --models %s --save %s" % (",".join(models), save_as)) if save_as != "exp4_pytorch" else ""),
        "torch": torch_version, "torch_blas": blas, "torch_blas_kernel": torch_kernel, "torch_conv_kernel": torch_conv, "openblas_coretype": coretype,
        "isa": isa, "isa_label": C.isa_label(isa), "remat_simd": simd,
        "torch_gemm_gflops": gemm, "rounds": rounds, "threads": threads, "commands": commands, "rows": rows},
        [{"model": r["model"], "config": r["config"], "peak_bytes": r["peak_bytes"],
          "step_s_median": r["step_s"]["median"], "step_s_min": r["step_s"]["min"], "step_s_max": r["step_s"]["max"],
          "time_vs_torch_plain_median": r["time_vs_torch_plain"]["median"],
          "peak_vs_torch_plain": r["peak_vs_torch_plain"]} for r in rows])


if __name__ == "__main__":
    main()
