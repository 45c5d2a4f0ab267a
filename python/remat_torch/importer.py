"""importer.py - a PyTorch / SpikingJelly module as a remat model file.

The dataflow is recorded from one forward pass on an example input, not traced
symbolically: ``torch.fx.symbolic_trace`` cannot trace SpikingJelly's real models
(``sew_resnet18`` branches on tensors in torch 1.13), while a recorded pass follows
whatever Python the user's ``forward`` runs. The pass runs on a deep copy of the
module (the user's batch-norm statistics and neuron states stay untouched), under
``torch.no_grad``, with

- forward hooks on every module whose type has a remat equivalent (a *leaf*: its
  inside is not looked at), and on every other module (a *container*: its forward
  is followed);
- a ``TorchFunctionMode`` that sees every torch call made outside the leaves, so
  that the residual ``+`` of a SEW block and the ``torch.flatten`` of a head become
  layers, reshapes that only merge or split ``T`` and ``N`` are looked through, and
  anything else is refused instead of dropped.

A layer is named by the module's qualified name (``layer1.0.conv1``); the add of a
SEW block is ``layer1.0.add`` and a functional flatten at the top ``flatten``.
"""
import json
import math
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn

from remat_torch import _sj

_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,62}$")

SUPPORTED = ("torch.nn Conv2d, Conv1d (groups, dilation, zero padding), Linear, BatchNorm2d, BatchNorm1d, MaxPool2d, "
             "AvgPool2d, MaxPool1d, AvgPool1d (ceil_mode where it adds no partial average window), AdaptiveAvgPool2d "
             "(identity or an exact average pool), Flatten, Dropout(p=0), Sequential and residual +; SpikingJelly "
             "activation_based layer.* "
             "of those, layer.Dropout, layer.SeqToANNContainer, neuron.IFNode / LIFNode (surrogate ATan or Sigmoid), "
             "multi-step mode")


def _refuse(path: str, module: Any, why: str) -> ValueError:
    kind = type(module).__name__ if module is not None else "operation"
    return ValueError("%s (%s): %s (supported: %s)" % (path or "<root>", kind, why, SUPPORTED))


def _pair(v) -> Tuple[int, int]:
    if isinstance(v, (tuple, list)):
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _single(v) -> int:
    """A 1-d module's size argument (an int or a 1-tuple)."""
    if isinstance(v, (tuple, list)):
        return int(v[0])
    return int(v)


def _one(v):
    """remat writes an int where both dimensions agree, else [h, w]."""
    a, b = v
    return a if a == b else [a, b]


def _is(m: Any, *names: str) -> bool:
    """True when type(m) is one of torch.nn's or SpikingJelly's classes of that name (not a subclass that may
    change forward: those are unknown modules)."""
    t = type(m)
    mod = t.__module__
    return t.__name__ in names and (mod.startswith("torch.nn") or mod.startswith("spikingjelly.activation_based"))


def is_leaf(m: nn.Module) -> bool:
    """A module the importer maps to one remat layer (its forward is not followed)."""
    return (_is(m, "Conv2d", "Conv1d", "Linear", "BatchNorm2d", "BatchNorm1d", "MaxPool2d", "AvgPool2d", "MaxPool1d",
                "AvgPool1d", "AdaptiveAvgPool2d", "Flatten", "Dropout") or _sj.is_neuron(m) or (len(list(m.children())) == 0 and not _is(m, "Sequential",
                                                                                               "ModuleList",
                                                                                               "Identity")))


# --- the recording ---------------------------------------------------------------------------------------------

class _Val:
    """A recorded tensor: which layer produced it and in which layout ('seq' [T, N, ...], 'rows' [T*N, ...])."""
    __slots__ = ("src", "form", "sample")

    def __init__(self, src: str, form: str, sample: Tuple[int, ...]):
        self.src, self.form, self.sample = src, form, sample


