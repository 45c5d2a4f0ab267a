#!/usr/bin/env python3
"""exp2_batch_fits.py - the largest batch of mlp-lif that fits a 2 GiB budget, with and
without checkpointing, for T = 16..256, from `remat tune`; confirmed by real runs.

  python3 bench/exp2_batch_fits.py [--quick] [--confirm-T 16,256] [--threads N]

1. For each T: `remat run` without a plan at N=128 (--trace), then
   `remat tune --trace BASE --budget 2GiB --out PLAN`: the largest N with plain
   backpropagation and with the fastest plan that fits (rescaling the recorded trace;
   no model runs). Exact allocator: the budget bounds the peak of live tensor bytes,
   as torch.cuda.max_memory_allocated does for the published figures.
2. The same with checkpointing along time across the whole network (one span of the
   three blocks, K ~ sqrt(T) time chunks, the published scheme), whatever plan the
   tuner picked: the largest N by bisection on `remat simulate --N` (the same rescaled
   prediction the tuner uses).
3. For each T in --confirm-T (default 16 and 256, the two ends of the table; every T
   costs about a minute of CPU here, so the middle ones are left to --confirm-T
   16,32,64,128,256): one real run (`remat run --iters 1`) at the tuned N, which must
   fit, and one at 1.6 x that N, which must exceed the budget, both plain and with the
   tuned plan (and, at T=16, with the span plan). The confirming runs use --threads
   (default 2): only their peak matters.
Published (spikefit AutoTuner, 2 GB budget): 6463/15870 (2.46x) at T=16, 3242/9727
(3.00x), 1621/8471 (5.23x), 810/5631 (6.95x), 419/4351 (10.38x) at T=256.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

PUBLISHED = {16: (6463, 15870, 2.46), 32: (3242, 9727, 3.00), 64: (1621, 8471, 5.23), 128: (810, 5631, 6.95),
             256: (419, 4351, 10.38)}
BUDGET = 2 * 1024 ** 3


def largest_n(trace, plan, budget, commands):
    """Largest N whose predicted peak (remat simulate --N, exact allocator) fits the budget:
    bisection between a size that fits and one that does not."""
    def peak(n):
        return C.remat("simulate", "--trace", trace, "--plan", plan, "--N", n)["peak_live_bytes"]
    lo, hi = 1, 2
    while peak(hi) <= budget:
        lo, hi = hi, hi * 2
        if hi > (1 << 22):
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if peak(mid) <= budget:
            lo = mid
        else:
            hi = mid
    commands.append(C.show([C.remat_bin(), "simulate", "--trace", trace, "--plan", plan, "--N", lo, "--json"]))
    return lo


def main():
    quick = C.arg_quick()
    threads = C.arg_int("--threads", 2)
    confirm = [16] if quick else [16, 256]
    span_confirm = [16]  # a 2 GiB step with the span plan at T=256 takes minutes here
    if "--confirm-T" in sys.argv:
        confirm = [int(x) for x in sys.argv[sys.argv.index("--confirm-T") + 1].split(",") if x]
    base_model = os.path.join(C.ROOT, "data/models/mlp-lif.json")
    commands, rows = [], []
    for T in [16, 32, 64, 128, 256]:
        model = C.write_model(base_model, "mlp-lif-T%d" % T, T=T)
        trace = os.path.join(C.WORK, "mlp-lif-T%d-exp2-base.h5" % T)
        cmd = ["run", "--model", model, "--iters", 1, "--threads", threads, "--trace", trace] + C.TRAIN_FLAGS
        C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        plan = os.path.join(C.WORK, "mlp-lif-T%d-tuned.json" % T)
        cmd = ["tune", "--trace", trace, "--budget-on", "live", "--device-overhead", "0", "--budget", "2GiB", "--out", plan]
        tu = C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        plain_n, ck_n = tu["plain"]["value"], tu["checkpointed"]["value"]
        # checkpointing along time across the whole network (one span of the three blocks,
        # K ~ sqrt(T)): largest N by bisection on the simulator's rescaled prediction
        K = min((d for d in range(1, T + 1) if T % d == 0), key=lambda d: (abs(d - T ** 0.5), d))
        span = C.write_plan("mlp-lif", [{"name": "b1", "checkpoint": True, "k": K, "span": 3}],
                            "mlp-lif-T%d-span" % T, "span of the three blocks, K=%d" % K)
        span_n = largest_n(trace, span, BUDGET, commands)
        row = {"T": T, "plain_N": plain_n, "ckpt_N": ck_n, "gain": ck_n / plain_n,
               "plain_predicted_peak": tu["plain"]["peak_bytes"], "ckpt_predicted_peak": tu["checkpointed"]["peak_bytes"],
               "plan": tu["checkpointed"].get("label"), "tune_s": tu["_wall_s"],
               "span_N": span_n, "span_K": K, "span_gain": (span_n / plain_n) if span_n else None,
               "published": dict(zip(["plain_N", "ckpt_N", "gain"], PUBLISHED[T])), "confirm": {}}
        if T in confirm:
            runs = [("plain", plain_n, None), ("ckpt", ck_n, plan)]
            if T in span_confirm and span_n:
                runs.append(("span", span_n, span))
            for kind, n, p in runs:
                for scale in (1.0, 1.6):
                    N = int(round(n * scale))
                    mfile = C.write_model(base_model, "mlp-lif-T%d-N%d" % (T, N), T=T, N=N)
                    cmd = ["run", "--model", mfile, "--iters", 1, "--threads", threads] + C.TRAIN_FLAGS + (
                        ["--plan", p] if p else [])
                    d = C.remat(*cmd, timeout=3600)
                    commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
                    row["confirm"]["%s_x%.1f" % (kind, scale)] = {
                        "N": N, "peak_bytes": d["peak_live_bytes"], "fits": d["peak_live_bytes"] <= BUDGET,
                        "step_s": d["steps"][0]["step_time_s"], "wall_s": d["_wall_s"]}
                    print("  T=%d %s N=%d: measured peak %.1f MiB (%s 2 GiB), step %.1f s" % (
                        T, kind, N, C.mib(d["peak_live_bytes"]), "fits" if d["peak_live_bytes"] <= BUDGET else
                        "exceeds", d["steps"][0]["step_time_s"]), flush=True)
            c = row["confirm"]
            row["confirmed"] = all(c[k + "_x1.0"]["fits"] and not c[k + "_x1.6"]["fits"]
                                   for k in ("plain", "ckpt", "span") if k + "_x1.0" in c)
            row["plain_measured_peak"] = c["plain_x1.0"]["peak_bytes"]
            row["ckpt_measured_peak"] = c["ckpt_x1.0"]["peak_bytes"]
        rows.append(row)
        print("T=%3d plain N=%6d  ckpt N=%6d  gain %.2fx  span(K=%d) N=%s gain %s (published %d / %d, %.2fx)%s" % (
            T, plain_n, ck_n, row["gain"], K, span_n, "%.2fx" % row["span_gain"] if span_n else "-",
            PUBLISHED[T][0], PUBLISHED[T][1], PUBLISHED[T][2],
            ("  confirmed" if row.get("confirmed") else "  NOT confirmed") if T in confirm else ""), flush=True)
    C.save("exp2_batch_fits", {
        "title": "Largest batch under 2 GiB (mlp-lif)",
        "command": "python3 bench/exp2_batch_fits.py" + (" --quick" if quick else "") +
                   " --confirm-T %s --threads %d" % (",".join(str(t) for t in confirm), threads),
        "budget_bytes": BUDGET, "threads": threads, "confirm_T": confirm, "commands": commands, "rows": rows},
        [{"T": r["T"], "plain_N": r["plain_N"], "ckpt_N": r["ckpt_N"], "gain": r["gain"],
          "published_plain_N": r["published"]["plain_N"], "published_ckpt_N": r["published"]["ckpt_N"],
          "published_gain": r["published"]["gain"], "span_N": r["span_N"], "span_gain": r["span_gain"],
          "confirmed": r.get("confirmed", ""), "plan": r["plan"]}
         for r in rows])


if __name__ == "__main__":
    main()
