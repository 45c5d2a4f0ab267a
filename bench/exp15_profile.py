#!/usr/bin/env python3
"""exp15_profile.py - where a conv SNN's training step spends its time on the reference
backend: per layer type, forward / recompute / backward, from the ops of a recorded trace.

  python3 bench/exp15_profile.py [--quick] [--rounds R] [--threads 1,2] [--models vgg-dvs:2,sew-resnet18:1]
                                 [--compare-bin OTHER_REMAT [--compare-label TEXT]] [--workspace] [--save NAME]

For each model (name:N runs the model file at batch N), each thread count, plain
backpropagation and every block checkpointed (uncompressed, k=1): `remat run --iters 3
--trace` and the `/ops` of the trace's last step, summed per op kind (conv_fwd,
batchnorm_bwd, ...) and phase (forward, recompute, backward; the loss, optimiser,
copies and fills are "other"). Ops are timed by the executor around each kernel call, so
the shares add up to the step (the rest, allocation and bookkeeping, is "untimed").
With --compare-bin the other binary (e.g. the build before a change) runs the same
configurations, alternated with this one in every round (R rounds, the best step of each
side), so the before/after ratio is measured side by side on a shared machine.

--workspace: instead, the `workspace` allocations of one plain step (T=2, N=1: conv
workspaces depend on the layer shapes only) of every shipped conv model, for this binary
and the other: the largest one and their sum over the step (saved into NAME_workspace).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

# Read with the interpreter that has h5py (Debian's): op kind x phase -> seconds, for the
# last step of the trace, and that step's wall time.
READ_OPS = r"""
import h5py, json, sys
h = h5py.File(sys.argv[1], "r")
o = h["ops"]
names = o.attrs["op_names"].decode().split(",")
phases = o.attrs["phase_names"].decode().split(",")
it = o["iter"][:]
last = int(it.max())
sums = {}
for op, ph, a, b, i in zip(o["op"][:], o["phase"][:], o["t_start"][:], o["t_end"][:], it):
    if i != last:
        continue
    k = names[op] + "|" + phases[ph]
    sums[k] = sums.get(k, 0.0) + float(b - a)
