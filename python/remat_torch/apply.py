"""apply.py - remat's checkpoint plan, executed on the user's own module.

``apply_plan(net, model, plan)`` returns a module whose forward runs the layers of
``net`` (its own submodules, parameters and buffers: nothing is copied) in the order of
the imported model, and, for every block the plan checkpoints:

- keeps only each segment's input, in the plan's compressed form (``bit``: packed bits,
  ``bool``: one byte, ``uint8``: integers 0..255, ``sparse``: the positions of the ones,
  ``none``: the tensor itself), and recomputes the segment's internals in backward, as
  the reentrant ``torch.utils.checkpoint`` does (an autograd Function whose backward
  runs the segment again under ``enable_grad`` and backpropagates through it); a value
  the compressor cannot hold exactly raises ValueError when the forward meets it;
- with ``k`` time chunks, runs the segment ``T/k`` steps at a time, keeping the
  stateful modules' state (SpikingJelly's neuron potential ``v``, the multi-step
  dropout mask) at each chunk boundary; backward recomputes the chunks from last to
  first, each from its boundary state, and carries the gradient of the potential back
  across the boundary;
- ``span``: one unit over several blocks; ``splits``: a new segment (its own saved
  input) at that layer.

A recomputation restores the random-number state of the first pass (dropout draws the
same mask) and leaves batch-norm running statistics as the first pass left them.
Determinism: with ``k = 1`` every kernel sees the shapes of the plain step, so the loss,
gradients, batch-norm statistics and masks are bit-identical to ``net``'s plain step
(on the CPU with a fixed BLAS thread count: ``OPENBLAS_NUM_THREADS=1`` for Debian's torch).
With ``k > 1`` a convolution or linear layer inside a chunked segment runs on ``T/k * N``
samples and its weight gradient is summed chunk by chunk: PyTorch's kernels do not
promise that order, so those gradients can differ in the last bits (docs/pytorch.md
lists which kernels do and which plans stay bit-identical).
"""
import json
import os
from typing import Any, Dict, List, Sequence, Tuple, Union

import torch
import torch.nn as nn

from remat_torch import _sj
from remat_torch.importer import record_structure

COMPRESSORS = ("none", "bool", "uint8", "bit", "sparse")
_ONE_BITS = 0x3F800000  # 1.0f


# --- plans ---------------------------------------------------------------------------------------------------

def _parse_notation(text: str, where: str) -> Dict[str, Any]:
    """The plan notation of docs/model-and-plan-files.md ('b1:bit/k4,b2', 'no checkpointing') as a plan dict."""
    text = text.strip()
    if text == "no checkpointing":
        return {"blocks": []}
    blocks = []
    for entry in text.split(","):
        parts = entry.strip().split("/")
        name, _, comp = parts[0].partition(":")
        b: Dict[str, Any] = {"name": name, "checkpoint": True}
        if comp:
            b["compressor"] = comp
        for opt in parts[1:]:
            if opt.startswith("k") and opt[1:].isdigit():
                b["k"] = int(opt[1:])
            elif opt.startswith("span") and opt[4:].isdigit():
                b["span"] = int(opt[4:])
            elif opt.startswith("split@") and len(opt) > 6:
                b.setdefault("splits", []).append(opt[6:])
            else:
                raise ValueError("%s: %r: expected /kINT, /spanINT or /split@LAYER, got /%s" % (where, entry, opt))
        blocks.append(b)
    return {"blocks": blocks}


def load_plan(plan: Union[str, Dict[str, Any], None]) -> Tuple[Dict[str, Any], str]:
    """(plan dict, where it came from) from a plan file path, a dict, the plan notation, or None (no plan)."""
    if plan is None:
        return {"blocks": []}, "plan"
    if isinstance(plan, dict):
        return plan, "plan"
    if isinstance(plan, (str, os.PathLike)):
        p = os.fspath(plan)
        if p.endswith(".json") or os.path.isfile(p):
            with open(p) as f:
                try:
                    return json.load(f), p
                except ValueError as e:
                    raise ValueError("%s: (file): expected a plan file (JSON), got %s" % (p, e))
        return _parse_notation(p, "plan"), "plan"
    raise ValueError("plan: expected a plan file, a dict or the plan notation, got %s" % type(plan).__name__)


