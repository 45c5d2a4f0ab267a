"""_sj.py - what the bridge knows of SpikingJelly, without importing it.

SpikingJelly is optional: a model that uses it has imported it already, so its classes
are recognised by their module path and name, and its stateful modules (neurons, the
multi-step dropout) by their ``_memories`` dict (``base.MemoryModule``).
"""
from typing import Any, Dict, Optional

import torch.nn as nn

_PKG = "spikingjelly.activation_based"


def is_sj(m: Any) -> bool:
    return type(m).__module__.startswith(_PKG)


def is_neuron(m: Any) -> bool:
    """A SpikingJelly neuron (any BaseNode subclass)."""
    for t in type(m).__mro__:
        if t.__name__ == "BaseNode" and t.__module__.startswith(_PKG):
            return True
    return False


def neuron_kind(m: Any) -> Optional[str]:
    """'if', 'lif' or 'plif' for exactly IFNode / LIFNode / ParametricLIFNode; None for another neuron (QIF, ...)."""
    t = type(m)
    if not t.__module__.startswith(_PKG + ".neuron"):
        return None
    return {"IFNode": "if", "LIFNode": "lif", "ParametricLIFNode": "plif"}.get(t.__name__)


def surrogate_name(sg: Any) -> Optional[str]:
    t = type(sg)
    if not t.__module__.startswith(_PKG + ".surrogate"):
        return None
    return {"ATan": "atan", "Sigmoid": "sigmoid"}.get(t.__name__)


def memories(m: nn.Module) -> Optional[Dict[str, Any]]:
    """The state dict of a SpikingJelly MemoryModule (neuron potential v, dropout mask), or None."""
    mem = m.__dict__.get("_memories")
    return mem if isinstance(mem, dict) else None


def copy_reset(net: nn.Module) -> nn.Module:
    """A deep copy of net with every stateful module in its initial state; net is left as it was (its neuron
    potentials after a step are graph tensors, which deepcopy refuses)."""
    import copy

    saved = []
    for m in net.modules():
        mem = memories(m)
        if mem is not None:
            saved.append((mem, dict(mem)))
            rv = m.__dict__.get("_memories_rv", {})
            for k in mem:
                mem[k] = copy.deepcopy(rv[k]) if k in rv else None
    try:
        return copy.deepcopy(net)
    finally:
        for mem, d in saved:
            mem.update(d)


def reset(net: nn.Module) -> None:
    """functional.reset_net: every stateful module back to its initial state."""
    for m in net.modules():
        if memories(m) is not None and hasattr(m, "reset"):
            m.reset()
