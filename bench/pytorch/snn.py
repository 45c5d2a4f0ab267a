"""snn.py - remat's model files (data/models/*.json) written in PyTorch, for the CPU comparison.

Semantics follow docs/model-and-plan-files.md (SpikingJelly's multi-step conventions), so a
model here computes what `remat run` computes on the reference backend:

- tensors are time-major [T, N, C] or [T, N, C, H, W]; linear, conv2d, pooling and batch
  norm treat them as T*N samples (F.conv2d, F.max_pool2d, F.avg_pool2d with
  count_include_pad, F.batch_norm over channels); branches ("input", add's "from") as
  remat reads them;
- PLIF (SpikingJelly's ParametricLIFNode) by plain autograd: the charge with
  k = sigmoid(w), a surrogate spike function, the reset; so dL/dw is autograd's;
- multi-step IF / LIF neurons are one torch.autograd.Function each: the forward runs the
  T steps and saves only the potential h [T, N, C] (what remat's executor keeps for a
  stored neuron layer); the backward runs the surrogate-gradient recurrence of
  docs/determinism.md (sigmoid or atan surrogate, hard or soft reset, detach_reset, decay_input);
  both loops are TorchScript functions (as SpikingJelly's `torch` backend scripts its
  multi-step loops), which runs them about twice as fast as plain Python here;
- batch norm: statistics over all T*N rows (F.batch_norm in training mode, the layer's
  eps and momentum, default 1e-5 and 0.1);
- add: SEW ADD, block input + block output;
- dropout: one inverted mask [N, C] shared by every time step (SpikingJelly multi-step
  dropout). torch.utils.checkpoint restores the RNG state, so a recomputation draws the
  same mask; a layer's `mask` attribute, when set (remat's /masks/<layer> of a dump),
  is used instead of a drawn one, which is how a check compares one step with remat's;
- loss: rate = mean over t of the output; rate_mse or rate_ce;
- optimiser: SGD with momentum or Adam as the model file says;
- init: linear weight and bias ~ U(-g/sqrt(in), g/sqrt(in)) with g = init_gain;
  input: Bernoulli(rate) spikes or U(0, 1) analog values; labels uniform.

Random numbers come from torch's generator, not remat's counter-based one, so losses
differ from remat's (unless the input, parameters and dropout masks are remat's, as
tests/torch_formula_check.py sets them); shapes, the work done and what is kept for backward are
the same, which is what the memory and time comparison needs.

Checkpointing: `checkpoint=True` wraps every block in
torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False) (the input of each block
is kept, its internals are recomputed in backward).
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint as torch_checkpoint

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from remat_torch.losses import rate_loss  # noqa: E402  (the one PyTorch copy of remat's losses)


@torch.jit.script
def _neuron_forward(x: torch.Tensor, is_lif: bool, decay_input: bool, tau: float, vth: float, vreset: float,
                    soft: bool):
    """The T steps of docs/determinism.md; returns (spikes s, potentials h), both [T, N, ...].
    TorchScript, as SpikingJelly's `torch` backend scripts its multi-step loops."""
    T = x.shape[0]
    h_seq = torch.empty_like(x)
    s_seq = torch.empty_like(x)
    v = torch.full_like(x[0], vreset)
    for t in range(T):
        if not is_lif:
            h = v + x[t]
        elif decay_input:
            h = v + (x[t] - (v - vreset)) / tau
        else:
            h = v - (v - vreset) / tau + x[t]
        s = (h - vth >= 0).to(x.dtype)
        if soft:
            v = h - s * vth
        else:
            v = h * (1.0 - s) + vreset * s
        h_seq[t] = h
        s_seq[t] = s
    return s_seq, h_seq


