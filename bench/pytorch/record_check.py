#!/usr/bin/python3
"""record_check.py - remat's prediction of a recorded PyTorch step against the step measured.

  PYTHONPATH=python:../shared/third_party/spikingjelly /usr/bin/python3 bench/pytorch/record_check.py \\
      [--models dense,conv,vgg,sew18] [--remat bazel-bin/tools/remat] [--json OUT.json] [--markdown]

For each model (small inputs, CPU, SpikingJelly multi-step modules): record the plain
training step once (remat_torch.record, 2 steps), then for each plan of a sample (each
block checkpointed alone, all blocks, spans of two blocks, a split):

- predicted: `remat simulate --trace plain.h5 --plan P --json`, peak_live_bytes;
- measured: the same module run under the plan, recorded the same way (the peak of live
  tensor bytes of its second step), executed by remat_torch.apply_plan (--executor
  apply_plan, the default), or by `checkpoint_units` below (--executor torch-nonreentrant:
  each unit, a block, a span or a segment of a split, run through
  torch.utils.checkpoint(use_reentrant=False, preserve_rng_state=False), its neurons reset
  before each run, so the recomputation starts from the state the forward started from).

Times: recording the plain step (wall seconds) and each prediction (wall seconds of
`remat simulate`).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

import remat_torch
from remat_torch import _sj
from remat_torch import record as R

# ---- the executor of the comparison ---------------------------------------------------


class _Unit(nn.Module):
    """A checkpointed unit: its modules run in order, recomputed in backward."""

    def __init__(self, mods):
        super().__init__()
        self.body = nn.Sequential(*mods)

    def _run(self, x):
        _sj.reset(self.body)
        return self.body(x)

    def forward(self, x):
        return checkpoint(self._run, x, use_reentrant=False, preserve_rng_state=False)


def _parent(net: nn.Module, qual: str):
    parts = qual.split(".")
    p = net
    for q in parts[:-1]:
        p = getattr(p, q)
    return p, parts[-1]


def checkpoint_units(net: nn.Module, units) -> nn.Module:
    """Rewires net in place: each unit (a list of module names that run one after the
    other: one block module, or consecutive modules of one parent) becomes a _Unit in
    the place of its first module, the others nn.Identity. Returns net."""
    mods = dict(net.named_modules())
    for names in units:
        for n in names:
            if n not in mods:
                raise ValueError("checkpoint_units: no module %r (a functional op?)" % n)
        if any(hasattr(mods[n], "src") and hasattr(mods[n], "kind") for n in names):
            raise ValueError("checkpoint_units: snn.py's Block reads its layers' sources itself; a unit inside it "
                             "(a split) is not run here")
        first_parent, first = _parent(net, names[0])
        unit = _Unit([mods[n] for n in names])
        setattr(first_parent, first, unit)
        for n in names[1:]:
            p, a = _parent(net, n)
            setattr(p, a, nn.Identity())
    return net


def parse_plan(model: dict, text: str):
    """Plan notation -> units (lists of module names) and whether a compressor is used."""
    blocks = [b["name"] for b in model["blocks"]]
    layers = {b["name"]: b["layers"] for b in model["blocks"]}
    units, compressed = [], False
    for entry in text.split(","):
        parts = entry.split("/")
        head = parts[0].split(":")
        b = head[0]
        compressed |= len(head) > 1 and head[1] != "none"
        span, splits = 1, []
        for o in parts[1:]:
            if o.startswith("span"):
                span = int(o[4:])
            elif o.startswith("split@"):
                splits.append(o[6:])
        i = blocks.index(b)
        covered = blocks[i:i + span]
        mods = model.get("_modules", {})
        if not splits:  # a block that is a module runs as that module (a residual block's add inside)
            units.append([n for c in covered for n in ([c] if c in mods else layers[c])])
            continue
        seq = [l for c in covered for l in layers[c]]
        cuts = [0] + [seq.index(s) for s in splits] + [len(seq)]
        for a, z in zip(cuts, cuts[1:]):
            units.append(seq[a:z])
    return units, compressed


# ---- the models -----------------------------------------------------------------------

def _sj_modules():
    from spikingjelly.activation_based import functional, layer, neuron, surrogate
    return functional, layer, neuron, surrogate


def dense():
    functional, layer, neuron, surrogate = _sj_modules()
    torch.manual_seed(0)
    net = nn.Sequential(layer.Linear(64, 128), neuron.LIFNode(), layer.Linear(128, 128), neuron.LIFNode(),
                        layer.Linear(128, 10), neuron.IFNode())
    functional.set_step_mode(net, "m")
    return net, (64,), 8, 4


def conv():
    functional, layer, neuron, surrogate = _sj_modules()
    torch.manual_seed(0)
    net = nn.Sequential(layer.Conv2d(2, 4, 3, padding=1), layer.BatchNorm2d(4), neuron.LIFNode(),
                        layer.MaxPool2d(2), layer.Conv2d(4, 8, 3, padding=1), layer.BatchNorm2d(8), neuron.IFNode(),
                        layer.Flatten(), layer.Linear(8 * 4 * 4, 10), neuron.LIFNode())
    functional.set_step_mode(net, "m")
    return net, (2, 8, 8), 4, 2


def vgg():
    """A spiking VGG written from SpikingJelly's layer.* modules and LIFNode (the shipped
    spiking_vgg* end in an upsampling AdaptiveAvgPool2d((7, 7)) below 224 x 224)."""
    functional, layer, neuron, surrogate = _sj_modules()
    torch.manual_seed(0)
    lif = lambda: neuron.LIFNode(tau=2.0, surrogate_function=surrogate.ATan(), detach_reset=True)
    net = nn.Sequential(
        layer.Conv2d(2, 8, 3, padding=1, bias=False), layer.BatchNorm2d(8), lif(),
        layer.Conv2d(8, 8, 3, padding=1, bias=False), layer.BatchNorm2d(8), lif(), layer.MaxPool2d(2),
        layer.Conv2d(8, 16, 3, padding=1, bias=False), layer.BatchNorm2d(16), lif(), layer.MaxPool2d(2),
        layer.Flatten(), layer.Linear(16 * 4 * 4, 10), lif())
    functional.set_step_mode(net, "m")
    return net, (2, 16, 16), 4, 2


def sew18():
    functional, layer, neuron, surrogate = _sj_modules()
    from spikingjelly.activation_based.model import sew_resnet
    torch.manual_seed(0)
    net = sew_resnet.sew_resnet18(spiking_neuron=neuron.IFNode, cnf="ADD", num_classes=10,
                                  surrogate_function=surrogate.ATan(), detach_reset=True)
    functional.set_step_mode(net, "m")
    return net, (3, 32, 32), 2, 1


def wide():
    """A wide spike input into a narrow first layer: the compressors' own temporaries (the sparse one's int64
    positions, decompressing) are at the step's peak."""
    functional, layer, neuron, surrogate = _sj_modules()
    torch.manual_seed(0)
    net = nn.Sequential(layer.Linear(4096, 8), neuron.LIFNode(), layer.Linear(8, 10), neuron.LIFNode())
    functional.set_step_mode(net, "m")
    return net, (4096,), 8, 4


