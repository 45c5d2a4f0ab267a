#!/usr/bin/env python3
"""exp16_step_predict.py - how far a predicted step time is from the measured one, for the
questions a new user asks: record a plain step at one batch size, then ask for another
batch size, or for a plan's overhead.

  python3 bench/exp16_step_predict.py [--rounds R] [--threads N] [--iters I]
                                      [--models 'sew-resnet18:2:4,8;vgg-dvs:2:4'] [--save NAME]
  python3 bench/exp16_step_predict.py --final

--final runs the three sets of docs/benchmarks.md section 16 one after the other, each
saved under its own name (FINAL below): the five small models recorded at N=2 and asked
N=4..32 (5 rounds, 12 steps), the two conv models at their own small batch (2 rounds, 3
steps), both at one thread, and the small models again at --threads 2 (the wall clock:
REMAT_CLOCK=thread-cpu applies to one thread only). The small models' steps (0.2 to 100
ms) warm over several steps: the best of a 5-step run's last 4 was 0 to 23 % above the
best of a 12-step run's last 11 (by CPU time, 5 models, 5 rounds), as noisy as that, so
they are measured over 12 steps, about as many warm steps as the probe's best step is
chosen from. Example, on a quiet machine:

  python3 bench/exp16_step_predict.py --final && python3 bench/make_doc.py

For each entry name:N0:N1,N2,... (the model file at batch N0, asked at N1, N2, ...), in
each of R rounds (default 2):
  1. `remat run --iters 3 --trace` at N0, plain: the round's recording;
  2. for each asked N (and N0 itself): `remat run --N n --iters I` (I default 3; measured:
     the best step after the first) against `remat simulate --trace REC --N n` (predicted
     from the round's recording);
  3. at N0, the plan that checkpoints every block (uncompressed, k=1): predicted against
     measured step time, and the overhead over plain, predicted (simulate, both from the
     round's recording) against measured (both runs of this round).
Each error is the median over rounds of the round's error (a round records and measures
under the same load; a shared machine's load changes between rounds).
Error = predicted / measured - 1. The load average is recorded with every run, and the
clock (REMAT_CLOCK=thread-cpu in the environment: every run, recording and measured, times
its one thread's CPU time, which other jobs of a shared machine do not inflate).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402


def measured(model, n, threads, iters, plan=None):
    cmd = [C.remat_bin(), "run", "--model", model, "--N", n, "--iters", iters, "--threads", threads] + C.TRAIN_FLAGS
    if plan:
        cmd += ["--plan", plan]
    d = C.run_json([str(c) for c in cmd] + ["--json"])
    return C.steady(d)["step_time_s"], os.getloadavg()[0], C.show(cmd + ["--json"])


def predicted(trace, n, plan=None):
    cmd = [C.remat_bin(), "simulate", "--trace", trace, "--N", n, "--json"]
    if plan:
        cmd += ["--plan", plan]
    return C.run_json([str(c) for c in cmd])["step_time_s"], C.show(cmd)


SMALL = "mlp-lif:2:4,8,16,32;resnet-bn:2:4,8,16,32;3block-if:2:4,8,16,32;tiny-vgg-dvs:2:4,8,16,32;" \
        "tiny-sew-resnet:2:4,8,16,32"
CONV = "sew-resnet18:1:2,4;vgg-dvs:2:4"
# (saved as, models, threads, rounds, iters): the sets of section 16
FINAL = [("exp16_after_small", SMALL, 1, 5, 12), ("exp16_after_conv", CONV, 1, 2, 3),
         ("exp16_after_t2", SMALL, 2, 5, 12)]


def run_set(entries, rounds, threads, iters, save_as):
    """Records, predicts and measures every entry name:N0:N1,... of entries; saves the rows."""
    t0, load0 = time.time(), list(os.getloadavg())
    rows, commands = [], []
    for entry in entries:
        name, n0, asked = entry.split(":")
        n0 = int(n0)
        asked = [int(x) for x in asked.split(",") if x]
        base_model = os.path.join(C.ROOT, "data/models/%s.json" % name)
        with open(base_model) as f:
            spec = json.load(f)
        model = C.write_model(base_model, "%s-N%d" % (name, n0), N=n0)
        perblock = C.write_plan(name, [{"name": b["name"], "checkpoint": True} for b in spec["blocks"]],
                                "%s-ckpt-per-block" % name, "every block checkpointed, uncompressed, k=1")
        meas, pred = {}, {}
        for r in range(rounds):  # each round its own recording: recorded and measured under the same load
            trace = os.path.join(C.WORK, "exp16-%s-N%d-t%d-r%d.h5" % (name, n0, threads, r))
            cmd = ["run", "--model", model, "--iters", 3, "--threads", threads, "--trace", trace] + C.TRAIN_FLAGS
            C.remat(*cmd)
            if r == 0:
                commands.append(C.show([C.remat_bin()] + cmd))
            for n in [n0] + asked:
                t, load, c = measured(model, n, threads, iters)
                meas.setdefault(("plain", n), []).append((t, load))
                if r == 0:
                    commands.append(c)
            t, load, c = measured(model, n0, threads, iters, perblock)
            meas.setdefault(("ckpt/block", n0), []).append((t, load))
            if r == 0:
                commands.append(c)
            for cfg, n in meas:
                p, c = predicted(trace, n, perblock if cfg == "ckpt/block" else None)
                pred.setdefault((cfg, n), []).append(p)
                if r == 0:
                    commands.append(c)
        for (cfg, n), ms in sorted(meas.items()):
            ps = pred[(cfg, n)]
            errs = [p / t - 1 for p, (t, _) in zip(ps, ms)]
            row = {"model": name, "recorded_N": n0, "asked_N": n, "config": cfg, "kind":
                   ("same size" if n == n0 else "rescaled N x%g" % (n / n0)) + (", plan" if cfg != "plain" else ""),
                   "predicted_s": C.med(ps), "measured_s": C.med([t for t, _ in ms]),
                   "error_pct": 100 * C.med(errs), "loads": [l for _, l in ms]}
            rows.append(row)
            print("%-13s N %2d -> %2d %-10s predicted %.4f s measured %.4f s error %+.1f %% (load %s)" % (
                name, n0, n, cfg, row["predicted_s"], row["measured_s"], row["error_pct"],
                ", ".join("%.1f" % l for l in row["loads"])), flush=True)
        pov = [100 * (a / b - 1) for a, b in zip(pred[("ckpt/block", n0)], pred[("plain", n0)])]
        mov = [100 * (a[0] / b[0] - 1) for a, b in zip(meas[("ckpt/block", n0)], meas[("plain", n0)])]
        po, mo = C.med(pov), C.med(mov)
        diff = C.med([a - b for a, b in zip(pov, mov)])
        rows.append({"model": name, "recorded_N": n0, "asked_N": n0, "config": "overhead", "kind": "plan overhead",
                     "predicted_pct": po, "measured_pct": mo, "error_points": diff,
                 "rounds_predicted_pct": pov, "rounds_measured_pct": mov})
        print("%-13s ckpt/block overhead predicted %+.1f %% measured %+.1f %% (%+.1f points)" % (name, po, mo, diff),
              flush=True)
    # REMAT_CLOCK=thread-cpu times one thread only: above, remat keeps the wall clock
    clock = os.environ.get("REMAT_CLOCK", "wall") if threads == 1 else "wall"
    C.save(save_as, {"title": "Predicted against measured step time", "rounds": rounds, "threads": threads,
                     "clock": clock, "commands": commands, "rows": rows,
                     "loadavg_start": load0, "loadavg_end": list(os.getloadavg()), "elapsed_s": time.time() - t0,
                     "command": "python3 bench/exp16_step_predict.py --rounds %d --threads %d --iters %d --models '%s'"
                                " --save %s" % (rounds, threads, iters, ";".join(entries), save_as)})


def main():
    os.makedirs(C.WORK, exist_ok=True)
    if "--final" in sys.argv:
        for save_as, models, threads, rounds, iters in FINAL:
            print("exp16: %s (threads %d)" % (save_as, threads), flush=True)
            run_set(models.split(";"), rounds, threads, iters, save_as)
        return
    rounds = C.arg_int("--rounds", 2)
    threads = C.arg_int("--threads", 1)
    iters = C.arg_int("--iters", 3)
    entries = (sys.argv[sys.argv.index("--models") + 1] if "--models" in sys.argv else CONV).split(";")
    save_as = sys.argv[sys.argv.index("--save") + 1] if "--save" in sys.argv else "exp16_step_predict"
    run_set(entries, rounds, threads, iters, save_as)


if __name__ == "__main__":
    main()