@torch.jit.script
def _neuron_backward(gs_seq: torch.Tensor, h_seq: torch.Tensor, is_lif: bool, decay_input: bool, tau: float,
                     vth: float, vreset: float, soft: bool, detach_reset: bool, sigmoid: bool, alpha: float):
    """dL/dx from dL/ds and the saved h, by the recurrence of docs/determinism.md."""
    T = h_seq.shape[0]
    gx_seq = torch.empty_like(h_seq)
    gv = torch.zeros_like(h_seq[0])
    for t in range(T - 1, -1, -1):
        h = h_seq[t]
        u = h - vth
        if sigmoid:
            sig = torch.sigmoid(alpha * u)
            sg = alpha * sig * (1.0 - sig)
        else:
            sg = (alpha / 2.0) / (1.0 + (1.5707963267948966 * alpha * u) ** 2)
        gs = gs_seq[t]
        if not soft:
            s = (u >= 0).to(h.dtype)
            if detach_reset:
                gh = gs * sg + gv * (1.0 - s)
            else:
                gh = (gs + gv * (vreset - h)) * sg + gv * (1.0 - s)
        else:
            if detach_reset:
                gh = gs * sg + gv
            else:
                gh = (gs - vth * gv) * sg + gv
        if not is_lif:
            gx_seq[t] = gh
            gv = gh
        else:
            gx_seq[t] = gh / tau if decay_input else gh
            gv = gh * (1.0 - 1.0 / tau)
    return gx_seq


class MultiStepNeuron(torch.autograd.Function):
    """Multi-step IF/LIF: x [T, N, ...] -> spikes s [T, N, ...]; saves only h [T, N, ...]."""

    @staticmethod
    def forward(ctx, x, cfg):
        soft = cfg["v_reset"] is None
        vreset = 0.0 if soft else cfg["v_reset"]
        s_seq, h_seq = _neuron_forward(x, cfg["type"] == "lif", cfg["decay_input"], cfg["tau"], cfg["v_threshold"],
                                       vreset, soft)
        ctx.cfg = cfg
        ctx.save_for_backward(h_seq)
        return s_seq

    @staticmethod
    def backward(ctx, gs_seq):
        (h_seq,) = ctx.saved_tensors
        cfg = ctx.cfg
        soft = cfg["v_reset"] is None
        gx = _neuron_backward(gs_seq.contiguous(), h_seq, cfg["type"] == "lif", cfg["decay_input"], cfg["tau"],
                              cfg["v_threshold"], 0.0 if soft else cfg["v_reset"], soft, cfg["detach_reset"],
                              cfg["surrogate"] == "sigmoid", cfg["alpha"])
        return gx, None


class SurrogateSpike(torch.autograd.Function):
    """s = (u >= 0), with the surrogate's derivative (docs/determinism.md) as its gradient."""

    @staticmethod
    def forward(ctx, u, sigmoid, alpha):
        ctx.save_for_backward(u)
        ctx.sigmoid, ctx.alpha = sigmoid, alpha
        return (u >= 0).to(u.dtype)

    @staticmethod
    def backward(ctx, g):
        (u,) = ctx.saved_tensors
        a = ctx.alpha
        if ctx.sigmoid:
            sig = torch.sigmoid(a * u)
            return g * a * sig * (1.0 - sig), None, None
        return g * (a / 2.0) / (1.0 + (math.pi / 2.0 * a * u) ** 2), None, None


def plif_forward(x, w, cfg):
    """SpikingJelly's ParametricLIFNode, multi-step, by autograd: 1/tau = sigmoid(w), the
    charge as its neuronal_charge writes it, fire by the surrogate, reset (detached or not)."""
    k = torch.sigmoid(w).reshape(())
    soft = cfg["v_reset"] is None
    vr = 0.0 if soft else cfg["v_reset"]
    v = torch.full_like(x[0], vr)
    out = []
    for t in range(x.shape[0]):
        if cfg["decay_input"]:
            h = v + (x[t] - v) * k if vr == 0.0 else v + (x[t] - (v - vr)) * k
        else:
            h = v * (1.0 - k) + x[t] if vr == 0.0 else v - (v - vr) * k + x[t]
        s = SurrogateSpike.apply(h - cfg["v_threshold"], cfg["surrogate"] == "sigmoid", cfg["alpha"])
        sr = s.detach() if cfg["detach_reset"] else s
        v = h - sr * cfg["v_threshold"] if soft else sr * vr + (1.0 - sr) * h
        out.append(s)
    return torch.stack(out)


