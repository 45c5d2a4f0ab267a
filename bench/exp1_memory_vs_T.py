#!/usr/bin/env python3
"""exp1_memory_vs_T.py - peak memory against T for mlp-lif (three LIF layers of width 512,
batch 128), plain backpropagation against the best plan with time chunks.

  python3 bench/exp1_memory_vs_T.py [--quick] [--rounds R] [--threads N]

For T in 16, 32, 64, 128, 256 (model file data/models/mlp-lif.json with T changed):
  1. `remat run` without a plan (--trace: the baseline trace the simulator reads);
  2. `remat search --level 4` on that trace (levels 1-3 checkpoint blocks, split, add time
     chunks where the peak drops; 4 restores blocks where the peak does not rise) -> plan;
  3. `remat search --budget 1B` (exits 1, naming the smallest peak any plan reaches, by
     dynamic programming over the chain), then `remat search --budget <that peak>`: the
     fastest plan at the smallest peak ("min peak");
  4. K = the divisor of T nearest sqrt(T), inputs uncompressed (spikefit keeps floats):
     "per block": every block checkpointed on its own with K time chunks; "span": the
     three blocks as one checkpointed unit (plan field "span": 3) chunked along time
     across all layers -- the published scheme (checkpointing along time);
  5. `remat simulate` of every plan (predicted peak, step time);
  6. at the largest T, the tensors live at the peak of the predicted traces of plain,
     per-block and span (bench/trace_peak.py), to say where each peak comes from;
  7. R rounds, each running the baseline and every plan once (--iters 4: the peak of the
     last step, the best step time after the first), so every ratio is measured side by
     side in one round.
Peaks are deterministic (the same bytes every round); times vary, so the overhead is
given as the median and range of the per-round ratios.
Curve shapes: least-squares fit of peak = a + b * T^p over the five T for p in
[0, 1.5] (step 0.01): p near 1 is linear, near 0.5 is sqrt(T).
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402
import trace_peak  # noqa: E402

PUBLISHED = {  # spikefit README, RTX 5060 Laptop: T: (K, standard MB, checkpointed MB, saved %, time %)
    16: (4, 55, 36, 34.2, 13.9), 32: (4, 90, 44, 50.4, 43.8), 64: (8, 157, 49, 69.0, 50.7),
    128: (10, 292, 60, 79.4, 57.6), 256: (16, 563, 74, 86.8, 49.7)}


def nearest_divisor(T, target):
    divs = [d for d in range(1, T + 1) if T % d == 0]
    return min(divs, key=lambda d: (abs(d - target), d))


def fit_power(xs, ys):
    """Best p (and a, b, r2) of y = a + b x^p by least squares."""
    best = None
    for i in range(0, 151):
        p = i / 100.0
        zs = [x ** p for x in xs]
        n = len(xs)
        mz, my = sum(zs) / n, sum(ys) / n
        szz = sum((z - mz) ** 2 for z in zs)
        if szz == 0:
            continue
        b = sum((z - mz) * (y - my) for z, y in zip(zs, ys)) / szz
        a = my - b * mz
        sse = sum((a + b * z - y) ** 2 for z, y in zip(zs, ys))
        sst = sum((y - my) ** 2 for y in ys)
        r2 = 1 - sse / sst if sst else 1.0
        if best is None or sse < best["sse"]:
            best = {"p": p, "a": a, "b": b, "r2": r2, "sse": sse}
    return best


def fit_r2(xs, ys, p):
    zs = [x ** p for x in xs]
    n = len(xs)
    mz, my = sum(zs) / n, sum(ys) / n
    szz = sum((z - mz) ** 2 for z in zs)
    b = sum((z - mz) * (y - my) for z, y in zip(zs, ys)) / szz
    a = my - b * mz
    sse = sum((a + b * z - y) ** 2 for z, y in zip(zs, ys))
    sst = sum((y - my) ** 2 for y in ys)
    return {"p": p, "a": a, "b": b, "r2": 1 - sse / sst if sst else 1.0}


def main():
    quick = C.arg_quick()
    rounds = C.arg_int("--rounds", 2 if quick else 3)
    threads = C.arg_int("--threads", 1)
    Ts = [16, 32, 64, 128, 256]
    base_model = os.path.join(C.ROOT, "data/models/mlp-lif.json")
    commands, rows = [], []
    for T in Ts:
        model = C.write_model(base_model, "mlp-lif-T%d" % T, T=T)
        trace = os.path.join(C.WORK, "mlp-lif-T%d-base.h5" % T)
        cmd = ["run", "--model", model, "--iters", 2, "--threads", threads, "--trace", trace] + C.TRAIN_FLAGS
        C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        splan = os.path.join(C.WORK, "mlp-lif-T%d-level4.json" % T)
        cmd = ["search", "--trace", trace, "--budget-on", "live", "--level", 4, "--out", splan]
        srch = C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        # the smallest peak any plan reaches (DP over the chain; exit 1 says "nothing fits 1 B"
        # and names it), then the fastest plan at that peak
        cmd = ["search", "--trace", trace, "--budget-on", "live", "--device-overhead", "0", "--budget", "1B"]
        low = C.remat(*cmd, ok=(1,))
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        dplan = os.path.join(C.WORK, "mlp-lif-T%d-minpeak.json" % T)
        cmd = ["search", "--trace", trace, "--budget-on", "live", "--device-overhead", "0", "--budget", "%dB" % low["min_peak_bytes"], "--out", dplan]
        dp = C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        K = nearest_divisor(T, math.sqrt(T))
        kplan = C.write_plan("mlp-lif", [{"name": b, "checkpoint": True, "k": K} for b in ("b1", "b2", "b3")],
                             "mlp-lif-T%d-sqrtT" % T, "every block checkpointed, K=%d time chunks (K ~ sqrt(T))" % K)
        span = C.write_plan("mlp-lif", [{"name": "b1", "checkpoint": True, "k": K, "span": 3}],
                            "mlp-lif-T%d-span" % T, "the three blocks as one unit (span 3), K=%d time chunks "
                            "across all layers: checkpointing along time as published" % K)
        plans = {"base": None, "search": splan, "minpeak": dplan, "sqrtT": kplan, "span": span}
        pred = {}
        for name, plan in plans.items():
            cmd = ["simulate", "--trace", trace] + (["--plan", plan] if plan else [])
            pred[name] = C.remat(*cmd)
            commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        meas = {n: [] for n in plans}
        for r in range(rounds):
            for name, plan in plans.items():
                cmd = ["run", "--model", model, "--iters", C.MEASURE_ITERS, "--threads", threads] + C.TRAIN_FLAGS + (
                    ["--plan", plan] if plan else [])
                d = C.remat(*cmd)
                meas[name].append(C.steady(d))
                if r == 0:
                    commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        base_peak = meas["base"][0]["peak_live_bytes"]
        row = {"T": T, "N": 128, "baseline_peak_bytes": base_peak,
               "baseline_step_s": C.stats([m["step_time_s"] for m in meas["base"]]),
               "predicted_baseline_peak_bytes": pred["base"]["peak_live_bytes"],
               "published": dict(zip(["K", "standard_MB", "checkpointed_MB", "saved_pct", "time_pct"], PUBLISHED[T]))}
        for name in ("search", "minpeak", "sqrtT", "span"):
            peaks = sorted(set(m["peak_live_bytes"] for m in meas[name]))
            ratios = [m["step_time_s"] / b["step_time_s"] - 1 for m, b in zip(meas[name], meas["base"])]
            row[name] = {"peak_bytes": peaks[-1], "peaks_seen": peaks,
                         "saved_pct": 100.0 * (1 - peaks[-1] / base_peak),
                         "overhead_pct": C.stats([100 * x for x in ratios]),
                         "step_s": C.stats([m["step_time_s"] for m in meas[name]]),
                         "predicted_peak_bytes": pred[name]["peak_live_bytes"],
                         "predicted_step_s": pred[name]["step_time_s"],
                         "plan": {"search": srch.get("label"), "minpeak": dp.get("label"),
                                  "sqrtT": "every block ckpt, k=%d" % K, "span": "span of 3 blocks, k=%d" % K}[name]}
        row["search"]["search_predicted_peak_bytes"] = srch.get("peak_live_bytes")
        row["minpeak"]["search_seconds"] = dp.get("search", {}).get("seconds")
        rows.append(row)
        print("T=%3d base %8.1f MiB | level4 %8.1f MiB (%5.1f %% saved, %+6.1f %% time) | minpeak %8.1f MiB "
              "(%5.1f %% saved, %+6.1f %% time) | sqrtT K=%d %8.1f MiB "
              "(%5.1f %% saved, %+6.1f %% time) | span %8.1f MiB (%5.1f %% saved, %+6.1f %% time) | "
              "published %.1f %% saved, %+.1f %% time" % (
                  T, C.mib(base_peak), C.mib(row["search"]["peak_bytes"]), row["search"]["saved_pct"],
                  row["search"]["overhead_pct"]["median"], C.mib(row["minpeak"]["peak_bytes"]),
                  row["minpeak"]["saved_pct"], row["minpeak"]["overhead_pct"]["median"], K, C.mib(row["sqrtT"]["peak_bytes"]),
                  row["sqrtT"]["saved_pct"], row["sqrtT"]["overhead_pct"]["median"], C.mib(row["span"]["peak_bytes"]),
                  row["span"]["saved_pct"], row["span"]["overhead_pct"]["median"], PUBLISHED[T][3],
                  PUBLISHED[T][4]), flush=True)
    # what is live at the peak of the per-block and span plans at the largest T (predicted trace)
    at_peak = {}
    T = Ts[-1]
    for name in ("sqrtT", "span", "base"):
        out = os.path.join(C.WORK, "mlp-lif-T%d-%s-pred.h5" % (T, name))
        cmd = ["simulate", "--trace", os.path.join(C.WORK, "mlp-lif-T%d-base.h5" % T), "--out", out]
        if name != "base":
            cmd += ["--plan", os.path.join(C.WORK, "mlp-lif-T%d-%s.json" % (T, name))]
        C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        pk = trace_peak.peak(out)
        pk["tensors"] = [t for t in pk["tensors"] if t["bytes"] >= 1 << 20]
        at_peak[name] = pk
        commands.append("python3 bench/trace_peak.py " + C.rel(out))
    xs = [float(r["T"]) for r in rows]
    fits = {}
    for name, ys in (("baseline", [r["baseline_peak_bytes"] for r in rows]),
                     ("search", [r["search"]["peak_bytes"] for r in rows]),
                     ("minpeak", [r["minpeak"]["peak_bytes"] for r in rows]),
                     ("sqrtT", [r["sqrtT"]["peak_bytes"] for r in rows]),
                     ("span", [r["span"]["peak_bytes"] for r in rows]),
                     ("published_standard", [PUBLISHED[int(x)][1] * 1e6 for x in xs]),
                     ("published_checkpointed", [PUBLISHED[int(x)][2] * 1e6 for x in xs])):
        fits[name] = {"best": fit_power(xs, ys), "linear": fit_r2(xs, ys, 1.0), "sqrt": fit_r2(xs, ys, 0.5),
                      "growth_16_to_256": ys[-1] / ys[0]}
        print("fit %-24s best p=%.2f (r2 %.5f); linear r2 %.5f; sqrt r2 %.5f; T 16->256 grows %.2fx" % (
            name, fits[name]["best"]["p"], fits[name]["best"]["r2"], fits[name]["linear"]["r2"],
            fits[name]["sqrt"]["r2"], fits[name]["growth_16_to_256"]))
    C.save("exp1_memory_vs_T", {
        "title": "Memory against T (mlp-lif, N=128)",
        "command": "python3 bench/exp1_memory_vs_T.py" + (" --quick" if quick else "") +
                   " --rounds %d --threads %d" % (rounds, threads),
        "rounds": rounds, "threads": threads, "commands": commands, "rows": rows, "fits": fits,
        "at_peak_T": Ts[-1], "at_peak": at_peak},
        [{"T": r["T"], "baseline_peak_bytes": r["baseline_peak_bytes"],
          "search_peak_bytes": r["search"]["peak_bytes"], "search_saved_pct": r["search"]["saved_pct"],
          "search_overhead_pct_median": r["search"]["overhead_pct"]["median"],
          "minpeak_peak_bytes": r["minpeak"]["peak_bytes"], "minpeak_saved_pct": r["minpeak"]["saved_pct"],
          "minpeak_overhead_pct_median": r["minpeak"]["overhead_pct"]["median"],
          "sqrtT_peak_bytes": r["sqrtT"]["peak_bytes"], "sqrtT_saved_pct": r["sqrtT"]["saved_pct"],
          "sqrtT_overhead_pct_median": r["sqrtT"]["overhead_pct"]["median"],
          "span_peak_bytes": r["span"]["peak_bytes"], "span_saved_pct": r["span"]["saved_pct"],
          "span_overhead_pct_median": r["span"]["overhead_pct"]["median"],
          "published_saved_pct": r["published"]["saved_pct"], "published_time_pct": r["published"]["time_pct"]}
         for r in rows])


if __name__ == "__main__":
    main()
