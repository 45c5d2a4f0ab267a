#!/usr/bin/env python3
"""exp6_prediction.py - predicted against measured peak and step time over each shipped
model's plan grid.

  python3 bench/exp6_prediction.py [--quick] [--per-model K] [--threads N]

For each shipped model (resnet-bn, mlp-lif, 3block-if):
  1. `remat run --iters 2 --trace` without a plan: the baseline trace;
  2. the plan grid, built here with the rules of core/model/plan_grid.h: per block, "stored" or
     checkpointed x compressor (none, bool, uint8, bit, sparse) x k dividing T (k = 1
     over batch norm) x (no split, or one split at each layer after the block's first;
     none in a block that ends in `add`), each option kept when the validator accepts it
     on that block alone (`remat simulate` exits 2 on a compressor that is not lossless
     on that input). The plans checked: the baseline, every valid block option on one
     block with the others stored (grid (a)), each option shape on every block (grid
     (b)), then plans drawn from the product of the valid options (grid (c), seeded);
     the baseline first, then the others in a seeded random order, until K valid plans
     per model (--per-model; the cap keeps bench/run-all under 20 minutes); plans the
     validator refuses (a compressor that is not lossless on that input) are skipped:
     `remat simulate` exits 2 on them;
  3. for each plan: `remat simulate --trace BASE --plan P` (predicted) and
     `remat run --plan P --iters 2` (measured, the second step of both).
Reported per model: plans compared, plans whose predicted peak (live, and reserved under
the caching model) equals the measured one to the byte, the largest error in bytes and
in percent, and the step-time error (median and largest absolute percent). Step times
are noisy on this shared 2-core machine (a few per cent between identical runs).
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

COMPRESSORS = ["none", "bool", "uint8", "bit", "sparse"]


def block_options(spec, block):
    T = spec["T"]
    by_name = {l["name"]: l for l in spec["layers"]}
    has_bn = any(by_name[n]["type"] == "batchnorm" for n in block["layers"])
    ends_add = by_name[block["layers"][-1]]["type"] == "add"
    ks = [1] if has_bn else [k for k in range(1, T + 1) if T % k == 0]
    splits = [None] + ([] if ends_add else block["layers"][1:])
    opts = [{"name": block["name"], "checkpoint": False}]
    for c in COMPRESSORS:
        for k in ks:
            for s in splits:
                o = {"name": block["name"], "checkpoint": True}
                if c != "none":
                    o["compressor"] = c
                if k != 1:
                    o["k"] = k
                if s:
                    o["splits"] = [s]
                opts.append(o)
    return opts


def label(plan):
    parts = []
    for o in plan:
        if o["checkpoint"]:
            parts.append("%s=ckpt/%s/k%d%s" % (o["name"], o.get("compressor", "none"), o.get("k", 1),
                                              "/split:" + o["splits"][0] if o.get("splits") else ""))
    return " ".join(parts) or "baseline"


def grid(spec, valid, seed=7):
    """The plans compared: baseline, (a) every valid option on one block, (b) each option
    shape on every block where valid, (c) 200 draws from the product of the valid
    options. valid(plan) -> bool decides which block options the validator accepts."""
    raw = [block_options(spec, b) for b in spec["blocks"]]
    stored = [o[0] for o in raw]
    opts = []
    for bi, bo in enumerate(raw):
        keep = [bo[0]]
        for o in bo[1:]:
            p = list(stored)
            p[bi] = o
            if valid(p):
                keep.append(o)
        opts.append(keep)
    out = [list(stored)]
    for bi, bo in enumerate(opts):  # (a)
        for o in bo[1:]:
            p = list(stored)
            p[bi] = o
            out.append(p)
    shapes = []  # (b)
    for o in [x for bo in opts for x in bo[1:]]:
        sh = (o.get("compressor", "none"), o.get("k", 1))
        if sh not in shapes:
            shapes.append(sh)
    for c, k in shapes:
        p = []
        for bi, bo in enumerate(opts):
            m = [o for o in bo[1:] if o.get("compressor", "none") == c and o.get("k", 1) == k and not o.get("splits")]
            p.append(m[0] if m else stored[bi])
        out.append(p)
    rng = random.Random(seed)  # (c)
    for _ in range(200):
        out.append([rng.choice(bo) for bo in opts])
    seen, uniq = set(), []
    for p in out:
        key = json.dumps(p, sort_keys=True)
        if key not in seen:
            seen.add(key)
            uniq.append(p)
    return uniq, opts


def main():
    quick = C.arg_quick()
    threads = C.arg_int("--threads", 1)
    caps = {"resnet-bn": 60, "mlp-lif": 24, "3block-if": 12}
    if quick:
        caps = {"resnet-bn": 30, "mlp-lif": 12, "3block-if": 6}
    if "--per-model" in sys.argv:
        k = C.arg_int("--per-model", 20)
        caps = {m: k for m in caps}
    commands, per_model, rows = [], [], []
    for name in ("resnet-bn", "mlp-lif", "3block-if"):
        model = os.path.join(C.ROOT, "data/models/%s.json" % name)
        with open(model) as f:
            spec = json.load(f)
        trace = os.path.join(C.WORK, "%s-exp6-base.h5" % name)
        os.makedirs(C.WORK, exist_ok=True)
        cmd = ["run", "--model", model, "--iters", 2, "--threads", threads, "--trace", trace]
        C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        cache = {}
        counter = [0]

        def simulate(p):
            key = json.dumps(p, sort_keys=True)
            if key not in cache:
                path = C.write_plan(name, p, "%s-grid-%04d" % (name, counter[0]), label(p))
                counter[0] += 1
                try:
                    cache[key] = (path, C.run_json([C.remat_bin(), "simulate", "--trace", trace, "--plan", path,
                                                    "--json"], ok=(0,)))
                except RuntimeError:
                    cache[key] = None
            return cache[key]

        plans, opts = grid(spec, lambda p: simulate(p) is not None)
        options_checked = len(cache)
        product = 1
        for bo in opts:
            product *= len(bo)
        order = [plans[0]] + random.Random(11).sample(plans[1:], len(plans) - 1)
        valid, refused = [], 0
        for p in order:
            if len(valid) >= caps[name]:
                break
            r = simulate(p)
            if r is None:
                refused += 1
                continue
            valid.append((p, r[0], r[1]))
        chosen = valid
        if chosen:
            commands.append(C.show([C.remat_bin(), "simulate", "--trace", trace, "--plan", chosen[-1][1], "--json"]))
        mrows = []
        for p, path, pred in chosen:
            cmd = [str(c) for c in [C.remat_bin(), "run", "--model", model, "--iters", 2, "--threads", threads,
                                    "--plan", path, "--json"]]
            d = C.run_json(cmd)
            meas = d["steps"][-1]
            prs = pred["steps"][-1] if pred.get("steps") else pred
            r = {"model": name, "plan": label(p), "measured_peak_live": meas["peak_live_bytes"],
                 "predicted_peak_live": prs["peak_live_bytes"],
                 "measured_peak_reserved": meas["peak_reserved_bytes"],
                 "predicted_peak_reserved": prs["peak_reserved_bytes"],
                 "measured_step_s": meas["step_time_s"], "predicted_step_s": prs["step_time_s"],
                 "nnz_estimated": pred.get("nnz_estimated", 0), "estimated_ops": pred.get("estimated_ops", 0)}
            r["live_err_bytes"] = r["predicted_peak_live"] - r["measured_peak_live"]
            r["reserved_err_bytes"] = r["predicted_peak_reserved"] - r["measured_peak_reserved"]
            r["live_err_pct"] = 100.0 * r["live_err_bytes"] / r["measured_peak_live"]
            r["reserved_err_pct"] = 100.0 * r["reserved_err_bytes"] / r["measured_peak_reserved"]
            r["time_err_pct"] = 100.0 * (r["predicted_step_s"] / r["measured_step_s"] - 1)
            mrows.append(r)
        commands.append(C.show(cmd))
        rows += mrows

        def worst(key):
            return max(mrows, key=lambda r: abs(r[key])) if mrows else None
        s = {"model": name, "T": spec["T"], "N": spec["N"], "grid_product": product, "grid_built": len(plans),
             "block_options": [len(bo) for bo in opts], "options_checked": options_checked,
             "refused": refused, "valid": len(valid), "compared": len(mrows),
             "live_exact": sum(1 for r in mrows if r["live_err_bytes"] == 0),
             "reserved_exact": sum(1 for r in mrows if r["reserved_err_bytes"] == 0)}
        for key, unit in (("live_err", "bytes"), ("reserved_err", "bytes")):
            w = worst(key + "_bytes")
            s["max_" + key + "_bytes"] = w[key + "_bytes"] if w else None
            s["max_" + key + "_pct"] = max(abs(r[key + "_pct"]) for r in mrows) if mrows else None
            s["max_" + key + "_plan"] = w["plan"] if w else None
        terr = sorted(abs(r["time_err_pct"]) for r in mrows)
        s["time_err_abs_pct"] = C.stats(terr)
        s["time_err_pct"] = C.stats([r["time_err_pct"] for r in mrows])
        per_model.append(s)
        print("%-10s grid %d (product %d): %d valid, %d compared; peak live exact %d/%d (max err %s B, %.3g %%); "
              "reserved exact %d/%d (max err %s B, %.3g %%); step time |err| median %.1f %%, max %.1f %%" % (
                  name, len(plans), product, len(valid), len(mrows), s["live_exact"], len(mrows),
                  s["max_live_err_bytes"], s["max_live_err_pct"] or 0, s["reserved_exact"], len(mrows),
                  s["max_reserved_err_bytes"], s["max_reserved_err_pct"] or 0,
                  s["time_err_abs_pct"]["median"] or 0, s["time_err_abs_pct"]["max"] or 0), flush=True)
    C.save("exp6_prediction", {"input_grad": True,
        "title": "Predicted against measured, over the plan grids",
        "command": "python3 bench/exp6_prediction.py" + (" --quick" if quick else "") + " --threads %d" % threads,
        "threads": threads, "caps": caps, "commands": commands, "models": per_model, "rows": rows}, rows)


if __name__ == "__main__":
    main()
