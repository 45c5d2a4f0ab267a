"""cli_common.py - what the ``python3 -m remat_torch`` subcommands share: building the user's module from a
factory, and reading the size flags."""
import argparse
import importlib
import json
import sys
from typing import Any, Dict

import torch


def resolve(spec: str) -> Any:
    """'pkg.mod:NAME' -> the object; 'pkg.mod:NAME()' -> NAME called without arguments."""
    call = spec.endswith("()")
    if call:
        spec = spec[:-2]
    if ":" not in spec:
        raise ValueError("expected PKG.MOD:NAME, got %r" % spec)
    mod, _, attr = spec.partition(":")
    obj = importlib.import_module(mod)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj() if call else obj


def _kwargs(text: str) -> Dict[str, Any]:
    try:
        kw = json.loads(text)
    except ValueError as e:
        raise ValueError("--kwargs: expected a JSON object, got %r (%s)" % (text, e))
    if not isinstance(kw, dict):
        raise ValueError("--kwargs: expected a JSON object, got %r" % text)
    # "@pkg.mod:NAME" names a Python object (a neuron class), "@pkg.mod:NAME()" an instance (a surrogate)
    return {k: resolve(v[1:]) if isinstance(v, str) and v.startswith("@") else v for k, v in kw.items()}


def add_factory_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--factory", required=True, metavar="PKG.MOD:FN",
                    help="a function returning the module (e.g. spikingjelly.activation_based.model.sew_resnet:"
                         "sew_resnet18)")
    ap.add_argument("--kwargs", default="{}", metavar="JSON",
                    help='its keyword arguments; a string "@pkg.mod:NAME" is that Python object, '
                         '"@pkg.mod:NAME()" an instance of it')
    ap.add_argument("--seed", type=int, default=0, help="torch.manual_seed before the factory runs (default 0)")
    ap.add_argument("--step-mode", choices=["m", "keep"], default="m",
                    help="m (default): functional.set_step_mode(net, 'm') on SpikingJelly modules; keep: as built")


def build(a: argparse.Namespace) -> torch.nn.Module:
    fn = resolve(a.factory)
    torch.manual_seed(a.seed)
    net = fn(**_kwargs(a.kwargs))
    if not isinstance(net, torch.nn.Module):
        raise ValueError("--factory: %s returned a %s, expected a torch.nn.Module" % (a.factory, type(net).__name__))
    if a.step_mode == "m":
        for m in net.modules():
            if type(m).__module__.startswith("spikingjelly.activation_based") and hasattr(m, "step_mode"):
                m.step_mode = "m"
    return net


def shape_arg(text: str):
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        dims = ()
    if len(dims) not in (1, 2, 3) or min(dims) < 1:
        raise argparse.ArgumentTypeError("expected C,H,W, C,L or FEATURES (positive integers), got %r" % text)
    return dims


def fail(cmd: str, e: Exception) -> int:
    print("remat_torch %s: %s" % (cmd, e), file=sys.stderr)
    return 2