def neuron_cfg(layer):
    kind = layer["type"]
    return {
        "type": kind,
        "v_threshold": float(layer.get("v_threshold", 1.0)),
        "v_reset": None if ("v_reset" in layer and layer["v_reset"] is None) else float(layer.get("v_reset", 0.0)),
        "detach_reset": bool(layer.get("detach_reset", False)),
        "surrogate": layer.get("surrogate", "sigmoid"),
        "alpha": float(layer.get("alpha", 4.0 if layer.get("surrogate", "sigmoid") == "sigmoid" else 2.0)),
        "tau": float(layer.get("tau", 2.0)),
        "decay_input": bool(layer.get("decay_input", True)),
    }


def _pair(v):
    return (int(v[0]), int(v[1])) if isinstance(v, list) else (int(v), int(v))


class Layer(torch.nn.Module):
    """One layer; `shape` is its input's per-sample shape ((C,) or (C, H, W))."""

    def __init__(self, spec, shape, gain):
        super().__init__()
        self.kind = spec["type"]
        self.name = spec["name"]
        self.src = spec.get("input")
        self.src2 = spec.get("from")
        self.out_shape = tuple(shape)
        if self.kind == "conv1d":  # [C, L]
            out, k, s = int(spec["out"]), int(spec["kernel"]), int(spec.get("stride", 1))
            pad, self.d = spec.get("padding", 0), int(spec.get("dilation", 1))
            p = 0 if pad == "valid" else self.d * (k - 1) // 2 if pad == "same" else int(pad)
            self.s, self.pad_arg = s, pad if isinstance(pad, str) else p
            self.groups = int(spec.get("groups", 1))
            self.out_shape = (out, (shape[1] + 2 * p - self.d * (k - 1) - 1) // s + 1)
            bound = gain / math.sqrt(shape[0] // self.groups * k)
            self.weight = torch.nn.Parameter(torch.empty((out, shape[0] // self.groups, k)).uniform_(-bound, bound))
            self.bias = (torch.nn.Parameter(torch.empty(out).uniform_(-bound, bound))
                         if spec.get("bias", True) else None)
        elif self.kind in ("maxpool1d", "avgpool1d"):
            self.k = int(spec["kernel"])
            self.s, self.p = int(spec.get("stride", spec["kernel"])), int(spec.get("padding", 0))
            self.ceil = bool(spec.get("ceil_mode", False))
            o = (shape[1] + 2 * self.p - self.k + (self.s - 1 if self.ceil else 0)) // self.s + 1
            self.out_shape = (shape[0], o - 1 if self.ceil and (o - 1) * self.s >= shape[1] + self.p else o)
        elif self.kind in ("linear", "conv2d"):
            conv = self.kind == "conv2d"
            out = int(spec["out"])
            if conv:
                pad = spec.get("padding", 0)
                self.k, self.s, self.d = _pair(spec["kernel"]), _pair(spec.get("stride", 1)), _pair(spec.get("dilation", 1))
                self.p = ((0, 0) if pad == "valid" else
                          (self.d[0] * (self.k[0] - 1) // 2, self.d[1] * (self.k[1] - 1) // 2) if pad == "same"
                          else _pair(pad))
                self.groups = int(spec.get("groups", 1))
                fan_in = shape[0] // self.groups * self.k[0] * self.k[1]
                wshape = (out, shape[0] // self.groups) + self.k
                oh = (shape[1] + 2 * self.p[0] - self.d[0] * (self.k[0] - 1) - 1) // self.s[0] + 1
                ow = (shape[2] + 2 * self.p[1] - self.d[1] * (self.k[1] - 1) - 1) // self.s[1] + 1
                self.out_shape = (out, oh, ow)
                self.pad_arg = pad if isinstance(pad, str) else self.p  # F.conv2d's own "same" / "valid"
            else:
                fan_in = shape[0]
                wshape = (out, shape[0])
                self.out_shape = (out,)
            bound = gain / math.sqrt(fan_in)
            self.weight = torch.nn.Parameter(torch.empty(wshape).uniform_(-bound, bound))
            self.bias = (torch.nn.Parameter(torch.empty(out).uniform_(-bound, bound))
                         if spec.get("bias", True) else None)
        elif self.kind in ("maxpool2d", "avgpool2d"):
            self.k = _pair(spec["kernel"])
            self.s = _pair(spec.get("stride", spec["kernel"]))
            self.p = _pair(spec.get("padding", 0))
            self.ceil = bool(spec.get("ceil_mode", False))

            def out(n, k, s, p):  # PyTorch's pooling output size
                o = (n + 2 * p - k + (s - 1 if self.ceil else 0)) // s + 1
                return o - 1 if self.ceil and (o - 1) * s >= n + p else o
            self.out_shape = (shape[0], out(shape[1], self.k[0], self.s[0], self.p[0]),
                              out(shape[2], self.k[1], self.s[1], self.p[1]))
        elif self.kind == "adaptiveavgpool2d":
            self.o = _pair(spec["out"])
            self.out_shape = (shape[0],) + self.o
        elif self.kind == "flatten":
            self.out_shape = (int(math.prod(shape)),)
        elif self.kind == "batchnorm":
            C = shape[0]
            self.weight = torch.nn.Parameter(torch.ones(C))
            self.bias = torch.nn.Parameter(torch.zeros(C))
            self.register_buffer("running_mean", torch.zeros(C))
            self.register_buffer("running_var", torch.ones(C))
            self.momentum, self.eps = float(spec.get("momentum", 0.1)), float(spec.get("eps", 1e-5))
        elif self.kind in ("if", "lif"):
            self.cfg = neuron_cfg(spec)
        elif self.kind == "plif":
            self.cfg = neuron_cfg(spec)
            self.w = torch.nn.Parameter(torch.tensor([-math.log(float(spec.get("init_tau", 2.0)) - 1.0)]))
        elif self.kind == "dropout":
            self.p = float(spec.get("p", 0.5))
            self.mask = None  # a given mask [N, ...] (0 or 1/(1-p)) instead of a drawn one
        elif self.kind != "add":
            raise ValueError("bench/pytorch/snn.py: layer type %r is not supported" % self.kind)

    def forward(self, x, other):
        """x [T, N, ...] its input; other: add's other operand."""
        T, N = x.shape[0], x.shape[1]
        rows = lambda t: t.reshape((T * N,) + tuple(t.shape[2:]))  # noqa: E731
        back = lambda t: t.reshape((T, N) + tuple(t.shape[1:]))  # noqa: E731
        if self.kind == "linear":
            return F.linear(x, self.weight, self.bias)
        if self.kind == "conv1d":
            return back(F.conv1d(rows(x), self.weight, self.bias, stride=self.s, padding=self.pad_arg, dilation=self.d,
                                 groups=self.groups))
        if self.kind == "maxpool1d":
            return back(F.max_pool1d(rows(x), self.k, self.s, self.p, ceil_mode=self.ceil))
        if self.kind == "avgpool1d":
            return back(F.avg_pool1d(rows(x), self.k, self.s, self.p, ceil_mode=self.ceil, count_include_pad=True))
        if self.kind == "conv2d":
            return back(F.conv2d(rows(x), self.weight, self.bias, stride=self.s, padding=self.pad_arg, dilation=self.d,
                                 groups=self.groups))
        if self.kind == "maxpool2d":
            return back(F.max_pool2d(rows(x), self.k, self.s, self.p, ceil_mode=self.ceil))
        if self.kind == "avgpool2d":
            return back(F.avg_pool2d(rows(x), self.k, self.s, self.p, ceil_mode=self.ceil, count_include_pad=True))
        if self.kind == "adaptiveavgpool2d":
            return back(F.adaptive_avg_pool2d(rows(x), self.o))
        if self.kind == "flatten":
            return x.reshape(T, N, -1)
        if self.kind == "batchnorm":
            y = F.batch_norm(rows(x), self.running_mean, self.running_var, self.weight, self.bias,
                             training=True, momentum=self.momentum, eps=self.eps)
            return back(y)
        if self.kind in ("if", "lif"):
            return MultiStepNeuron.apply(x, self.cfg)
        if self.kind == "plif":
            return plif_forward(x, self.w, self.cfg)
        if self.kind == "add":
            return other + x
        # dropout: one mask [N, ...] for all T
        if self.p == 0.0:
            return x
        if self.mask is not None:
            return x * self.mask.to(x.dtype).reshape(x.shape[1:])
        mask = torch.empty(x.shape[1:], dtype=x.dtype).bernoulli_(1.0 - self.p).div_(1.0 - self.p)
        return x * mask


class Block(torch.nn.Module):
    """A block's layers; a layer reads the previous one's output unless it names another
    ("input"), add sums with "from" (default: the block input)."""

    def __init__(self, layers):
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x):
        outs, y = {}, x
        for layer in self.layers:
            inp = outs[layer.src] if layer.src in outs else (x if layer.src is not None else y)
            other = outs[layer.src2] if layer.src2 in outs else x
            y = layer(inp, other)
            outs[layer.name] = y
        return y


class SNN(torch.nn.Module):
    def __init__(self, model, checkpoint=False):
        super().__init__()
        self.T, self.N = int(model["T"]), int(model["N"])
        self.in_shape = tuple(int(d) for d in model["input"]["shape"])
        self.in_features = int(math.prod(self.in_shape))
        self.classes = int(model["classes"])
        self.loss_kind = model.get("loss", "rate_mse")
        self.checkpoint = checkpoint
        gain = float(model.get("init_gain", 1.0))
        by_name = {l["name"]: l for l in model["layers"]}
        shape = self.in_shape
        blocks = []
        for b in model["blocks"]:
            layers, shapes = [], {}
            block_in = shape
            for name in b["layers"]:
                spec = by_name[name]
                src = spec.get("input")
                layer = Layer(spec, shapes.get(src, block_in) if src is not None else shape, gain)
                shape = layer.out_shape
                shapes[name] = shape
                layers.append(layer)
            blocks.append(Block(layers))
        self.blocks = torch.nn.ModuleList(blocks)

    def forward(self, x):
        for b in self.blocks:
            x = torch_checkpoint(b, x, use_reentrant=False) if self.checkpoint else b(x)
        return x

    def loss(self, out, labels):
        return rate_loss(out, labels, self.loss_kind)


def load_model(path):
    with open(path) as f:
        return json.load(f)


def make_optimizer(model_spec, params):
    o = model_spec.get("optimizer", {"type": "sgd", "lr": 0.1})
    if o["type"] == "adam":
        return torch.optim.Adam(params, lr=o.get("lr", 1e-3), betas=(o.get("beta1", 0.9), o.get("beta2", 0.999)),
                                eps=o.get("eps", 1e-8))
    return torch.optim.SGD(params, lr=o.get("lr", 0.1), momentum=o.get("momentum", 0.0))


def make_batch(model_spec, net, input_grad=True):
    """Input [T, N, C] (or [T, N, C, H, W]) and labels [N]. input_grad=True: the input requires a gradient, as
    remat's executor always computes dL/dinput (the gradient dump reads it), so both do
    the same work and hold the same tensors."""
    shape = (net.T, net.N) + net.in_shape
    if model_spec["input"].get("kind") == "spikes":
        x = torch.empty(shape).bernoulli_(float(model_spec["input"].get("rate", 0.5)))
    else:
        x = torch.rand(shape)
    x.requires_grad_(input_grad)
    labels = torch.randint(0, net.classes, (net.N,))
    return x, labels


def train_step(net, opt, x, labels):
    opt.zero_grad(set_to_none=False)
    out = net(x)
    loss = net.loss(out, labels)
    del out
    loss.backward()
    opt.step()
    return float(loss)
