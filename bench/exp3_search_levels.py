#!/usr/bin/env python3
"""exp3_search_levels.py - the greedy search levels 0-4 and --budget on 3block-if
(3 x Linear(512)-IF-Linear(512)-IF, T=16, N=512, C=512).

  python3 bench/exp3_search_levels.py [--quick] [--rounds R] [--threads N]

1. `remat run` without a plan records the baseline trace (--iters 2).
2. `remat search --level L` for L = 0..4 (preset memory, the default),
   `remat search --budget B` with B = the level-4 predicted peak, and with B = the
   smallest peak any plan reaches (`--budget 1B` exits 1 naming it): the chosen plans; and,
   for comparison, a plan file that checkpoints along time across the three blocks (one
   span, k = 4); the
   search time is the wall time of the command (median of S repeats; it includes reading
   the trace).
3. R rounds, each running every chosen plan once (`remat run --iters 4`: peak of the last
   step, best step time after the first):
   measured peak (deterministic) and step time (median and range over rounds), and the
   overhead against level 0 from the same round.
Published (SpikingJelly memopt, RTX 4090, PyTorch 2.11): 462.3 MiB -> 249.3 MiB at level
1-3, 248.8 MiB at level 4; 48.9 ms -> 93.5 ms (level 1) -> 60.1 ms (level 4).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402
import trace_peak  # noqa: E402

PUBLISHED = {0: (462.3, 48.9, None), 1: (249.3, 93.5, 66.4), 2: (249.3, 66.5, 833.2), 3: (249.3, 66.8, 684.9),
             4: (248.8, 60.1, 1687.5)}


def main():
    quick = C.arg_quick()
    rounds = C.arg_int("--rounds", 2 if quick else 3)
    srepeats = C.arg_int("--search-repeats", 3)
    threads = C.arg_int("--threads", 1)
    model = os.path.join(C.ROOT, "data/models/3block-if.json")
    trace = os.path.join(C.WORK, "3block-if-base.h5")
    os.makedirs(C.WORK, exist_ok=True)
    commands = []
    cmd = ["run", "--model", model, "--iters", 2, "--threads", threads, "--trace", trace] + C.TRAIN_FLAGS
    C.remat(*cmd)
    commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
    configs = []  # (name, plan path or None, search result, search times)
    for level in range(5):
        plan = os.path.join(C.WORK, "3block-if-level%d.json" % level)
        cmd = ["search", "--trace", trace, "--budget-on", "live", "--level", level, "--out", plan]
        res, times = None, []
        for _ in range(srepeats):
            res = C.remat(*cmd)
            times.append(res["_wall_s"])
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        configs.append(("level %d" % level, plan if level > 0 else None, res, times, level))
    budget = configs[4][2]["peak_bytes"]
    plan = os.path.join(C.WORK, "3block-if-budget.json")
    cmd = ["search", "--trace", trace, "--budget-on", "live", "--device-overhead", "0", "--budget", "%dB" % budget, "--out", plan]
    res, times = None, []
    for _ in range(srepeats):
        res = C.remat(*cmd)
        times.append(res["_wall_s"])
    commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
    configs.append(("--budget %.1f MiB" % C.mib(budget), plan, res, times, None))
    # the smallest peak any plan reaches ("nothing fits 1 B" names it), then the fastest plan there
    cmd = ["search", "--trace", trace, "--budget-on", "live", "--device-overhead", "0", "--budget", "1B"]
    low = C.remat(*cmd, ok=(1,))
    commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
    plan = os.path.join(C.WORK, "3block-if-minpeak.json")
    cmd = ["search", "--trace", trace, "--budget-on", "live", "--device-overhead", "0", "--budget", "%dB" % low["min_peak_bytes"], "--out", plan]
    res, times = None, []
    for _ in range(srepeats):
        res = C.remat(*cmd)
        times.append(res["_wall_s"])
    commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
    configs.append(("--budget %.1f MiB (min)" % C.mib(low["min_peak_bytes"]), plan, res, times, None))
    # checkpointing along time across the three blocks (one span, k = 4 = sqrt(T)), predicted too
    plan = C.write_plan("3block-if", [{"name": "b1", "checkpoint": True, "k": 4, "span": 3}], "3block-if-span",
                        "the three blocks as one unit, 4 time chunks across all layers")
    cmd = ["simulate", "--trace", trace, "--plan", plan]
    res = C.remat(*cmd)
    commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
    res["label"] = "span of 3 blocks, k=4"
    configs.append(("span, k=4 (plan file)", plan, res, [], None))
    # what is live at the peak of plain and of the level-4 plan (predicted traces)
    at_peak = {}
    for name, plan in (("level 0", None), ("level 4", configs[4][1])):
        out = os.path.join(C.WORK, "3block-if-%s-pred.h5" % name.replace(" ", ""))
        cmd = ["simulate", "--trace", trace, "--out", out] + (["--plan", plan] if plan else [])
        C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        pk = trace_peak.peak(out)
        pk["tensors"] = [t for t in pk["tensors"] if t["bytes"] >= 1 << 20]
        at_peak[name] = pk
        commands.append("python3 bench/trace_peak.py " + C.rel(out))
    meas = {c[0]: [] for c in configs}
    for r in range(rounds):
        for name, plan, _, _, _ in configs:
            cmd = ["run", "--model", model, "--iters", C.MEASURE_ITERS, "--threads", threads] + C.TRAIN_FLAGS + (
                    ["--plan", plan] if plan else [])
            d = C.remat(*cmd)
            meas[name].append(C.steady(d))
            if r == 0:
                commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
    base = meas["level 0"]
    rows = []
    for name, plan, res, times, level in configs:
        m = meas[name]
        peak = max(x["peak_live_bytes"] for x in m)
        row = {"config": name, "level": level, "plan": res.get("label") or ("(budget plan)" if level is None else ""),
               "peak_bytes": peak, "peak_reserved_bytes": max(x["peak_reserved_bytes"] for x in m),
               "predicted_peak_bytes": res.get("peak_live_bytes", res.get("peak_bytes")),
               "predicted_step_s": res.get("step_time_s"),
               "vs_level0_pct": 100.0 * (peak / base[0]["peak_live_bytes"] - 1),
               "step_s": C.stats([x["step_time_s"] for x in m]),
               "overhead_pct": C.stats([100 * (x["step_time_s"] / b["step_time_s"] - 1) for x, b in zip(m, base)]),
               "search_s": C.stats(times)}
        if level is not None:
            pub = PUBLISHED[level]
            row["published"] = {"peak_MiB": pub[0], "step_ms": pub[1], "search_ms": pub[2]}
        if level is None and "budget_bytes" in res:
            row["budget_bytes"] = res["budget_bytes"]
            row["plan"] = res.get("label") or str(res.get("plan"))
        rows.append(row)
        print("%-24s peak %7.1f MiB (%+6.1f %%) step %.3f s (%+6.1f %%) search %s  %s" % (
            name, C.mib(peak), row["vs_level0_pct"], row["step_s"]["median"], row["overhead_pct"]["median"],
            "%.3f s" % row["search_s"]["median"] if times else "-", row["plan"]), flush=True)
    C.save("exp3_search_levels", {
        "title": "Search levels on 3block-if (T=16, N=512, C=512)",
        "command": "python3 bench/exp3_search_levels.py" + (" --quick" if quick else "") +
                   " --rounds %d --threads %d" % (rounds, threads),
        "rounds": rounds, "threads": threads, "search_repeats": srepeats, "commands": commands, "rows": rows,
        "at_peak": at_peak},
        [{"config": r["config"], "peak_bytes": r["peak_bytes"], "vs_level0_pct": r["vs_level0_pct"],
          "step_s_median": r["step_s"]["median"], "overhead_pct_median": r["overhead_pct"]["median"],
          "search_s_median": r["search_s"]["median"], "plan": r["plan"]} for r in rows])


if __name__ == "__main__":
    main()
