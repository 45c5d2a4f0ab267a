#!/usr/bin/env python3
"""exp7_conv_models.py - the convolutional SNNs against the published figures.

  python3 bench/exp7_conv_models.py [--quick] [--threads N]

For each model (the Spiking VGG of SpikingJelly's memory-optimisation tutorial on
CIFAR10-DVS, and SEW-ResNet-34 on ImageNet):
1. `remat run --trace` records plain backpropagation at a small batch on this CPU
   (training steps: --no-input-grad).
2. For each published batch size, from that one recording (`--N` rescales it):
   `simulate` predicts the baseline's peak live (allocated) and reserved bytes;
   `search --level 1..4` the greedy levels; `search --budget` the fastest plan under
   0.5x and 0.3x of the baseline's peak; `search --budget 1B` the smallest peak any
   plan reaches (it exits 1 naming it). Both allocator models (exact: live, the
   analogue of max_memory_allocated; caching: reserved, of max_memory_reserved).
3. A real run at the first published batch confirms the prediction for the baseline
   and the level-4 plan (peak bytes measured; step-time overhead measured).
Published:
 - Spiking VGG, CIFAR10-DVS, T=10 (SpikingJelly tutorial, RTX 4090): batch 8
   1022.2 MB allocated (1574 MB reserved) -> 589.2 MB (1332 MB) by the exhaustive
   search at the same step time (27.57 vs 27.66 ms); batch 32: 3830 MB -> 1973 MB at
   level 4.
 - SEW-ResNet-34, ImageNet, T=4: 8821 MB -> 2004 MB (0.23x) in the paper's table;
   2-GPU DDP in bf16 at batch 80 per GPU: 10.75 GiB -> 6.20 GiB (-42.3 %) at level 1.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

MODELS = [
    # name, record N, published batch sizes, published figures (free text for the doc)
    ("vgg-dvs", 2, [8, 32], {8: "1022.2 MB alloc / 1574 MB reserved -> 589.2 MB / 1332 MB (exhaustive search)",
                            32: "3830 MB -> 1973 MB (level 4)"}),
    ("sew-resnet34", 1, [32, 80], {32: "8821 MB -> 2004 MB (0.23x), paper table",
                                   80: "10.75 GiB -> 6.20 GiB (-42.3 %) at level 1, bf16 DDP"}),
]


def search(trace, n, alloc, *args, ok=(0,)):
    # alloc: "exact" compares live bytes, "caching" reserved bytes (no device overhead: the
    # published figures are the allocator's)
    on = "live" if alloc == "exact" else "reserved"
    return C.remat("search", "--trace", trace, "--N", n, "--budget-on", on, "--device-overhead", "0", *args, ok=ok)


def smallest(trace, n, alloc):
    d = search(trace, n, alloc, "--budget", "1", ok=(0, 1))
    return d


def one_size(name, trace, n):
    row = {"model": name, "N": n}
    for alloc in ("exact", "caching"):
        base = C.remat("simulate", "--trace", trace, "--N", n, "--allocator", alloc)
        key = "live" if alloc == "exact" else "reserved"
        row["base_" + key] = base["peak_bytes"]
        row["base_step_s"] = base.get("step_time_s")
        for lvl in (1, 2, 3, 4):
            d = search(trace, n, alloc, "--level", lvl)
            row["level%d_%s" % (lvl, key)] = d["peak_bytes"]
            row["level%d_label" % lvl] = d.get("label")
            row["level%d_overhead" % lvl] = d["step_time_s"] / d["baseline"]["step_time_s"] - 1
        for frac in (0.5, 0.3):
            d = search(trace, n, alloc, "--budget", int(frac * base["peak_bytes"]), ok=(0, 1))
            tag = "budget%02d_%s" % (int(frac * 100), key)
            row[tag] = d.get("peak_bytes") if d["_rc"] == 0 else None
            row[tag + "_overhead"] = (d["step_time_s"] / d["baseline"]["step_time_s"] - 1) if d["_rc"] == 0 else None
            row[tag + "_label"] = d.get("label")
        d = smallest(trace, n, alloc)
        row["floor_" + key] = d.get("smallest_peak_bytes", d.get("peak_bytes"))
        row["floor_label_" + key] = d.get("label") or d.get("smallest_label")
    return row


def confirm(name, model_path, n, trace, threads):
    """Real runs at batch n: the baseline and the level-4 plan, against the prediction."""
    m = C.write_model(model_path, "%s-N%d" % (name, n), N=n)
    plan = os.path.join(C.WORK, "%s-N%d-level4.json" % (name, n))
    pred = search(trace, n, "exact", "--level", 4, "--out", plan)
    base = C.steady(C.remat("run", "--model", m, "--iters", 2, "--threads", threads, *C.TRAIN_FLAGS))
    ckpt = C.steady(C.remat("run", "--model", m, "--plan", plan, "--iters", 2, "--threads", threads,
                            *C.TRAIN_FLAGS))
    return {"model": name, "N": n, "plan": pred.get("label"), "pred_base": pred["baseline"]["peak_bytes"],
            "pred_plan": pred["peak_bytes"], "meas_base": base["peak_live_bytes"], "meas_plan": ckpt["peak_live_bytes"],
            "meas_base_reserved": base["peak_reserved_bytes"], "meas_plan_reserved": ckpt["peak_reserved_bytes"],
            "meas_overhead": ckpt["step_time_s"] / base["step_time_s"] - 1}


def main():
    quick = C.arg_quick()
    threads = C.arg_int("--threads", 2)
    rows, confirms, commands = [], [], []
    for name, rec_n, sizes, _ in MODELS:
        model = os.path.join(C.ROOT, "data/models/%s.json" % name)
        small = C.write_model(model, "%s-N%d" % (name, rec_n), N=rec_n)
        trace = os.path.join(C.WORK, "%s-N%d-base.h5" % (name, rec_n))
        cmd = [C.remat_bin(), "run", "--model", small, "--trace", trace, "--iters", 2, "--threads", threads,
               *C.TRAIN_FLAGS]
        commands.append(C.show(cmd))
        C.run(cmd, timeout=3600)
        for n in sizes:
            r = one_size(name, trace, n)
            rows.append(r)
            print("%s N=%d: baseline %.1f MiB live / %.1f MiB reserved; level 4 %.1f MiB; floor %.1f MiB" %
                  (name, n, C.mib(r["base_live"]), C.mib(r["base_reserved"]), C.mib(r["level4_live"]),
                   C.mib(r["floor_live"] or 0)), flush=True)
        if not quick and name == "vgg-dvs":
            c = confirm(name, model, sizes[0], trace, threads)
            confirms.append(c)
            print("confirm %s N=%d: baseline predicted %d B, measured %d B; level 4 predicted %d B, measured %d B" %
                  (name, sizes[0], c["pred_base"], c["meas_base"], c["pred_plan"], c["meas_plan"]), flush=True)
    C.save("exp7_conv_models", {"command": "python3 bench/exp7_conv_models.py" + (" --quick" if quick else ""),
                                "record_commands": commands, "rows": rows, "confirm": confirms,
                                "published": {m[0]: m[3] for m in MODELS}, "threads": threads}, rows)


if __name__ == "__main__":
    main()