class _Call:
    """One recorded layer: a leaf module call or a functional add / flatten."""

    def __init__(self, name, kind, module, srcs, form, in_sample, out_sample, owner):
        self.name, self.kind, self.module = name, kind, module
        self.srcs: List[str] = srcs        # the logical inputs (layer names or "input")
        self.form = form                   # the layout the module was called with ('seq' or 'rows')
        self.in_sample, self.out_sample = in_sample, out_sample
        self.owner = owner                 # qualified name of the module whose forward made the call
        self.func = None                   # functional: the torch function and its arguments
        self.args = None


class Recorder(torch.overrides.TorchFunctionMode):
    """Records the layers of one forward pass (see the module docstring)."""

    def __init__(self, net: nn.Module, T: int, N: int):
        super().__init__()
        self.T, self.N = T, N
        self.names = {m: n for n, m in net.named_modules()}
        self.vals: Dict[int, _Val] = {}
        self.keep: List[torch.Tensor] = []  # keeps ids unique while recording
        self.calls: List[_Call] = []
        self.used = set()
        self.stack: List[str] = []          # containers being run
        self.leaf_depth = 0
        self.hooks = []
        for m in net.modules():
            self.hooks.append(m.register_forward_pre_hook(self._pre))
            self.hooks.append(m.register_forward_hook(self._post))

    # value bookkeeping
    def _val(self, t, path, module) -> _Val:
        v = self.vals.get(id(t)) if isinstance(t, torch.Tensor) else None
        if v is None:
            raise _refuse(path, module, "reads a tensor that no recorded layer produced (computed by an operation "
                                        "the importer does not map, or a constant)")
        return v

    def _set(self, t: torch.Tensor, v: _Val):
        self.vals[id(t)] = v
        self.keep.append(t)

    def _sample_of(self, t: torch.Tensor, path: str, module) -> Tuple[str, Tuple[int, ...]]:
        s = tuple(t.shape)
        if len(s) >= 2 and s[0] == self.T and s[1] == self.N:
            return "seq", s[2:]
        if len(s) >= 1 and s[0] == self.T * self.N:
            return "rows", s[1:]
        raise _refuse(path, module, "produced a tensor of shape %s, expected [T, N, ...] (the recording runs T=%d, "
                                    "N=%d; multi-step mode: functional.set_step_mode(net, 'm'))"
                      % (list(s), self.T, self.N))

    def _owner(self) -> str:
        return self.stack[-1] if self.stack else ""

    def _unique(self, base: str) -> str:
        taken = {c.name for c in self.calls}
        if base not in taken:
            return base
        i = 1
        while "%s.%d" % (base, i) in taken:
            i += 1
        return "%s.%d" % (base, i)

    # hooks
    def _pre(self, module, inputs):
        path = self.names.get(module, "?")
        if self.leaf_depth:
            self.leaf_depth += 1
            return None
        if is_leaf(module):
            self.leaf_depth = 1
            return None
        self.stack.append(path)
        return None

    def _post(self, module, inputs, output):
        path = self.names.get(module, "?")
        if self.leaf_depth > 1:
            self.leaf_depth -= 1
            return None
        if self.leaf_depth == 1:
            self.leaf_depth = 0
            self._leaf(module, path, inputs, output)
            return None
        self.stack.pop()
        return None

    def _leaf(self, module, path, inputs, output):
        tensors = [a for a in inputs if isinstance(a, torch.Tensor)]
        if len(tensors) != 1 or len(inputs) != 1:
            raise _refuse(path, module, "called with %d arguments, expected one tensor" % len(inputs))
        if not isinstance(output, torch.Tensor):
            raise _refuse(path, module, "returned a %s, expected one tensor" % type(output).__name__)
        v = self._val(inputs[0], path, module)
        form, in_sample = self._sample_of(inputs[0], path, module)
        oform, out_sample = self._sample_of(output, path, module)
        if oform != form:
            raise _refuse(path, module, "changed the layout of its input from %s to %s" % (form, oform))
        c = _Call(path, "module", module, [v.src], form, v.sample, out_sample, self._owner())
        self.calls.append(c)
        self.used.add(v.src)
        self._set(output, _Val(path, form, out_sample))

    # functional operations outside the leaves
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.leaf_depth or not isinstance(out, torch.Tensor):
            return out
        name = getattr(func, "__name__", str(func))
        tens = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)]
        owner = self._owner()
        where = (owner + "." if owner else "") + name
        if name in ("add", "__add__", "__radd__", "__iadd__", "add_") and len(tens) == 2 and not kwargs.get("alpha"):
            a, b = (self._val(t, where, None) for t in tens)
            fa, sa = self._sample_of(tens[0], where, None)
            fb, sb = self._sample_of(tens[1], where, None)
            if fa != fb or sa != sb or a.form != fa or b.form != fb:
                raise _refuse(where, None, "adds tensors of shapes %s and %s, expected two of the same shape"
                              % (list(tens[0].shape), list(tens[1].shape)))
            c = _Call(self._unique((owner + "." if owner else "") + "add"), "add", None, [a.src, b.src], fa, sa, sa,
                      owner)
            self.calls.append(c)
            self.used.update([a.src, b.src])
            self._set(out, _Val(c.name, fa, sa))
            return out
        if name in ("flatten", "view", "reshape", "contiguous", "clone") and len(tens) == 1:
            v = self._val(tens[0], where, None)
            form, sample = self._sample_of(out, where, None)
            if name in ("contiguous", "clone") or (sample == v.sample):
                self._set(out, _Val(v.src, form, sample))  # T and N merged or split: the same tensor
                return out
            if len(v.sample) == 3 and len(sample) == 1 and sample[0] == math.prod(v.sample):
                c = _Call(self._unique((owner + "." if owner else "") + "flatten"), "flatten", None, [v.src], form,
                          v.sample, sample, owner)
                self.calls.append(c)
                self.used.add(v.src)
                self._set(out, _Val(c.name, form, sample))
                return out
            raise _refuse(where, None, "reshapes %s into %s, expected [T, N, C, H, W] -> [T, N, C*H*W] or merging "
                                       "T and N" % (list(tens[0].shape), list(out.shape)))
        raise _refuse(where, None, "torch.%s outside a module has no remat equivalent" % name)

    def close(self):
        for h in self.hooks:
            h.remove()