class _Unit:
    """A checkpointed unit: one block, or a span of blocks, cut into segments."""

    def __init__(self, blocks: List[str], first: int, last: int, compressor: str, k: int):
        self.blocks, self.first, self.last = blocks, first, last  # layer indices, inclusive
        self.compressor, self.k = compressor, k
        self.segments: List[Tuple[int, int]] = []


def _plan_units(model: Dict[str, Any], plan: Dict[str, Any], where: str, srcs: List[List[str]]) -> Dict[int, _Unit]:
    """Checks the plan against the model (the rules apply_plan needs to run it exactly; remat's own reader checks
    the rest) and returns the checkpointed units keyed by their first layer index."""
    layers = [l["name"] for l in model["layers"]]
    index = {n: i for i, n in enumerate(layers)}
    blocks = model["blocks"]
    bindex = {b["name"]: i for i, b in enumerate(blocks)}
    types = [l["type"] for l in model["layers"]]
    unknown = set(plan) - {"model", "description", "blocks"}
    if unknown:
        raise ValueError("%s: %s: unknown field (expected model, description, blocks)" % (where, sorted(unknown)[0]))
    if "model" in plan and plan["model"] != model["name"]:
        raise ValueError("%s: model: expected %r (the model's name), got %r" % (where, model["name"], plan["model"]))
    units: Dict[int, _Unit] = {}
    covered: Dict[int, str] = {}
    entries = plan.get("blocks", [])
    if not isinstance(entries, list):
        raise ValueError("%s: blocks: expected an array" % where)
    named = set()
    for i, e in enumerate(entries):
        at = "%s: blocks[%d]" % (where, i)
        bad = set(e) - {"name", "checkpoint", "compressor", "k", "splits", "span"}
        if bad:
            raise ValueError("%s.%s: unknown field" % (at, sorted(bad)[0]))
        name = e.get("name")
        if name not in bindex:
            raise ValueError("%s.name: expected a block of model %r (one of: %s), got %r"
                             % (at, model["name"], ", ".join(b["name"] for b in blocks), name))
        if name in named:
            raise ValueError("%s.name: block %r named twice" % (at, name))
        named.add(name)
        ck = bool(e.get("checkpoint", False))
        comp = e.get("compressor", "none")
        k = int(e.get("k", 1))
        span = int(e.get("span", 1))
        splits = list(e.get("splits", []))
        if comp not in COMPRESSORS:
            raise ValueError("%s.compressor: expected one of %s, got %r" % (at, ", ".join(COMPRESSORS), comp))
        if not ck:
            if comp != "none" or k != 1 or splits or span != 1:
                raise ValueError("%s.checkpoint: expected true (compressor, k, splits and span need it)" % at)
            continue
        if k < 1 or span < 1:
            raise ValueError("%s: expected k >= 1 and span >= 1, got k=%d, span=%d" % (at, k, span))
        b0 = bindex[name]
        if b0 + span > len(blocks):
            raise ValueError("%s.span: expected at most %d (the blocks left), got %d" % (at, len(blocks) - b0, span))
        ublocks = [blocks[j]["name"] for j in range(b0, b0 + span)]
        inner = [b for b in ublocks[1:] if b in {x.get("name") for x in entries}]
        if inner:
            raise ValueError("%s.span: the span covers block %r, which the plan names too (a span's blocks are not "
                             "named)" % (at, inner[0]))
        first = index[blocks[b0]["layers"][0]]
        last = index[blocks[b0 + span - 1]["layers"][-1]]
        for j in range(first, last + 1):
            if j in covered:
                raise ValueError("%s: block %r is already in the unit of %r" % (at, model["layers"][j]["name"],
                                                                                covered[j]))
            covered[j] = name
        if k > 1 and any(types[j] == "batchnorm" for j in range(first, last + 1)):
            raise ValueError("%s.k: expected 1 because %s has batch norm (time chunks would change batch-norm "
                             "statistics), got %d" % (at, "block %r" % name if span == 1 else "the span", k))
        unit = _Unit(ublocks, first, last, comp, k)
        cuts = [first]
        for s in splits:
            if s not in index or not (first < index[s] <= last):
                raise ValueError("%s.splits: expected a layer of the unit after its first, got %r" % (at, s))
            cuts.append(index[s])
        cuts = sorted(set(cuts))
        for a, b in zip(cuts, cuts[1:] + [last + 1]):
            unit.segments.append((a, b - 1))
        # no segment reads a layer outside itself except its input (no split cuts a branch)
        for a, b in unit.segments:
            inp = layers[a - 1] if a > 0 else "input"
            inside = set(layers[a:b + 1]) | {inp}
            for j in range(a, b + 1):
                for s in srcs[j]:
                    if s not in inside:
                        raise ValueError("%s.splits: expected no split that cuts %r (%s) from %r, which it reads (a "
                                         "segment reads only its own layers and its input)"
                                         % (at, layers[j], types[j], s))
        units[first] = unit
    # every block the span covers must not be named again (checked through `covered`)
    return units