print(json.dumps({"ops": sums, "step_s": float(h["iters"]["step_time_s"][last])}))
"""

READ_WS = r"""
import h5py, json, sys
h = h5py.File(sys.argv[1], "r")
e = h["events"]
role, kind, b = e["role"][:], e["kind"][:], e["bytes"][:]
names = e.attrs["role_names"].decode().split(",")
w = names.index("workspace")
sel = [int(x) for r, k, x in zip(role, kind, b) if r == w and k == 0]
print(json.dumps({"max": max(sel) if sel else 0, "sum": sum(sel), "peak_live": int(h["iters"]["peak_live_bytes"][-1])}))
"""

CONV_MODELS = ["vgg-dvs", "sew-resnet18", "sew-resnet18-cifar", "sew-resnet34"]


def workspace(bins):
    rows = []
    for name in CONV_MODELS:
        model = os.path.join(C.ROOT, "data/models/%s.json" % name)
        row = {"model": name}
        for label, binary in bins:
            trace = os.path.join(C.WORK, "exp15-ws-%s-%s.h5" % (name, label))
            C.run([binary, "run", "--model", model, "--T", 2, "--N", 1, "--iters", 1, "--trace", trace] + C.TRAIN_FLAGS)
            d = json.loads(C.run([C.TORCH_PYTHON, "-c", READ_WS, trace])[1])
            row.update({"%s_max_bytes" % label: d["max"], "%s_sum_bytes" % label: d["sum"],
                        "%s_peak_live_bytes" % label: d["peak_live"]})
        rows.append(row)
        print(name, row, flush=True)
    return rows


GROUPS = [("conv", ("conv_fwd", "conv_bwd")), ("batch norm", ("batchnorm_fwd", "batchnorm_bwd")),
          ("neuron", ("neuron_fwd", "neuron_bwd")), ("pool", ("pool_fwd", "pool_bwd")),
          ("add", ("add_fwd", "add_bwd")), ("linear", ("linear_fwd", "linear_bwd")),
          ("dropout", ("dropout_fwd", "dropout_bwd"))]
PHASES = ("forward", "recompute", "backward")


def group_of(op):
    for g, ops in GROUPS:
        if op in ops:
            return g
    return "other"


def profile(binary, model, plan, threads, trace):
    cmd = [binary, "run", "--model", model, "--iters", 3, "--threads", threads, "--trace", trace] + C.TRAIN_FLAGS
    if plan:
        cmd += ["--plan", plan]
    C.run([str(c) for c in cmd])
    d = json.loads(C.run([C.TORCH_PYTHON, "-c", READ_OPS, trace])[1])
    cells = {}
    for k, s in d["ops"].items():
        op, ph = k.split("|")
        key = (group_of(op), ph if ph in PHASES else "other")
        cells[key] = cells.get(key, 0.0) + s
    return d["step_s"], cells, [str(c) for c in cmd]


def main():
    rounds = C.arg_int("--rounds", 1 if C.arg_quick() else 2)
    threads_list = [int(t) for t in (sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv
                                     else "1,2").split(",")]
    models = (sys.argv[sys.argv.index("--models") + 1] if "--models" in sys.argv
              else "vgg-dvs:2,sew-resnet18:1").split(",")
    other = sys.argv[sys.argv.index("--compare-bin") + 1] if "--compare-bin" in sys.argv else None
    other_label = sys.argv[sys.argv.index("--compare-label") + 1] if "--compare-label" in sys.argv else None
    save_as = sys.argv[sys.argv.index("--save") + 1] if "--save" in sys.argv else "exp15_profile"
    bins = [("this", C.remat_bin())] + ([("other", os.path.abspath(other))] if other else [])
    os.makedirs(C.WORK, exist_ok=True)
    if "--workspace" in sys.argv:
        C.save(save_as + "_workspace", {"title": "conv workspaces", "compare_bin": other, "compare_label": other_label,
                                         "command": "python3 bench/exp15_profile.py --workspace%s" % (
                                             (" --compare-bin %s" % other) if other else ""),
                                         "rows": workspace(bins)})
        return
    rows, commands = [], []
    for entry in models:
        name, _, batch = entry.partition(":")
        model = os.path.join(C.ROOT, "data/models/%s.json" % name)
        with open(model) as f:
            spec = json.load(f)
        if batch:
            model = C.write_model(model, "%s-N%s" % (name, batch), N=int(batch))
        perblock = C.write_plan(name, [{"name": b["name"], "checkpoint": True} for b in spec["blocks"]],
                                "%s-ckpt-per-block" % name, "every block checkpointed, uncompressed, k=1")
        for threads in threads_list:
            for cname, plan in (("plain", None), ("ckpt/block", perblock)):
                best = {}
                for r in range(rounds):
                    for label, binary in bins:
                        trace = os.path.join(C.WORK, "exp15-%s-%s.h5" % (name, label))
                        step, cells, cmd = profile(binary, model, plan, threads, trace)
                        if r == 0 and label == "this":
                            commands.append(C.show(cmd))
                        if label not in best or step < best[label][0]:
                            best[label] = (step, cells)
                for label, _ in bins:
                    step, cells = best[label]
                    timed = sum(cells.values())
                    row = {"model": name, "N": int(batch) if batch else spec["N"], "T": spec["T"],
                           "threads": threads, "config": cname, "bin": label, "step_s": step,
                           "untimed_s": step - timed}
                    for (g, ph), s in sorted(cells.items()):
                        row["%s %s" % (g, ph)] = s
                    rows.append(row)
                line = "%-13s thr %d %-10s step %.3f s" % (name, threads, cname, best["this"][0])
                if other:
                    line += "  (other %.3f s: this/other %.2f)" % (best["other"][0], best["this"][0] / best["other"][0])
                print(line, flush=True)
    C.save(save_as, {"title": "Profile of conv SNN steps", "rounds": rounds, "threads": threads_list,
                     "compare_bin": other, "compare_label": other_label, "commands": commands, "rows": rows,
                     "command": "python3 bench/exp15_profile.py --rounds %d --threads %s --models %s%s" % (
                         rounds, ",".join(map(str, threads_list)), ",".join(models),
                         (" --compare-bin %s" % other) if other else "")})


if __name__ == "__main__":
    main()
