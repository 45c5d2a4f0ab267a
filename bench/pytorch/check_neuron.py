#!/usr/bin/python3
"""check_neuron.py - checks bench/pytorch/snn.py's multi-step neuron against plain autograd.

  /usr/bin/python3 bench/pytorch/check_neuron.py      (exit 0: all match, 1: a mismatch)

The reference builds the same T steps out of ordinary differentiable ops, with a
per-step Heaviside whose backward is the surrogate sg(u) (snn.SurrogateSpike) and the reset written as in
docs/determinism.md (detach_reset: the spike in the reset is detached). Autograd then derives
the backward recurrence by itself; the hand-written recurrence of snn.MultiStepNeuron
must agree with it (float64, relative 1e-10) for every option combination, and the
forward spikes must be identical.
"""
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True

import torch  # noqa: E402

import snn  # noqa: E402


def reference(x, cfg):
    vth, vr = cfg["v_threshold"], cfg["v_reset"]
    v = torch.full_like(x[0], 0.0 if vr is None else vr)
    out = []
    for t in range(x.shape[0]):
        if cfg["type"] == "if":
            h = v + x[t]
        elif cfg["decay_input"]:
            h = v + (x[t] - (v - (0.0 if vr is None else vr))) / cfg["tau"]
        else:
            h = v - (v - (0.0 if vr is None else vr)) / cfg["tau"] + x[t]
        s = snn.SurrogateSpike.apply(h - vth, cfg["surrogate"] == "sigmoid", cfg["alpha"])
        sr = s.detach() if cfg["detach_reset"] else s
        v = h - sr * vth if vr is None else h * (1 - sr) + vr * sr
        out.append(s)
    return torch.stack(out)


def main():
    torch.manual_seed(0)
    bad = 0
    n = 0
    for kind, reset, detach, sur, decay in itertools.product(["if", "lif"], [0.0, -0.25, None], [False, True],
                                                            ["sigmoid", "atan"], [True, False]):
        if kind == "if" and not decay:
            continue
        layer = {"type": kind, "v_reset": reset, "detach_reset": detach, "surrogate": sur, "decay_input": decay,
                 "tau": 3.0, "v_threshold": 0.8}
        cfg = snn.neuron_cfg(layer)
        x = (torch.rand(7, 3, 5, dtype=torch.float64) * 1.5).requires_grad_()
        gs = torch.randn(7, 3, 5, dtype=torch.float64)
        s1 = snn.MultiStepNeuron.apply(x, cfg)
        (g1,) = torch.autograd.grad(s1, x, gs)
        s2 = reference(x, cfg)
        (g2,) = torch.autograd.grad(s2, x, gs)
        n += 1
        ok = torch.equal(s1, s2) and torch.allclose(g1, g2, rtol=1e-10, atol=1e-12)
        if not ok:
            bad += 1
            print("MISMATCH", layer, float((g1 - g2).abs().max()))
    print("check_neuron: %d option combinations, %d mismatches" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
