#!/usr/bin/env python3
"""exp9_precision.py - every shipped model's peak in fp32 and in bf16 (docs/precision.md).

  python3 bench/exp9_precision.py [--quick] [--threads N]

For each shipped model and each precision ("precision": "fp32" | "bf16" in a copy of
the model file):
1. `remat run --trace` records plain backpropagation at a small batch (training steps:
   --no-input-grad); the tiny models at their own batch.
2. From that recording, at the model file's own T and N: `simulate` predicts the
   baseline's peak live and reserved bytes, `search --level 1` and `--level 4` the
   greedy plans' peaks (live bytes: --budget-on live --device-overhead 0).
3. SEW-ResNet-34 at T=4, batch 80 (SpikingJelly's 2-GPU bf16 benchmark: 10.75 GiB ->
   6.20 GiB, -42.3 %, at level 1): the same predictions at --N 80 from the N=1 recording.
4. A real bf16 run of vgg-dvs at batch 4 confirms the bf16 prediction made from the
   batch-2 recording (peaks are deterministic). --quick skips it.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

# name, batch size the recording uses (None: the file's own)
MODELS = [
    ("tiny-mlp-lif", None), ("tiny-3block-if", None), ("tiny-resnet-bn", None), ("tiny-vgg-dvs", None),
    ("tiny-sew-resnet", None), ("mlp-lif", 8), ("3block-if", 8), ("resnet-bn", 8), ("vgg-dvs", 2),
    ("sew-resnet18-cifar", 2), ("sew-resnet18", 1), ("sew-resnet34", 1),
]
PRECISIONS = ("fp32", "bf16")
PUBLISHED_SEW34_N80 = {"base_gib": 10.75, "level1_gib": 6.20, "reduction_pct": -42.3,
                       "source": "SpikingJelly, SEW-ResNet-34 on ImageNet, T=4, 2-GPU DDP in bf16, batch 80 per GPU"}


def record(name, prec, rec_n, threads, commands):
    base = os.path.join(C.ROOT, "data/models/%s.json" % name)
    changes = {"precision": prec}
    if rec_n:
        changes["N"] = rec_n
    tag = "%s-%s-N%s" % (name, prec, rec_n or "file")
    model = C.write_model(base, tag, **changes)
    trace = os.path.join(C.WORK, tag + "-base.h5")
    cmd = [C.remat_bin(), "run", "--model", model, "--trace", trace, "--iters", 2, "--threads", threads,
           *C.TRAIN_FLAGS]
    commands.append(C.show(cmd))
    C.run(cmd, timeout=3600)
    return model, trace


def predict(trace, n, commands):
    row = {}
    for alloc, key in (("exact", "live"), ("caching", "reserved")):
        args = ["simulate", "--trace", trace, "--N", n, "--allocator", alloc]
        commands.append(C.show([C.remat_bin(), *args]))
        row["base_" + key] = C.remat(*args)["peak_bytes"]
    for lvl in (1, 4):
        args = ["search", "--trace", trace, "--N", n, "--level", lvl, "--budget-on", "live", "--device-overhead", "0"]
        commands.append(C.show([C.remat_bin(), *args]))
        d = C.remat(*args)
        row["level%d_live" % lvl] = d["peak_bytes"]
        row["level%d_label" % lvl] = d.get("label")
    return row


def main():
    quick = C.arg_quick()
    threads = C.arg_int("--threads", 2)
    rows, commands, traces = [], [], {}
    for name, rec_n in MODELS:
        with open(os.path.join(C.ROOT, "data/models/%s.json" % name)) as f:
            n_file = json.load(f)["N"]
        row = {"model": name, "N": n_file, "record_N": rec_n or n_file}
        for prec in PRECISIONS:
            _, trace = record(name, prec, rec_n, threads, commands)
            traces[(name, prec)] = trace
            for k, v in predict(trace, n_file, commands).items():
                row["%s_%s" % (prec, k)] = v
        row["bf16_over_fp32"] = row["bf16_base_live"] / row["fp32_base_live"]
        rows.append(row)
        print("%s N=%d: baseline fp32 %.1f MiB, bf16 %.1f MiB (%.3fx); level 4 fp32 %.1f MiB, bf16 %.1f MiB" %
              (name, n_file, C.mib(row["fp32_base_live"]), C.mib(row["bf16_base_live"]), row["bf16_over_fp32"],
               C.mib(row["fp32_level4_live"]), C.mib(row["bf16_level4_live"])), flush=True)
    sew = {"model": "sew-resnet34", "T": 4, "N": 80, "published": PUBLISHED_SEW34_N80}
    for prec in PRECISIONS:
        p = predict(traces[("sew-resnet34", prec)], 80, commands)
        for k, v in p.items():
            sew["%s_%s" % (prec, k)] = v
        sew["%s_level1_reduction_pct" % prec] = 100.0 * (p["level1_live"] / p["base_live"] - 1)
    print("sew-resnet34 T=4 N=80: fp32 %.2f -> %.2f GiB (%+.1f %%), bf16 %.2f -> %.2f GiB (%+.1f %%) at level 1; "
          "published %.2f -> %.2f GiB (%+.1f %%)" %
          (sew["fp32_base_live"] / 2**30, sew["fp32_level1_live"] / 2**30, sew["fp32_level1_reduction_pct"],
           sew["bf16_base_live"] / 2**30, sew["bf16_level1_live"] / 2**30, sew["bf16_level1_reduction_pct"],
           PUBLISHED_SEW34_N80["base_gib"], PUBLISHED_SEW34_N80["level1_gib"], PUBLISHED_SEW34_N80["reduction_pct"]),
          flush=True)
    confirm = None
    if not quick:
        base = os.path.join(C.ROOT, "data/models/vgg-dvs.json")
        model = C.write_model(base, "vgg-dvs-bf16-N4", precision="bf16", N=4)
        pred = C.remat("simulate", "--trace", traces[("vgg-dvs", "bf16")], "--N", 4)
        cmd = [C.remat_bin(), "run", "--model", model, "--iters", 2, "--threads", threads, *C.TRAIN_FLAGS, "--json"]
        commands.append(C.show(cmd))
        meas = C.run_json(cmd, timeout=3600)
        confirm = {"model": "vgg-dvs", "precision": "bf16", "record_N": 2, "N": 4, "pred_live": pred["peak_bytes"],
                   "meas_live": meas["peak_live_bytes"], "pred_reserved": pred["peak_reserved_bytes"],
                   "meas_reserved": meas["peak_reserved_bytes"]}
        print("confirm vgg-dvs bf16 N=4: predicted %d B live, measured %d B" % (confirm["pred_live"],
                                                                              confirm["meas_live"]), flush=True)
    C.save("exp9_precision", {"command": "python3 bench/exp9_precision.py" + (" --quick" if quick else ""),
                              "commands": commands, "rows": rows, "sew_resnet34_n80": sew, "confirm": confirm,
                              "threads": threads}, rows)


if __name__ == "__main__":
    main()
