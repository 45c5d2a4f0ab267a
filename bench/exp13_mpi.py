#!/usr/bin/env python3
"""exp13_mpi.py - data-parallel steps over MPI (docs/mpi.md), parsed into
bench/results/exp13_mpi.json. Needs the --config=mpi build of remat and of
//bench:reduce_bench (bench/run-all builds both when mpirun is installed).

  python3 bench/exp13_mpi.py [--quick] [--before-bin OLD_REMAT [--before-label TEXT]]

Four parts, on this machine's 2 cores (mpirun --oversubscribe; the load average is
recorded, the cores are shared with other sessions):
 1. the fixed-order reduction (each rank's blocks broadcast in turn, every rank folding
    all blocks in ascending order) against a plain MPI_Allreduce of the same gradient,
    1 and 2 ranks, 8 blocks, 1 Mi and 4 Mi floats (bench/reduce_bench.c);
 2. training steps of mlp-lif (T=64, N=128): one process unblocked (--reduce-blocks 1),
    one process with 8 blocks (1 and 2 threads), 2 ranks with 8 blocks: the best step
    after the first, the peak live bytes of a rank, and whether the 8-block runs end with
    the same state (run --json's state_crc32); with --before-bin, the one-process runs of
    that binary too (an earlier build: before/after of the blocked kernels);
 3. `verify --grid --sample K` of mlp-lif (T=64, N=128) on 1, 2 and 4 ranks: wall time and
    whether the --no-times reports are byte-identical (more ranks than cores: oversubscribed,
    said so in the table);
 4. the per-rank peak against R (predicted, simulate --ranks R --reduce-blocks 8 at
    N = 32) for vgg-dvs and sew-resnet18, next to the one-process unblocked peak.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
commands = []


def mpirun(np, *args):
    return ["mpirun", "--oversubscribe", "-np", str(np)] + [str(a) for a in args]


def run_json(cmd, ok=(0,)):
    commands.append(C.show(cmd))
    return C.run_json(cmd, ok=ok, env=MPI_ENV)


def best_step(d):
    steps = [s["step_time_s"] for s in d["steps"]]
    return min(steps[1:] if len(steps) > 1 else steps)


def part_reduce(quick):
    exe = C.bench_bin("reduce_bench")
    rows = []
    for floats in ([1 << 20] if quick else [1 << 20, 1 << 22]):
        for R in (1, 2):
            d = run_json(mpirun(R, exe, floats, 8, 5 if quick else 11))
            commands[-1] = commands[-1].replace(exe, "bazel-bin/bench/reduce_bench")
            d["loadavg"] = round(os.getloadavg()[0], 2)
            rows.append(d)
    return rows


def part_steps(remat, quick, before):
    model = os.path.join(C.ROOT, "data", "models", "mlp-lif.json")
    iters = 3 if quick else 4
    rows = []
    runs = [("1 process, 1 block", remat, 0, 1, 1), ("1 process, 8 blocks", remat, 0, 8, 1),
            ("1 process, 8 blocks, 2 threads", remat, 0, 8, 2), ("2 ranks, 8 blocks", remat, 2, 8, 1)]
    if before:
        runs += [("before: 1 process, 1 block", before, 0, 1, 1), ("before: 1 process, 8 blocks", before, 0, 8, 1),
                 ("before: 1 process, 8 blocks, 2 threads", before, 0, 8, 2)]
    for label, exe, np, blocks, threads in runs:
        base = [exe, "run", "--model", model, "--iters", iters, "--reduce-blocks", blocks, "--threads", threads,
                "--json"] + C.TRAIN_FLAGS
        d = run_json(mpirun(np, *base) if np else [str(a) for a in base])
        if exe == before:
            commands[-1] = commands[-1].replace(before, "BEFORE/remat")
        rows.append({"run": label, "ranks": np or 1, "blocks": blocks, "threads": threads, "best_step_s": best_step(d),
                     "peak_live_bytes": d["ranks"][0]["peak_live_bytes"] if "ranks" in d else d["peak_live_bytes"],
                     "state_crc32": d.get("state_crc32"), "loss": d["loss"], "loadavg": round(os.getloadavg()[0], 2)})
    return rows


def part_grid(remat, quick):
    model = os.path.join(C.ROOT, "data", "models", "mlp-lif.json")
    k = 4 if quick else 8
    rows, texts = [], {}
    for R in (1, 2) if quick else (1, 2, 4):
        cmd = [remat, "verify", "--model", model, "--grid", "--sample", k, "--equivalence-only", "--json", "--no-times"]
        cmd = mpirun(R, *cmd) if R > 1 else [str(c) for c in cmd]
        commands.append(C.show(cmd))
        rc, out, err, wall = C.run(cmd, env=MPI_ENV)
        texts[R] = out
        rows.append({"ranks": R, "plans": k, "wall_s": wall, "loadavg": round(os.getloadavg()[0], 2),
                     "oversubscribed": R > (os.cpu_count() or 1)})
    for r in rows:
        r["same_report"] = texts[r["ranks"]] == texts[1]
        r["speedup"] = rows[0]["wall_s"] / r["wall_s"]
    return rows


def part_peaks(remat, quick):
    rows = []
    os.makedirs(C.WORK, exist_ok=True)
    for name, rec_n in (("vgg-dvs", 2), ("sew-resnet18", 1)):
        trace = os.path.join(C.WORK, "exp13-%s.h5" % name)
        model = os.path.join(C.ROOT, "data", "models", name + ".json")
        cmd = [remat, "run", "--model", model, "--N", rec_n, "--iters", 2, "--trace", trace] + C.TRAIN_FLAGS
        commands.append(C.show([str(c) for c in cmd]))
        C.run([str(c) for c in cmd])
        one = run_json([remat, "simulate", "--trace", trace, "--N", 32, "--json"])
        row = {"model": name, "N": 32, "unblocked_live": one["peak_live_bytes"],
               "unblocked_reserved": one["peak_reserved_bytes"]}
        for R in (1, 2, 4, 8):
            d = run_json([remat, "simulate", "--trace", trace, "--N", 32, "--ranks", R, "--reduce-blocks", 8,
                          "--json"])
            row["R%d_live" % R] = d["ranks"][0]["peak_live_bytes"]
            row["R%d_reserved" % R] = d["ranks"][0]["peak_reserved_bytes"]
        rows.append(row)
    return rows


def main():
    import shutil
    if "--help" in sys.argv or "-h" in sys.argv:
        print(__doc__.strip())
        return
    if not shutil.which("mpirun"):
        sys.exit("bench: exp13_mpi: no mpirun (apt-get install openmpi-bin libopenmpi-dev; bazel build --config=mpi)")
    quick = C.arg_quick()
    remat = C.remat_bin()
    result = {"command": "python3 bench/exp13_mpi.py" + (" --quick" if quick else ""), "quick": quick}
    result["reduce"] = part_reduce(quick)
    before = sys.argv[sys.argv.index("--before-bin") + 1] if "--before-bin" in sys.argv else None
    if before:
        result["command"] += " --before-bin BEFORE/remat"
        result["before_bin"] = before
        if "--before-label" in sys.argv:
            result["before_label"] = sys.argv[sys.argv.index("--before-label") + 1]
    result["steps"] = part_steps(remat, quick, before)
    result["grid"] = part_grid(remat, quick)
    result["peaks"] = part_peaks(remat, quick)
    result["commands"] = commands
    for r in result["reduce"]:
        print("reduce R=%d %d floats: fold %.4f s, allreduce %.4f s (medians)" % (
            r["ranks"], r["floats"], r["fold_median_s"], r["allreduce_median_s"]))
    for r in result["steps"]:
        print("%-22s best step %.3f s, peak live %d B, crc %s" % (r["run"], r["best_step_s"], r["peak_live_bytes"],
                                                                 r["state_crc32"]))
    for r in result["grid"]:
        print("grid R=%d: %.2f s (x%.2f), same report %s" % (r["ranks"], r["wall_s"], r["speedup"], r["same_report"]))
    for r in result["peaks"]:
        print(r)
    C.save("exp13_mpi", result, rows=result["peaks"])


if __name__ == "__main__":
    main()