def record(net: nn.Module, x: torch.Tensor) -> Tuple[List[_Call], _Val]:
    """Runs net(x) once (on the given module: callers pass a copy) and returns the recorded layers and the value
    of the output."""
    T, N = int(x.shape[0]), int(x.shape[1])
    rec = Recorder(net, T, N)
    try:
        rec._set(x, _Val("input", "seq", tuple(x.shape[2:])))
        with torch.no_grad(), rec:
            out = net(x)
    finally:
        rec.close()
    if not isinstance(out, torch.Tensor):
        raise _refuse("", net, "returned a %s, expected the output tensor [T, N, classes]" % type(out).__name__)
    v = rec.vals.get(id(out))
    if v is None:
        raise _refuse("", net, "returned a tensor no recorded layer produced")
    if not rec.calls or v.src != rec.calls[-1].name:
        raise _refuse("", net, "returned the output of %r, expected that of the last layer run" % v.src)
    for c in rec.calls[:-1]:
        if c.name not in rec.used:
            raise _refuse(c.name, c.module, "its output is never read (remat has no dead layers: remove it)")
    return rec.calls, v


REC_T, REC_N = 2, 3  # the recording's sizes: small, and T, N and T*N all distinct


def record_structure(net: nn.Module, input_shape: Sequence[int], input_kind: str = "analog",
                     input_rate: float = 0.3) -> List[_Call]:
    """The layers of ``net``'s forward, recorded on a deep copy (the user's module, its statistics and neuron
    states stay untouched) in training mode on a random [2, 3, *input_shape] input; the structure does not
    depend on T or N."""
    probe = _sj.copy_reset(net)
    probe.train()
    g = torch.Generator().manual_seed(0)
    dev = next((p.device for p in probe.parameters()), torch.device("cpu"))
    x = torch.rand((REC_T, REC_N) + tuple(int(d) for d in input_shape), generator=g)
    if input_kind == "spikes":
        x = (x < input_rate).float()
    calls, _ = record(probe, x.to(dev))
    return calls