# --- compressed segment inputs -------------------------------------------------------------------------------

def _binary_check(x: torch.Tensor, comp: str, where: str) -> None:
    bits = x.detach().contiguous().view(torch.int32) if x.dtype == torch.float32 else None
    if bits is not None:
        ok = (bits == 0) | (bits == _ONE_BITS)
    else:
        ok = (x == 0) | (x == 1)
    if not bool(ok.all()):
        bad = int((~ok).flatten().nonzero()[0])
        raise ValueError("%s: compressor %r stores spikes (0 or 1), found %r at element %d (a value it cannot hold "
                         "exactly: use 'uint8' for counts or 'none')" % (where, comp, float(x.flatten()[bad]), bad))


def compress(x: torch.Tensor, comp: str, where: str) -> Tuple[Any, ...]:
    """The segment input in compressed form; decompress() gives back the same bits, or ValueError."""
    if comp == "none":
        return ("none", x)
    shape, dtype = tuple(x.shape), x.dtype
    flat = x.detach().reshape(-1)
    if comp in ("bit", "bool", "sparse"):
        _binary_check(flat, comp, where)
    if comp == "bool":
        return (comp, flat.to(torch.bool), shape, dtype)
    if comp == "uint8":
        ok = (flat >= 0) & (flat <= 255) & (flat == torch.floor(flat))
        if flat.dtype == torch.float32:
            ok &= flat.view(torch.int32) >= 0  # -0.0 would come back as +0.0
        if not bool(ok.all()):
            bad = int((~ok).nonzero()[0])
            raise ValueError("%s: compressor 'uint8' stores integers 0..255, found %r at element %d"
                             % (where, float(flat[bad]), bad))
        return (comp, flat.to(torch.uint8), shape, dtype)
    if comp == "bit":
        n = flat.numel()
        pad = (-n) % 8
        b = flat.to(torch.uint8)
        if pad:
            b = torch.cat([b, b.new_zeros(pad)])
        shifts = torch.arange(8, dtype=torch.uint8, device=x.device)
        packed = (b.view(-1, 8) << shifts).sum(1, dtype=torch.uint8)
        return (comp, packed, shape, dtype, n)
    if comp == "sparse":
        idx = flat.nonzero().reshape(-1)
        idx = idx.to(torch.int32) if flat.numel() < 2 ** 31 else idx
        return (comp, idx, shape, dtype, flat.numel())
    raise ValueError("%s: compressor %r: expected one of %s" % (where, comp, ", ".join(COMPRESSORS)))


def decompress(c: Tuple[Any, ...]) -> torch.Tensor:
    comp = c[0]
    if comp == "none":
        return c[1]
    if comp in ("bool", "uint8"):
        return c[1].to(c[3]).view(c[2])
    if comp == "bit":
        packed, shape, dtype, n = c[1], c[2], c[3], c[4]
        shifts = torch.arange(8, dtype=torch.uint8, device=packed.device)
        bits = (packed.unsqueeze(1) >> shifts) & 1
        return bits.reshape(-1)[:n].to(dtype).view(shape)
    if comp == "sparse":
        idx, shape, dtype, n = c[1], c[2], c[3], c[4]
        out = torch.zeros(n, dtype=dtype, device=idx.device)
        out[idx.long()] = 1
        return out.view(shape)
    raise AssertionError(comp)


