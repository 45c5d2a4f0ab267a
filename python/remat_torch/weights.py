"""weights.py - a module's parameters and batch-norm statistics for ``remat run --init``.

The file is HDF5 with the layout of a gradient dump's ``/params`` (docs/trace-schema.md):
``/params/<layer>/<name>`` float32 in the parameter's real shape (a conv weight
``[out, in / groups, kh, kw]``, a conv1d weight ``[out, in / groups, k]``, a linear weight
``[out, in]``, batch norm ``weight``, ``bias``, ``running_mean``, ``running_var`` ``[C]``, a
ParametricLIFNode's scalar ``w`` as ``[1]``),
and the root string attribute ``model``
(the model file's text). A gradient dump is therefore a valid ``--init`` file too.
"""
from typing import Any, Dict, Iterator, Tuple

import torch
import torch.nn as nn

from remat_torch._atomic import atomic_path
from remat_torch.importer import model_text

_PARAMS = {"conv2d": ("weight", "bias"), "conv1d": ("weight", "bias"), "linear": ("weight", "bias"),
           "batchnorm": ("weight", "bias", "running_mean", "running_var"), "plif": ("w",)}


def layer_tensors(net: nn.Module, model: Dict[str, Any]) -> Iterator[Tuple[str, str, torch.Tensor]]:
    """(layer, name, tensor) for every parameter and batch-norm statistic remat has, in model order; the
    tensors are the module's own (not copies)."""
    mods = dict(net.named_modules())
    for l in model["layers"]:
        names = _PARAMS.get(l["type"], ())
        if not names:
            continue
        m = mods.get(l["name"])
        if m is None:
            raise ValueError("%s: no module of that name in %s (was the model imported from this module?)"
                             % (l["name"], type(net).__name__))
        for n in names:
            t = getattr(m, n, None)
            if t is None:
                if n == "bias" and not l.get("bias", True):
                    continue
                raise ValueError("%s (%s): has no %s" % (l["name"], type(m).__name__, n))
            yield l["name"], n, t


def save_weights(net: nn.Module, model: Dict[str, Any], path: str) -> None:
    """Writes the parameters and batch-norm statistics of ``net`` for ``remat run --model M.json --init path``.

    Example::

        >>> model = remat_torch.to_model(net, (3, 32, 32), T=4, N=8)
        >>> remat_torch.save_weights(net, model, "weights.h5")
    """
    import h5py

    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            for layer, name, t in layer_tensors(net, model):
                a = t.detach().cpu().float()
                f.create_dataset("/params/%s/%s" % (layer, name), data=(a.reshape(1) if a.dim() == 0 else a).numpy())
            f.attrs["model"] = model_text(model)


def load_weights(net: nn.Module, model: Dict[str, Any], path: str) -> None:
    """Copies ``/params/<layer>/<name>`` of a weights file (or a gradient dump) into ``net``'s parameters and
    batch-norm statistics, in place; ValueError naming the dataset on a missing one or another shape."""
    import h5py

    with h5py.File(path, "r") as f:
        for layer, name, t in layer_tensors(net, model):
            key = "/params/%s/%s" % (layer, name)
            if key not in f:
                raise ValueError("%s: %s: missing" % (path, key))
            v = torch.from_numpy(f[key][()])
            if t.dim() == 0 and tuple(v.shape) == (1,):  # a scalar (plif's w) is stored as [1]
                v = v.reshape(())
            if tuple(v.shape) != tuple(t.shape):
                raise ValueError("%s: %s: expected shape %s, got %s" % (path, key, list(t.shape), list(v.shape)))
            with torch.no_grad():
                t.copy_(v)