# --- layers ----------------------------------------------------------------------------------------------------

def _neuron_fields(m, path) -> Dict[str, Any]:
    d: Dict[str, Any] = {}
    if getattr(m, "step_mode", "m") != "m":
        raise _refuse(path, m, "step_mode %r: expected multi-step mode (functional.set_step_mode(net, 'm'))"
                      % m.step_mode)
    sg = m.surrogate_function
    sname = _sj.surrogate_name(sg)
    if sname is None:
        raise _refuse(path, m, "surrogate %s: expected surrogate.ATan or surrogate.Sigmoid" % type(sg).__name__)
    if not getattr(sg, "spiking", True):
        raise _refuse(path, m, "surrogate in non-spiking mode: expected spiking=True")
    if float(m.v_threshold) != 1.0:
        d["v_threshold"] = float(m.v_threshold)
    if m.v_reset is None:
        d["v_reset"] = None
    elif float(m.v_reset) != 0.0:
        d["v_reset"] = float(m.v_reset)
    if m.detach_reset:
        d["detach_reset"] = True
    d["surrogate"] = sname
    default_alpha = 4.0 if sname == "sigmoid" else 2.0
    if float(sg.alpha) != default_alpha:
        d["alpha"] = float(sg.alpha)
    return d


def _layer(c: _Call) -> Dict[str, Any]:
    m, path = c.module, c.name
    if c.kind == "add":
        return {"type": "add"}
    if c.kind == "flatten":
        return {"type": "flatten"}
    if _sj.is_neuron(m):
        kind = _sj.neuron_kind(m)
        if kind is None:
            raise _refuse(path, m, "no remat equivalent (a learnable or other neuron model)")
        if c.form != "seq":
            raise _refuse(path, m, "called on [T*N, ...] rows: a neuron needs [T, N, ...] in multi-step mode")
        d = {"type": kind}
        d.update(_neuron_fields(m, path))
        if kind == "lif":
            tau = float(m.tau)
            if tau != 2.0:
                d["tau"] = tau
            if not m.decay_input:
                d["decay_input"] = False
        if kind == "plif":  # w itself goes into the weights file; init_tau is the tau it has now
            w = m.w.detach().double().reshape(())
            if w.numel() != 1 or not math.isfinite(float(w)):
                raise _refuse(path, m, "w must be one finite number")
            init_tau = float(1.0 + torch.exp(-w))
            if init_tau != 2.0:
                d["init_tau"] = init_tau
            if not m.decay_input:
                d["decay_input"] = False
        return d
    if _is(m, "Conv2d", "Conv1d"):
        return _conv(c)
    if _is(m, "Linear"):
        if len(c.in_sample) != 1:
            raise _refuse(path, m, "input of shape %s per sample, expected a flat [features] (flatten first)"
                          % list(c.in_sample))
        return {"type": "linear", "in": int(m.in_features), "out": int(m.out_features), "bias": m.bias is not None}
    if _is(m, "BatchNorm2d", "BatchNorm1d"):
        return _batchnorm(c)
    if _is(m, "MaxPool2d", "AvgPool2d", "MaxPool1d", "AvgPool1d"):
        return _pool(c)
    if _is(m, "AdaptiveAvgPool2d"):
        C, H, W = c.in_sample
        o = m.output_size
        oh, ow = _pair(o) if not isinstance(o, (tuple, list)) else (o[0] or H, o[1] or W)
        if H % oh or W % ow:
            raise _refuse(path, m, "output %dx%d from a %dx%d input: expected an input size that is a multiple of "
                                   "the output size (an upsampling or uneven adaptive pool has no remat equivalent)"
                          % (oh, ow, H, W))
        return {"type": "adaptiveavgpool2d", "out": _one((oh, ow))}
    if _is(m, "Flatten"):
        if len(c.in_sample) not in (2, 3) or len(c.out_sample) != 1:
            raise _refuse(path, m, "flattens %s into %s per sample, expected [C, H, W] -> [C*H*W] or [C, L] -> [C*L]"
                          % (list(c.in_sample), list(c.out_sample)))
        return {"type": "flatten"}
    if _is(m, "Dropout"):
        if _sj.is_sj(m):
            return {"type": "dropout", "p": float(m.p)}
        if float(m.p) == 0.0:
            return {"type": "dropout", "p": 0.0}
        raise _refuse(path, m, "torch.nn.Dropout draws a new mask at every time step; remat's dropout shares one "
                               "mask [N, ...] over T: use spikingjelly.activation_based.layer.Dropout")
    raise _refuse(path, m, "no remat equivalent")