def compressed_bytes(c: Tuple[Any, ...]) -> int:
    t = c[1]
    return t.numel() * t.element_size()


# --- running the layers ----------------------------------------------------------------------------------------

class _Step:
    """One layer of the program: a module call, an add or a flatten, with its sources; ``drop``: the values no
    later layer reads, released after this one (the program holds no more than net's own forward)."""
    __slots__ = ("name", "kind", "module", "srcs", "form", "stateful", "bn", "drop")

    def __init__(self, name, kind, module, srcs, form):
        self.name, self.kind, self.module, self.srcs, self.form = name, kind, module, srcs, form
        self.stateful = module is not None and _sj.memories(module) is not None
        self.bn = module is not None and isinstance(module, nn.modules.batchnorm._BatchNorm)
        self.drop: List[str] = []


def _set_drops(steps: Sequence[_Step]) -> None:
    last: Dict[str, int] = {}
    for j, s in enumerate(steps):
        for src in s.srcs:
            last[src] = j
    for j, s in enumerate(steps):
        s.drop = sorted({src for src in s.srcs if last[src] == j})


def _run(steps: Sequence[_Step], env: Dict[str, torch.Tensor]) -> torch.Tensor:
    y = None
    for s in steps:
        if s.kind == "module":
            x = env[s.srcs[0]]
            if s.form == "rows":
                y = s.module(x.flatten(0, 1))
                y = y.view((x.shape[0], x.shape[1]) + tuple(y.shape[1:]))
            else:
                y = s.module(x)
        elif s.kind == "add":
            y = env[s.srcs[0]] + env[s.srcs[1]]
        else:  # flatten
            y = env[s.srcs[0]].flatten(2)
        env[s.name] = y
        for d in s.drop:
            env.pop(d, None)
    return y


def _snapshot(steps: Sequence[_Step]) -> List[Dict[str, Any]]:
    """The state of every stateful module of the segment (its memories dict, shallow)."""
    return [dict(_sj.memories(s.module)) for s in steps if s.stateful]


def _restore(steps: Sequence[_Step], snap: List[Dict[str, Any]]) -> None:
    it = iter(snap)
    for s in steps:
        if s.stateful:
            _sj.memories(s.module).update(next(it))


def _rng_state(device: torch.device):
    cpu = torch.get_rng_state()
    cuda = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return cpu, cuda


def _set_rng(state, device: torch.device) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)


