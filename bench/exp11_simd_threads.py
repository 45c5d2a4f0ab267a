#!/usr/bin/env python3
"""exp11_simd_threads.py - the element-wise kernels on every SIMD path, and `--threads`
scaling on 1 and 2 cores, parsed into bench/results/exp11_simd_threads.json.

  python3 bench/exp11_simd_threads.py [--quick] [--rounds R] [--compare-bin OLD_REMAT --compare-label TEXT]

Three parts, each side by side in one run:
 1. bench/elementwise_bench.c (//bench:elementwise_bench): the neuron (LIF, IF), dropout and
    add kernels, forward and backward, per SIMD path this CPU has, best of 9 calls by the
    thread's CPU time, and each path's speed-up over the scalar (baseline x86-64) path;
    "same" when a path's outputs have the scalar path's bits.
 2. bench/gemm_bench.c: the 8192x512x512 products and the conv im2col products at 1 and 2
    threads, ours and OpenBLAS on its widest core (the benchmark picks and prints it).
 3. whole training steps (`remat run --no-input-grad`) of shipped models at --threads 1
    and 2, alternating, R rounds; the step time is the best step after the first of each
    run, the best over rounds; the load average is recorded with each run, since the
    2 cores are shared with other sessions.
With --compare-bin, also the user CPU time of the same runs (one thread) with another
remat binary (for instance one built from an older commit), best of R, next to this
tree's: the step-time change of a code change on the shipped models.
"""
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

MODELS = [("mlp-lif", 5), ("3block-if", 4), ("resnet-bn", 30), ("tiny-vgg-dvs", 300)]


def loadavg():
    return round(os.getloadavg()[0], 2)


def elementwise(reps):
    exe = C.bench_bin("elementwise_bench")
    _, out, _, _ = C.run([exe, str(reps)], timeout=1800)
    print(out, end="")
    lines = out.splitlines()
    paths = lines[1].split(":", 1)[1].split()
    rows = []
    for line in lines[3:]:
        f = line.split()
        if len(f) != 1 + 2 * len(paths) + 2 * (len(paths) - 1):
            continue
        r = {"kernel": f[0], "paths": {}}
        for i, p in enumerate(paths):
            r["paths"][p] = {"ms": float(f[1 + 2 * i]), "gbps": float(f[2 + 2 * i])}
        k = 1 + 2 * len(paths)
        for p in paths[1:]:
            r["paths"][p]["speedup_vs_scalar"] = float(f[k])
            r["paths"][p]["bits"] = f[k + 1]
            k += 2
        rows.append(r)
    return {"header": lines[0], "paths": paths, "rows": rows, "command": "bazel run //bench:elementwise_bench -- %d" % reps}


def gemm(reps):
    exe = C.bench_bin("gemm_bench")
    rows, core, ours, cmds = [], "?", "?", []
    for shapes in ("8192x512x512", "conv"):
        args = [str(reps), "--shapes", shapes]
        cmds.append("bazel run //bench:gemm_bench -- " + " ".join(args))
        la = loadavg()
        _, out, _, _ = C.run([exe] + args, timeout=3600)
        print(out, end="")
        for line in out.splitlines():
            if line.startswith("# openblas: "):
                core = line[len("# openblas: "):]
            elif line.startswith("# ours: "):
                ours = line[len("# ours: "):]
            f = line.split()
            if len(f) == 13 and f[0] in ("nt", "nn", "tn"):
                rows.append({"op": f[0], "threads": int(f[1]), "M": int(f[2]), "N": int(f[3]), "K": int(f[4]),
                             "ours_gflops": float(f[6]), "openblas_gflops": float(f[7]), "load": la})
    return {"openblas_core": core, "ours": ours, "rows": rows, "commands": cmds, "reps": reps}


def step(remat, model, iters, threads, env=None):
    cmd = [remat, "run", "--model", "data/models/%s.json" % model, "--iters", iters, "--no-input-grad",
           "--threads", threads, "--json"]
    la = loadavg()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    d = C.run_json(cmd)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"step_time_s": C.steady(d)["step_time_s"], "user_s": r1.ru_utime - r0.ru_utime, "load": la,
            "simd": d.get("simd"), "threads": d.get("threads")}, C.show(cmd)