MODELS = {"dense": dense, "conv": conv, "vgg": vgg, "sew18": sew18, "wide": wide}

# remat's shipped models as bench/pytorch/snn.py writes them in PyTorch (its own autograd neurons): checked with
# the torch-nonreentrant executor (apply_plan imports SpikingJelly and torch.nn modules, not snn.py's layers)
SNN_MODELS = ("tiny-mlp-lif", "tiny-3block-if", "tiny-resnet-bn", "tiny-vgg-dvs", "tiny-sew-resnet")


def snn_model(name: str):
    """snn.SNN of data/models/<name>.json and that model file with its layers and blocks renamed to the modules'
    qualified names (blocks.<b>.layers.<i>, blocks.<b>), so plans name what the recording names."""
    import snn
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = snn.load_model(os.path.join(root, "data", "models", name + ".json"))
    torch.manual_seed(0)
    net = snn.SNN(spec)
    ren = {}
    for bi, b in enumerate(spec["blocks"]):
        for li, ln in enumerate(b["layers"]):
            ren[ln] = "blocks.%d.layers.%d" % (bi, li)
    model = json.loads(json.dumps(spec))
    model.pop("path", None)
    for k in [k for k in model if k.startswith("_")]:
        del model[k]
    for l in model["layers"]:
        l["name"] = ren[l["name"]]
        for f in ("input", "from"):
            if f in l and l[f] != "input":
                l[f] = ren[l[f]]
    for bi, b in enumerate(model["blocks"]):
        b["name"] = "blocks.%d" % bi
        b["layers"] = [ren[x] for x in b["layers"]]
    return net, spec, model