class _Segment(torch.autograd.Function):
    """A checkpointed segment: forward keeps its compressed input (and chunk-boundary states), backward
    recomputes it chunk by chunk."""

    @staticmethod
    def forward(ctx, seg: "_SegmentSpec", x: torch.Tensor, _anchor: torch.Tensor):  # noqa: D401
        T = x.shape[0]
        k = seg.k
        if T % k:
            raise ValueError("%s: k=%d does not divide T=%d" % (seg.where, k, T))
        ctx.seg = seg
        ctx.x_grad = x.requires_grad
        ctx.packed = compress(x, seg.compressor, seg.where)
        ctx.device = x.device
        Tc = T // k
        ctx.bounds, ctx.rngs = [], []
        outs = []
        for c in range(k):
            if seg.on_chunk:
                seg.on_chunk(0, c)
            ctx.bounds.append(_snapshot(seg.steps))
            ctx.rngs.append(_rng_state(x.device))
            env = {seg.input: x[c * Tc:(c + 1) * Tc] if k > 1 else x}
            outs.append(_run(seg.steps, env))
            del env
            if seg.on_chunk:
                seg.on_chunk(1, c)
        if seg.compressor == "none":
            ctx.save_for_backward(x)
            ctx.packed = None
        return outs[0] if k == 1 else torch.cat(outs)

    @staticmethod
    def backward(ctx, gy: torch.Tensor):
        seg = ctx.seg
        if ctx.packed is None:
            (x,) = ctx.saved_tensors
        else:
            x = decompress(ctx.packed)
        k = seg.k
        T = x.shape[0]
        Tc = T // k
        after = _snapshot(seg.steps)  # the state the first pass left, put back at the end
        bn_saved = [(s.module, {n: b.clone() for n, b in s.module.named_buffers(recurse=False)})
                    for s in seg.steps if s.bn]
        gx = [None] * k
        carry: Dict[Tuple[int, str], torch.Tensor] = {}  # gradient of a state at the end of chunk c-1
        outer_rng = _rng_state(ctx.device)
        try:
            for c in range(k - 1, -1, -1):
                if seg.on_chunk:
                    seg.on_chunk(0, c)
                snap = ctx.bounds[c]
                leaves: Dict[Tuple[int, str], torch.Tensor] = {}
                if c > 0:  # the boundary potentials become leaves, to collect their gradient
                    snap = [dict(d) for d in snap]
                    for i, d in enumerate(snap):
                        for key, v in d.items():
                            if key == "v" and isinstance(v, torch.Tensor) and v.is_floating_point():
                                leaf = v.detach().requires_grad_(True)
                                d[key] = leaf
                                leaves[(i, key)] = leaf
                _restore(seg.steps, snap)
                _set_rng(ctx.rngs[c], ctx.device)
                xc = (x[c * Tc:(c + 1) * Tc] if k > 1 else x).detach().requires_grad_(ctx.x_grad)
                with torch.enable_grad():
                    yc = _run(seg.steps, {seg.input: xc})
                    outs, grads = [yc], [gy[c * Tc:(c + 1) * Tc] if k > 1 else gy]
                    if carry:
                        ends = _snapshot(seg.steps)
                        for (i, key), g in carry.items():
                            v = ends[i][key]
                            if isinstance(v, torch.Tensor) and v.requires_grad:
                                outs.append(v)
                                grads.append(g)
                    torch.autograd.backward(outs, grads)
                carry = {key: leaf.grad for key, leaf in leaves.items() if leaf.grad is not None}
                gx[c] = xc.grad if ctx.x_grad else None
                del yc, outs, grads
                if seg.on_chunk:
                    seg.on_chunk(1, c)
        finally:
            _set_rng(outer_rng, ctx.device)
            for m, bufs in bn_saved:  # the recomputation must not move the running statistics
                for n, b in m.named_buffers(recurse=False):
                    b.copy_(bufs[n])
            _restore(seg.steps, after)
        if not ctx.x_grad:
            return None, None, None
        return None, (gx[0] if k == 1 else torch.cat(gx)), None


class _SegmentSpec:
    """on_chunk(0 or 1, c): called as chunk c starts (0) and ends (1), in forward and in backward (remat_torch.record's
    chunk probe marks the allocation stream there); None in apply_plan's own segments."""

    def __init__(self, steps, input_name, compressor, k, where, on_chunk=None):
        self.steps, self.input, self.compressor, self.k, self.where = steps, input_name, compressor, k, where
        self.on_chunk = on_chunk