def steps(rounds, compare_bin):
    remat = C.remat_bin()
    rows, cmds = [], []
    for model, iters in MODELS:
        best = {}
        for _ in range(rounds):
            for thr in (1, 2):
                s, cmd = step(remat, model, iters, thr)
                if cmd not in cmds:
                    cmds.append(cmd)
                b = best.setdefault(thr, {"step_time_s": 1e30, "user_s": 1e30, "loads": []})
                b["step_time_s"] = min(b["step_time_s"], s["step_time_s"])
                b["user_s"] = min(b["user_s"], s["user_s"])
                b["loads"].append(s["load"])
                b["simd"] = s["simd"]
            if compare_bin:
                s, cmd = step(compare_bin, model, iters, 1)
                b = best.setdefault("compare", {"step_time_s": 1e30, "user_s": 1e30, "loads": []})
                b["step_time_s"] = min(b["step_time_s"], s["step_time_s"])
                b["user_s"] = min(b["user_s"], s["user_s"])
                b["loads"].append(s["load"])
        r = {"model": model, "iters": iters, "t1": best[1], "t2": best[2],
             "speedup_2_threads": best[1]["step_time_s"] / best[2]["step_time_s"]}
        if compare_bin:
            r["compare"] = best["compare"]
            r["user_change"] = best[1]["user_s"] / best["compare"]["user_s"] - 1.0
        print("%-12s 1 thread %.4f s, 2 threads %.4f s (x%.2f); user %.2f s%s" % (
            model, best[1]["step_time_s"], best[2]["step_time_s"], r["speedup_2_threads"], best[1]["user_s"],
            ("; compare-bin user %.2f s (%+.1f %%)" % (best["compare"]["user_s"], 100 * r["user_change"]))
            if compare_bin else ""))
        rows.append(r)
    return rows, cmds


def main():
    quick = C.arg_quick()
    rounds = C.arg_int("--rounds", 2 if quick else 3)
    compare_bin = sys.argv[sys.argv.index("--compare-bin") + 1] if "--compare-bin" in sys.argv else None
    label = sys.argv[sys.argv.index("--compare-label") + 1] if "--compare-label" in sys.argv else compare_bin
    C.run(C.bazel_cmd() + ["build", "//bench:elementwise_bench", "//bench:gemm_bench", "//tools:remat"], timeout=1800)
    t0 = time.time()
    ew = elementwise(5 if quick else 9)
    gm = gemm(3 if quick else 9)
    st, cmds = steps(rounds, compare_bin)
    cpu = subprocess.run(["grep", "-m1", "flags", "/proc/cpuinfo"], capture_output=True, text=True).stdout
    flat = [{"model": r["model"], "iters": r["iters"], "step_s_1_thread": r["t1"]["step_time_s"],
             "step_s_2_threads": r["t2"]["step_time_s"], "speedup_2_threads": r["speedup_2_threads"],
             "user_s_1_thread": r["t1"]["user_s"], "compare_user_s": r.get("compare", {}).get("user_s"),
             "user_change": r.get("user_change")} for r in st]
    C.save("exp11_simd_threads", {
        "title": "Element-wise SIMD paths and --threads scaling", "input_grad": False,
        "command": "python3 bench/exp11_simd_threads.py" + (" --quick" if quick else "") +
                   ("" if rounds == (2 if quick else 3) else " --rounds %d" % rounds) +
                   (" --compare-bin OLD_REMAT" if compare_bin else ""),
        "compare_bin": compare_bin, "compare_label": label if compare_bin else None, "rounds": rounds, "avx512_cpu": "avx512f" in cpu,
        "elementwise": ew, "gemm": gm, "steps": st, "wall_s": time.time() - t0,
        "commands": [ew["command"]] + gm["commands"] + cmds}, flat)


if __name__ == "__main__":
    main()