def plans_of(model: dict):
    """A sample: each block alone, all blocks, spans of two, a split of the first block
    that has more than two layers, each compressor on each block that takes it (the
    simulator refuses those that do not apply, with the reason), and time chunks on the
    blocks without batch norm."""
    names = [b["name"] for b in model["blocks"]]
    out = ["", *names, ",".join(names)]
    for c in ("bit", "bool", "uint8", "sparse"):
        out += ["%s:%s" % (n, c) for n in names[:2]]
    for i in range(0, len(names) - 1, 2):
        out.append("%s/span2" % names[i])
    for b in model["blocks"]:
        if len(b["layers"]) > 2:
            out.append("%s/split@%s" % (b["name"], b["layers"][len(b["layers"]) // 2]))
            break
    # time chunks, on the blocks without batch norm (apply_plan refuses k > 1 there): the smallest k and k = T on
    # each of the first two, the bit compressor on the first, and every such block at once
    T = int(model["T"])
    ks = [k for k in range(2, T + 1) if T % k == 0]
    types = {l["name"]: l["type"] for l in model["layers"]}
    free = [b["name"] for b in model["blocks"] if all(types[x] != "batchnorm" for x in b["layers"])]
    if ks and free:
        for n in free[:2]:
            out += ["%s/k%d" % (n, k) for k in sorted({ks[0], ks[-1]})]
        out.append("%s:bit/k%d" % (free[0], ks[0]))
        if len(free) > 1:
            out.append(",".join("%s/k%d" % (n, ks[0]) for n in free))
    return out


# ---- the check ------------------------------------------------------------------------

EXECUTORS = ("apply_plan", "torch-nonreentrant")


def simulate(remat: str, trace: str, plan: str, executor: str = "apply_plan", extra=()):
    t0 = time.perf_counter()
    p = subprocess.run([remat, "simulate", "--trace", trace, "--json", "--executor", executor] +
                       (["--plan", plan] if plan else []) + list(extra), capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        return None, p.stderr.strip(), dt
    return json.loads(p.stdout), "", dt


def batch(model: dict, shape, T: int, N: int):
    g = torch.Generator().manual_seed(1)
    x = (torch.rand([T, N] + list(shape), generator=g) < 0.3).float()
    labels = torch.randint(0, int(model["classes"]), (N,), generator=g)
    return x, labels


def check_model(name: str, remat: str, tmp: str, plans=None, log=print, executor: str = "apply_plan",
                reserved: bool = False, alloc_cfg: str = ""):
    """Rows of predicted against measured peak live bytes, one per plan. reserved: also the
    caching allocator model's peak reserved bytes, predicted (`--allocator caching` on the
    plain recording) and replayed from the measured step's own stream (it is then written to
    a file and simulated without a plan), under alloc_cfg (--allocator-config, "": PyTorch's
    defaults): row keys reserved_predicted, reserved_measured."""
    caching = (["--allocator", "caching"] + (["--allocator-config", alloc_cfg] if alloc_cfg else [])) if reserved else []
    if name in SNN_MODELS:
        import snn
        net, spec, mtext = snn_model(name)
        build = lambda: (snn_model(name)[0],)  # noqa: E731
        model = dict(mtext)
        x, labels = snn.make_batch(spec, net, input_grad=False)
        loss = lambda out, lab: snn.SNN.loss(net, out, lab)  # noqa: E731
        make_opt = lambda n: snn.make_optimizer(spec, n.parameters())  # noqa: E731
        executor = "torch-nonreentrant"
    else:
        build = MODELS[name]
        net, shape, T, N = build()
        mtext = remat_torch.to_model(net, input_shape=shape, T=T, N=N, input_kind="spikes")
        model = dict(mtext)
        x, labels = batch(model, shape, T, N)
        loss = mtext.get("loss", "rate_mse")
        make_opt = lambda n: torch.optim.SGD(n.parameters(), lr=0.1, momentum=0.9)  # noqa: E731
    model["_modules"] = {q: 1 for q, _ in net.named_modules()}
    trace = os.path.join(tmp, "%s-plain.h5" % name)
    opt = make_opt(net)
    t0 = time.perf_counter()
    plans = plans if plans is not None else plans_of(model)
    chunks = sorted({int(o[1:]) for p in plans for e in p.split(",") for o in e.split("/")[1:]
                     if o[:1] == "k" and o[1:].isdigit() and int(o[1:]) > 1})  # the chunk probes the plans use
    R.record(net, x, labels, out=trace, steps=2, optimizer=opt, model=mtext, loss=loss, chunks=chunks)
    rec_s = time.perf_counter() - t0
    rows = []
    for plan in plans:
        pred, why, sim_s = simulate(remat, trace, plan, executor, caching)
        row = {"model": name, "plan": plan or "none", "record_s": rec_s, "predict_s": sim_s, "executor": executor}
        if pred is None:
            row["refused"] = why
            rows.append(row)
            log("%-6s %-28s refused: %s" % (name, plan or "none", why))
            continue
        net2 = build()[0]
        try:
            if executor == "apply_plan":
                run = remat_torch.apply_plan(net2, mtext, plan or None)
            else:
                units, compressed = parse_plan(model, plan) if plan else ([], False)
                if compressed:
                    raise ValueError("this executor has no compressor")
                run = checkpoint_units(net2, units)
        except ValueError as e:
            row["refused"] = "not measured: %s" % e
            row["predicted"] = pred["peak_live_bytes"]
            rows.append(row)
            continue
        opt2 = make_opt(net2)
        mpath = os.path.join(tmp, "%s-measured.h5" % name) if reserved else None
        s = R.record(run, x, labels, out=mpath, steps=2, optimizer=opt2, model=None, classes=int(model["classes"]),
                     loss=loss)
        meas = s["steps"][-1]["peak_live_bytes"]
        row.update({"predicted": pred["peak_live_bytes"], "measured": meas, "plain": pred["recorded_peak_live_bytes"],
                    "error": (pred["peak_live_bytes"] - meas) / meas,
                    "executed_by": executor})
        if reserved:
            got, why, _ = simulate(remat, mpath, "", executor, caching)
            if got is None:
                raise RuntimeError("remat simulate --allocator caching on the measured step: %s" % why)
            row.update({"reserved_predicted": pred["peak_reserved_bytes"], "reserved_measured": got["peak_reserved_bytes"],
                        "measured_replayed": got["peak_live_bytes"]})
        rows.append(row)
        log("%-6s %-28s predicted %10d measured %10d error %+.3f %%" % (name, plan or "none", row["predicted"], meas,
                                                                     100 * row["error"]))
    return rows


def rescale_check(name: str, remat: str, tmp: str, sizes=(1, 2), at: int = 4, plans=None, log=print):
    """--N from two recordings: the plain step recorded at each of `sizes` and at `at` (every
    batch one sample repeated, so that the spike counts are proportional to N too), each plan
    of the sample predicted at `at` from the first two (`remat simulate --trace A --second-trace
    B --N at`) and from the recording at `at`; rows with both peaks, and the measured plain peak."""
    build = MODELS[name]
    paths, measured, rec_s = {}, {}, {}
    model = None
    for n in tuple(sizes) + (at,):
        net, shape, T, _ = build()
        mtext = remat_torch.to_model(net, input_shape=shape, T=T, N=n, input_kind="spikes")
        model = dict(mtext)
        x1, l1 = batch(model, shape, T, 1)
        paths[n] = os.path.join(tmp, "%s-N%d.h5" % (name, n))
        t0 = time.perf_counter()
        s = R.record(net, x1.repeat(1, n, *([1] * len(shape))), l1.repeat(n), out=paths[n], steps=2,
                     optimizer=torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9), model=mtext,
                     loss=mtext.get("loss", "rate_mse"))
        rec_s[n] = time.perf_counter() - t0
        measured[n] = s["steps"][-1]["peak_live_bytes"]
    a, b = sizes
    rows = []
    for plan in (plans if plans is not None else plans_of(model)):
        extra = ["--plan", plan] if plan else []
        t0 = time.perf_counter()
        p = subprocess.run([remat, "simulate", "--trace", paths[a], "--second-trace", paths[b], "--N", str(at), "--json"]
                           + extra, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        q = subprocess.run([remat, "simulate", "--trace", paths[at], "--json"] + extra, capture_output=True, text=True)
        row = {"model": name, "plan": plan or "none", "from_N": "%d,%d" % (a, b), "N": at, "predict_s": dt,
               "record_s": rec_s[at]}
        if p.returncode or q.returncode:
            row["refused"] = (p.stderr or q.stderr).strip().replace(tmp + os.sep, "")
        else:
            row["rescaled"] = json.loads(p.stdout)["peak_live_bytes"]
            row["recorded"] = json.loads(q.stdout)["peak_live_bytes"]
            row["error_bytes"] = row["rescaled"] - row["recorded"]
            if not plan:
                row["measured"] = measured[at]
        rows.append(row)
        log("%-6s %-28s N=%d from N=%d,%d: %s" % (name, plan or "none", at, a, b, row.get("refused") or
                                                  "rescaled %d recorded %d" % (row["rescaled"], row["recorded"])))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="dense,conv,vgg,sew18,wide," + ",".join(SNN_MODELS))
    ap.add_argument("--remat", default="bazel-bin/tools/remat")
    ap.add_argument("--tmp", default="/tmp/record_check")
    ap.add_argument("--executor", default="apply_plan", choices=EXECUTORS)
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--reserved", nargs="?", const="", default=None, metavar="ALLOC_CONF",
                    help="also compare the caching allocator model's peak reserved bytes, predicted against the "
                         "measured step's replay (under these --allocator-config settings; default PyTorch's)")
    a = ap.parse_args()
    os.makedirs(a.tmp, exist_ok=True)
    torch.set_num_threads(1)
    rows = []
    for m in a.models.split(","):
        rows += check_model(m, a.remat, a.tmp, executor=a.executor, reserved=a.reserved is not None,
                            alloc_cfg=a.reserved or "")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if a.markdown:
        print("| model | plan | predicted (B) | measured (B) | error | plain (B) |")
        print("|---|---|---:|---:|---:|---:|")
        for r in rows:
            if "measured" in r:
                print("| %s | `%s` | %d | %d | %+.3f %% | %d |" % (r["model"], r["plan"], r["predicted"], r["measured"],
                                                                100 * r["error"], r["plain"]))
            else:
                print("| %s | `%s` | %s | %s | | |" % (r["model"], r["plan"], r.get("predicted", ""), r["refused"]))
    errs = [abs(r["error"]) for r in rows if "error" in r]
    print("plans measured: %d, largest |error| %.4f %%" % (len(errs), 100 * max(errs) if errs else 0))
    off = [r for r in rows if "reserved_measured" in r and r["reserved_predicted"] != r["reserved_measured"]]
    if a.reserved is not None:
        print("reserved bytes: %d plans compared, %d differ%s" % (
            sum("reserved_measured" in r for r in rows), len(off),
            "".join("\n  %s %s: predicted %d, replayed %d" % (r["model"], r["plan"], r["reserved_predicted"],
                                                             r["reserved_measured"]) for r in off)))
    return 1 if (errs and max(errs) > 0.01) or off else 0


if __name__ == "__main__":
    sys.exit(main())