class PlannedModule(nn.Module):
    """``net`` run under a remat plan (see ``apply_plan``). Its parameters are ``net``'s."""

    def __init__(self, net: nn.Module, program: List[Any], plan_label: str):
        super().__init__()
        self.net = net
        self._program = program  # ("plain", [steps]) or ("segment", _SegmentSpec)
        self.plan_label = plan_label
        self._anchor = torch.empty(0, requires_grad=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        env: Dict[str, torch.Tensor] = {"input": x}
        y = x
        checkpoint = self.training and torch.is_grad_enabled()
        for kind, item in self._program:
            if kind == "plain" or not checkpoint:
                y = _run(item if kind == "plain" else item.steps, env)
            else:
                xin = env.pop(item.input)  # nothing after a segment reads its input (branches stay inside)
                y = _Segment.apply(item, xin, self._anchor)
                del xin
                env[item.steps[-1].name] = y
        return y

    def chunked_weight_layers(self) -> List[str]:
        """Conv and linear layers inside segments with k > 1: their weight and bias gradients are summed chunk by
        chunk, so they are the only tensors that may differ from the plain step in the last bits (PyTorch's
        kernels do not promise a reduction order over samples)."""
        out = []
        for kind, item in self._program:
            if kind == "segment" and item.k > 1:
                out += [s.name for s in item.steps
                        if s.kind == "module" and isinstance(s.module, (nn.Conv2d, nn.Conv1d, nn.Linear))]
        return out

    def extra_repr(self) -> str:
        return "plan=%s" % self.plan_label


def _label(plan: Dict[str, Any]) -> str:
    out = []
    for b in plan.get("blocks", []):
        if not b.get("checkpoint"):
            continue
        s = b["name"]
        if b.get("compressor", "none") != "none":
            s += ":" + b["compressor"]
        if int(b.get("k", 1)) > 1:
            s += "/k%d" % int(b["k"])
        if int(b.get("span", 1)) > 1:
            s += "/span%d" % int(b["span"])
        for sp in b.get("splits", []):
            s += "/split@" + sp
        out.append(s)
    return ",".join(out) or "no checkpointing"


def apply_plan(net: nn.Module, model: Union[Dict[str, Any], str], plan: Union[str, Dict[str, Any], None]
               ) -> PlannedModule:
    """``net`` running under a remat plan: a module whose forward and backward compute what ``net``'s do, holding
    only what the plan keeps.

    ``model`` is the model dict of ``to_model(net, ...)`` (or its file); ``plan`` a plan file written by remat
    (``remat search --out plan.json``), a plan dict, or the plan notation (``'layer1.0:bit,layer2.0/split@
    layer2.0.conv2'``). A plan remat would refuse for this model is refused with the reason (ValueError naming
    the field); a compressor meeting a value it cannot hold exactly raises ValueError in forward.

    Example::

        >>> model = remat_torch.to_model(net, (3, 32, 32), T=4, N=8)
        >>> wrapped = remat_torch.apply_plan(net, model, "plan.json")
        >>> loss = F.cross_entropy(wrapped(x).mean(0), labels)
        >>> loss.backward()                  # net's parameters get the gradients
        >>> functional.reset_net(net)        # as after any SpikingJelly step
    """
    if isinstance(model, (str, os.PathLike)):
        with open(model) as f:
            model = json.load(f)
    plan_d, where = load_plan(plan)
    shape = tuple(model["input"]["shape"])
    try:
        calls = record_structure(net, shape)
    except RuntimeError as e:
        raise ValueError("model: %s's forward on the model's input shape %s failed (was the model imported from "
                         "this module?): %s" % (type(net).__name__, list(shape), str(e).splitlines()[0]))
    names = [c.name for c in calls]
    want = [l["name"] for l in model["layers"]]
    if names != want:
        diff = next((i for i, (a, b) in enumerate(zip(names, want)) if a != b), min(len(names), len(want)))
        raise ValueError("model: layer %d is %r, but %s runs %r there (was the model imported from this module?)"
                         % (diff, want[diff] if diff < len(want) else "(none)", type(net).__name__,
                            names[diff] if diff < len(names) else "(nothing)"))
    mods = dict(net.named_modules())
    steps = [_Step(c.name, c.kind, mods[c.name] if c.kind == "module" else None, list(c.srcs), c.form)
             for c in calls]
    _set_drops(steps)
    units = _plan_units(model, plan_d, where, [s.srcs for s in steps])
    program: List[Any] = []
    i = 0
    plain: List[_Step] = []
    while i < len(steps):
        u = units.get(i)
        if u is None:
            plain.append(steps[i])
            i += 1
            continue
        if plain:
            program.append(("plain", plain))
            plain = []
        for a, b in u.segments:
            inp = steps[a - 1].name if a > 0 else "input"
            label = "block %r" % u.blocks[0] if len(u.blocks) == 1 else "span %s..%s" % (u.blocks[0], u.blocks[-1])
            wh = "segment at %r (%s)" % (steps[a].name, label)
            program.append(("segment", _SegmentSpec(steps[a:b + 1], inp, u.compressor, u.k, wh)))
        i = u.last + 1
    if plain:
        program.append(("plain", plain))
    return PlannedModule(net, program, _label(plan_d))
