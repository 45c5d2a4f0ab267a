"""dump.py - one PyTorch training step written as a remat gradient dump.

``dump_step(net, x, labels, path, loss=...)`` runs forward, the loss and backward (no
optimiser update) and writes remat's gradient-dump layout (docs/trace-schema.md), so that
``remat verify --dump plain.h5 --dump plan.h5`` compares a user's checkpointed code with
their plain code bit for bit:

    /input [T, N, ...]          /labels [N] int32        /loss scalar
    /params/<module>/<name>     parameters and batch-norm statistics before the step
    /grads/<module>/<name>      gradient of every parameter that got one
    /grads/input [T, N, ...]    gradient of the input
    /after/<module>/<buffer>    batch-norm running statistics after the step
    /masks/<module>             SpikingJelly multi-step dropout masks [N, ...]
    root attributes: model, plan, seed, backend (strings)

``<module>`` is the qualified module name (``layer1.0.conv1``), the parameter
``A.B.weight`` is ``/grads/A.B/weight``, with its real shape. The step leaves ``net`` as it
found it (parameters' ``.grad``, batch-norm statistics, neuron states, the random-number
state), so dumping the plain and the planned module one after the other compares equal
starting points.
"""
from typing import Any, Callable, Dict, Optional, Union

import torch
import torch.nn as nn

from remat_torch import _sj
from remat_torch._atomic import atomic_path
from remat_torch.importer import model_text
from remat_torch.losses import rate_loss


def _base(net: nn.Module):
    """(the user's module, the plan label): a module from apply_plan runs its .net."""
    inner = getattr(net, "net", None)
    if isinstance(inner, nn.Module) and hasattr(net, "plan_label"):
        return inner, net.plan_label
    return net, ""


def backend_label(device: torch.device) -> str:
    return "torch %s %s" % (torch.__version__, device.type)


def step_tensors(net: nn.Module, x: torch.Tensor, labels: torch.Tensor,
                 loss: Union[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = "rate_mse",
                 seed: int = 0) -> Dict[str, torch.Tensor]:
    """One step of ``net`` (forward, loss, backward; no optimiser update) as the dump's tensors, keyed by their
    dump paths ("/grads/layer1.0.conv1/weight"). Leaves ``net`` as it found it (see the module docstring)."""
    base, _ = _base(net)
    loss_fn = loss if callable(loss) else (lambda out, lab: rate_loss(out, lab, loss))
    if x.dim() < 3:
        raise ValueError("x: expected [T, N, ...], got shape %s" % list(x.shape))
    if tuple(labels.shape) != (x.shape[1],):
        raise ValueError("labels: expected shape [N] = [%d], got %s" % (x.shape[1], list(labels.shape)))
    named_params = list(base.named_parameters())
    named_bufs = [(n, b) for n, b in base.named_buffers() if b.is_floating_point()]
    grads_before = {n: p.grad for n, p in named_params}
    bufs_before = {n: b.detach().clone() for n, b in base.named_buffers()}
    mem_saved = [(m, dict(_sj.memories(m))) for m in base.modules() if _sj.memories(m) is not None]
    params_before = {n: p.detach().clone() for n, p in named_params}
    try:
        for _, p in named_params:
            p.grad = None
        _sj.reset(base)
        xi = x.detach().clone().requires_grad_(True)
        with torch.random.fork_rng(devices=[x.device] if x.device.type == "cuda" else []):
            torch.manual_seed(seed)
            out = net(xi)
            lv = loss_fn(out, labels)
            lv.backward()
        tensors: Dict[str, torch.Tensor] = {
            "/input": x.detach(), "/labels": labels.detach().to(torch.int32), "/loss": lv.detach().float(),
            "/grads/input": xi.grad,
        }
        for n, t in params_before.items():
            mod, _, leaf = n.rpartition(".")
            if not mod:
                raise ValueError("%s: a parameter of the root module has no layer name in a dump (put it in a "
                                 "submodule)" % n)
            tensors["/params/%s/%s" % (mod, leaf)] = t
        for n, b in named_bufs:
            mod, _, leaf = n.rpartition(".")
            tensors["/params/%s/%s" % (mod, leaf)] = bufs_before[n]
            tensors["/after/%s/%s" % (mod, leaf)] = b.detach().clone()
        for n, p in named_params:
            if p.grad is not None:
                mod, _, leaf = n.rpartition(".")
                tensors["/grads/%s/%s" % (mod, leaf)] = p.grad.detach().clone()
        for name, m in base.named_modules():
            mem = _sj.memories(m)
            if mem is not None and isinstance(mem.get("mask"), torch.Tensor):
                tensors["/masks/%s" % name] = mem["mask"].detach().clone()
        return tensors
    finally:
        for n, p in named_params:
            p.grad = grads_before[n]
        for n, b in base.named_buffers():
            b.data.copy_(bufs_before[n])
        for m, d in mem_saved:
            _sj.memories(m).update(d)


def first_difference(a: Dict[str, torch.Tensor], b: Dict[str, torch.Tensor]):
    """The differing tensors of two steps, bit for bit, in path order: [(path, elements differing, max |diff|)]
    (a tensor present in one only counts as differing)."""
    out = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            out.append((k, -1, float("nan")))
            continue
        x, y = a[k].detach().cpu(), b[k].detach().cpu()
        if x.shape != y.shape or x.dtype != y.dtype:
            out.append((k, -1, float("nan")))
            continue
        if x.dtype == torch.float32:
            diff = x.contiguous().view(torch.int32) != y.contiguous().view(torch.int32)
        else:
            diff = x != y
        n = int(diff.sum())
        if n:
            out.append((k, n, float((x.double() - y.double()).abs().max())))
    return out


def dump_step(net: nn.Module, x: torch.Tensor, labels: torch.Tensor, path: str,
              loss: Union[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = "rate_mse",
              model: Optional[Dict[str, Any]] = None, seed: int = 0) -> Dict[str, Any]:
    """Runs one step of ``net`` on ``x`` [T, N, ...] and ``labels`` [N] and writes it to ``path`` as a remat
    gradient dump; returns {"loss": float, "tensors": count}.

    ``loss``: ``"rate_mse"``, ``"rate_ce"`` (remat's losses on the rate ``out.mean(0)``) or a callable
    ``(out, labels) -> loss``. ``net`` may be the module of ``apply_plan`` (the dump's ``plan`` attribute then
    says which plan, and names stay those of the user's module). ``seed`` seeds torch's generator for the step
    (dropout masks), inside a forked random state. ``model``: the model dict, recorded as the ``model``
    attribute (both dumps of a comparison must carry the same).

    Example::

        >>> remat_torch.dump_step(net, x, labels, "plain.h5", loss="rate_ce")
        >>> remat_torch.dump_step(remat_torch.apply_plan(net, model, "plan.json"), x, labels, "plan.h5",
        ...                       loss="rate_ce")
        >>> # remat verify --dump plain.h5 --dump plan.h5
    """
    import h5py

    _, plan_label = _base(net)
    tensors = step_tensors(net, x, labels, loss, seed)
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            for k in sorted(tensors):
                t = tensors[k].detach().cpu()
                if k != "/labels":
                    t = t.float()
                f.create_dataset(k, data=t.numpy())
            f.attrs["model"] = model_text(model) if model is not None else ""
            f.attrs["plan"] = plan_label
            f.attrs["seed"] = str(seed)
            f.attrs["backend"] = backend_label(x.device)
    return {"loss": float(tensors["/loss"]), "tensors": len(tensors)}