def _conv(c: _Call) -> Dict[str, Any]:
    """Conv2d / Conv1d (and layer.*): conv2d on [C, H, W], conv1d on [C, L]; groups, dilation, zero padding
    (numeric, 'valid', or 'same' where the total padding d * (k - 1) is even: remat pads both sides alike)."""
    m, path = c.module, c.name
    one_d = _is(m, "Conv1d")
    if m.padding_mode != "zeros":
        raise _refuse(path, m, "padding_mode=%r: expected 'zeros'" % m.padding_mode)
    if len(c.in_sample) != (2 if one_d else 3):
        raise _refuse(path, m, "input of shape %s per sample, expected %s" % (list(c.in_sample),
                                                                              "[C, L]" if one_d else "[C, H, W]"))
    dims = (lambda v: (1, _single(v))) if one_d else _pair  # a 1-d conv as H = 1
    k, s, d = dims(m.kernel_size), dims(m.stride), dims(m.dilation)
    if isinstance(m.padding, str):
        if m.padding == "valid":
            p = (0, 0)
        elif all(di * (ki - 1) % 2 == 0 for di, ki in zip(d, k)):  # PyTorch's 'same' (stride 1): symmetric
            p = (d[0] * (k[0] - 1) // 2, d[1] * (k[1] - 1) // 2)
        else:
            raise _refuse(path, m, "padding='same' with dilation * (kernel - 1) odd (PyTorch pads one side more): "
                                   "expected numeric padding")
    else:
        p = (0, _single(m.padding)) if one_d else _pair(m.padding)
    pick = (lambda v: v[1]) if one_d else _one
    out = {"type": "conv1d" if one_d else "conv2d", "in": int(m.in_channels), "out": int(m.out_channels),
           "kernel": pick(k), "stride": pick(s), "padding": pick(p)}
    if d != (1, 1):
        out["dilation"] = pick(d)
    if m.groups != 1:
        out["groups"] = int(m.groups)
    out["bias"] = m.bias is not None
    return out


def _batchnorm(c: _Call) -> Dict[str, Any]:
    """BatchNorm2d on [C, H, W], BatchNorm1d on [C] or [C, L] (and layer.*): per channel over T*N (and the
    positions), momentum and eps carried."""
    m, path = c.module, c.name
    if not m.affine or not m.track_running_stats:
        raise _refuse(path, m, "affine=%s, track_running_stats=%s: expected both True" % (m.affine,
                                                                                         m.track_running_stats))
    if m.momentum is None:
        raise _refuse(path, m, "momentum=None (a cumulative average): expected a momentum in [0, 1]")
    d = {"type": "batchnorm", "features": int(m.num_features)}
    if m.momentum != 0.1:
        d["momentum"] = float(m.momentum)
    if m.eps != 1e-5:
        d["eps"] = float(m.eps)
    return d


def _pool(c: _Call) -> Dict[str, Any]:
    """MaxPool2d / AvgPool2d on [C, H, W], MaxPool1d / AvgPool1d on [C, L] (and layer.*), ceil_mode included
    (for an average pool only where it adds no window: PyTorch divides a window past the padded input by less)."""
    m, path = c.module, c.name
    avg, one_d = _is(m, "AvgPool2d", "AvgPool1d"), _is(m, "MaxPool1d", "AvgPool1d")
    if avg and (not m.count_include_pad or getattr(m, "divisor_override", None) is not None):
        raise _refuse(path, m, "expected count_include_pad=True and no divisor_override")
    dims = (lambda v: (1, _single(v))) if one_d else _pair  # a 1-d pool as H = 1 (no padding along H)
    if not avg and (dims(m.dilation) != (1, 1) or m.return_indices):
        raise _refuse(path, m, "expected dilation=1 and return_indices=False")
    if len(c.in_sample) != (2 if one_d else 3):
        raise _refuse(path, m, "input of shape %s per sample, expected %s" % (list(c.in_sample),
                                                                              "[C, L]" if one_d else "[C, H, W]"))
    k = dims(m.kernel_size)
    s = dims(m.stride if m.stride is not None else m.kernel_size)
    p = (0, _single(m.padding)) if one_d else _pair(m.padding)
    pick = (lambda v: v[1]) if one_d else _one
    kind = ("avgpool" if avg else "maxpool") + ("1d" if one_d else "2d")
    if m.ceil_mode and avg:
        size = (1,) + tuple(c.in_sample[1:]) if one_d else tuple(c.in_sample[1:])

        def n_out(n, kk, ss, pp, ceil):
            o = (n + 2 * pp - kk + (ss - 1 if ceil else 0)) // ss + 1
            return o - 1 if ceil and (o - 1) * ss >= n + pp else o
        if any(n_out(n, kk, ss, pp, True) != n_out(n, kk, ss, pp, False) for n, kk, ss, pp in zip(size, k, s, p)):
            raise _refuse(path, m, "ceil_mode=True adds a last window past the padded input, which PyTorch divides "
                                   "by fewer than kernel elements: expected ceil_mode=False here")
    d = {"type": kind, "kernel": pick(k)}
    if s != k:
        d["stride"] = pick(s)
    if p != (0, 0):
        d["padding"] = pick(p)
    if m.ceil_mode:
        d["ceil_mode"] = True
    return d


# --- blocks ----------------------------------------------------------------------------------------------------

_WEIGHT = ("conv2d", "conv1d", "linear")
_ENDS = ("if", "lif", "add", "maxpool2d", "avgpool2d", "maxpool1d", "avgpool1d", "adaptiveavgpool2d")


def _valid_cuts(layers: List[Dict[str, Any]], srcs: List[List[str]]) -> List[bool]:
    """cut[i]: a block may start at layer i (only layer i-1's output is read from i on)."""
    n = len(layers)
    pos = {l["name"]: i for i, l in enumerate(layers)}
    pos["input"] = -1
    last_read = {}
    for i, ss in enumerate(srcs):
        for s in ss:
            last_read[s] = max(last_read.get(s, -2), i)
    cut = [False] * n
    cut[0] = True
    for i in range(1, n):
        ok = True
        for s, r in last_read.items():
            if r >= i and pos[s] < i - 1:
                ok = False
                break
        cut[i] = ok
    return cut


def _group_blocks(layers, srcs, cut, how: str) -> List[List[int]]:
    n = len(layers)
    starts = [0]
    if how == "auto":
        for i in range(1, n):
            t, prev = layers[i]["type"], layers[i - 1]["type"]
            if cut[i] and (((t in _WEIGHT or t == "flatten") and prev in _ENDS) or prev == "add"):
                starts.append(i)
    elif how == "top":
        top = [l["name"].split(".")[0] for l in layers]
        for i in range(1, n):
            if cut[i] and top[i] != top[i - 1]:
                starts.append(i)
    elif how == "residual":
        owner = [l["_owner"] for l in layers]
        res = {owner[i] for i in range(n) if layers[i]["type"] == "add" and owner[i]}
        key = [owner[i] if owner[i] in res else None for i in range(n)]
        for i in range(1, n):
            if cut[i] and key[i] != key[i - 1]:
                starts.append(i)
    elif how == "layer":
        starts = [i for i in range(n) if cut[i]]
    else:
        raise ValueError("blocks: expected auto, top, residual or layer, got %r" % how)
    groups = [list(range(a, b)) for a, b in zip(starts, starts[1:] + [n])]
    if how == "auto":  # a block without a weight layer joins the next one (a head's pool)
        merged: List[List[int]] = []
        carry: List[int] = []
        for g in groups:
            g = carry + g
            if any(layers[i]["type"] in _WEIGHT for i in g) or g[-1] == n - 1:
                merged.append(g)
                carry = []
            else:
                carry = g
        groups = merged
    return groups


def _block_name(layers, idx: List[int], taken, first: bool, last: bool) -> str:
    names = [layers[i]["name"] for i in idx]
    parts = [n.split(".") for n in names]
    common = []
    for bits in zip(*parts):
        if all(b == bits[0] for b in bits):
            common.append(bits[0])
        else:
            break
    base = ".".join(common) if common and len(names) > 1 else ""
    if not base or base in taken:
        base = names[0] if len(names) == 1 else "stem" if first else "head" if last else "b%d" % (len(taken) + 1)
    if base in taken:
        base = "b%d" % (len(taken) + 1)
    return base


# --- the model -------------------------------------------------------------------------------------------------

def to_model(net: nn.Module, input_shape: Sequence[int], T: int, N: int, *, name: Optional[str] = None,
             loss: str = "rate_mse", optimizer: Optional[Dict[str, Any]] = None, blocks: str = "auto",
             input_kind: str = "analog", input_rate: float = 0.3,
             description: Optional[str] = None) -> Dict[str, Any]:
    """The remat model file (a dict, to be written as JSON) of a module in multi-step mode.

    Records one forward of a copy of ``net`` on a small random ``[2, 3, *input_shape]`` input and maps each module to a
    remat layer named by its qualified name. Anything without an exact remat equivalent raises ValueError naming
    the module path, its type and what is supported.

    Example::

        >>> from spikingjelly.activation_based import neuron, functional, surrogate
        >>> from spikingjelly.activation_based.model import sew_resnet
        >>> net = sew_resnet.sew_resnet18(spiking_neuron=neuron.IFNode, cnf='ADD', num_classes=10,
        ...                               surrogate_function=surrogate.ATan(), detach_reset=True)
        >>> functional.set_step_mode(net, 'm')
        >>> model = remat_torch.to_model(net, (3, 32, 32), T=4, N=8, loss="rate_ce")
        >>> model["blocks"][1]["name"], model["layers"][4]["name"]
        ('layer1.0', 'layer1.0.conv1')

    ``blocks``: ``auto`` (a block ends after a neuron, an add or a pool that a weight layer or a flatten follows,
    where only one tensor crosses; a block without a weight layer joins the next), ``top`` (one per top-level child module), ``residual`` (one per module holding a residual add,
    the layers between them together) or ``layer`` (as fine as the branches allow).
    """
    T, N = int(T), int(N)
    shape = tuple(int(d) for d in input_shape)
    if len(shape) not in (1, 2, 3):
        raise ValueError("input_shape: expected (features,), (C, L) or (C, H, W), got %s" % (shape,))
    if loss not in ("rate_mse", "rate_ce"):
        raise ValueError("loss: expected rate_mse or rate_ce, got %r" % loss)
    if input_kind not in ("analog", "spikes"):
        raise ValueError("input_kind: expected analog or spikes, got %r" % input_kind)
    if T < 1 or N < 1:
        raise ValueError("T, N: expected positive integers, got %d, %d" % (T, N))
    calls = record_structure(net, shape, input_kind, input_rate)

    layers: List[Dict[str, Any]] = []
    srcs: List[List[str]] = []
    for c in calls:
        if not _NAME_RE.match(c.name) or c.name == "input":
            raise _refuse(c.name, c.module, "its qualified name is not a remat layer name (1 to 63 of A-Z a-z 0-9 _ "
                                            ". -, not starting with . or -, not 'input')")
        d = {"name": c.name}
        d.update(_layer(c))
        d["_owner"] = c.owner
        layers.append(d)
        srcs.append(list(c.srcs))
    cut = _valid_cuts(layers, srcs)
    groups = _group_blocks(layers, srcs, cut, blocks)
    block_of = {}
    bl = []
    taken: set = set()
    for gi, idx in enumerate(groups):
        bname = _block_name(layers, idx, taken, gi == 0, gi == len(groups) - 1)
        taken.add(bname)
        bl.append({"name": bname, "layers": [layers[i]["name"] for i in idx]})
        for i in idx:
            block_of[i] = gi
    # sources: the previous layer by default, "input" / "from" where a branch reads elsewhere
    for i, d in enumerate(layers):
        prev = layers[i - 1]["name"] if i else "input"
        block_input = layers[groups[block_of[i]][0] - 1]["name"] if groups[block_of[i]][0] else "input"
        ss = srcs[i]
        if d["type"] == "add":
            a, b = ss
            if b == prev:
                a, b = b, a
            if a != prev:
                d["input"] = a
            if b != block_input or i != groups[block_of[i]][-1]:
                d["from"] = b
        elif ss[0] != prev:
            d["input"] = ss[0]
        del d["_owner"]
    last = calls[-1]
    if len(last.out_sample) != 1:
        raise _refuse(last.name, last.module, "the network output is %s per sample, expected [classes]"
                      % list(last.out_sample))
    model: Dict[str, Any] = {
        "name": _model_name(name or type(net).__name__),
        "description": description or "imported by remat_torch from %s.%s" % (type(net).__module__,
                                                                              type(net).__name__),
        "T": T, "N": N,
        "input": {"shape": list(shape), "kind": input_kind},
        "classes": int(last.out_sample[0]),
        "loss": loss,
    }
    if input_kind == "spikes":
        model["input"]["rate"] = float(input_rate)
    if optimizer is not None:
        model["optimizer"] = dict(optimizer)
    model["layers"] = layers
    model["blocks"] = bl
    return model


def _model_name(s: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_.\-]", "-", s).lstrip(".-")[:63]
    return s or "model"


def model_text(model: Dict[str, Any]) -> str:
    """The model file's text as the CLI writes it: one layer and one block per line."""
    head = {k: v for k, v in model.items() if k not in ("layers", "blocks")}
    lines = ["{"]
    for k, v in head.items():
        lines.append("  %s: %s," % (json.dumps(k), json.dumps(v)))
    lines.append('  "layers": [')
    lines.append(",\n".join("    " + json.dumps(l) for l in model["layers"]))
    lines.append("  ],")
    lines.append('  "blocks": [')
    lines.append(",\n".join("    " + json.dumps(b) for b in model["blocks"]))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def module_of(net: nn.Module, layer_name: str) -> Optional[nn.Module]:
    """The module behind a layer of an imported model (None for a functional add or flatten)."""
    mods = dict(net.named_modules())
    return mods.get(layer_name)
