"""test_remat_torch_plif.py - SpikingJelly's ParametricLIFNode through the bridge: the importer writes a ``plif``
layer (its w into the weights file), remat's step from the same weights agrees with SpikingJelly's own
ParametricLIFNode step (loss, every gradient, w's included), and remat's plans run by apply_plan.

    PYTHONPATH=python:python/tests REMAT_BIN=bazel-bin/tools/remat /usr/bin/python3 -m unittest \
        python/tests/test_remat_torch_plif.py -v

The helpers are test_remat_torch.py's (it finds SpikingJelly through REMAT_SPIKINGJELLY; without it these
tests skip with the reason).
"""
import math
import os
import sys
import unittest

import test_remat_torch as base  # noqa: E402 (sets the paths, finds SpikingJelly and remat)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import remat_torch  # noqa: E402


def plif_net(seed: int = 4) -> nn.Module:
    """Linear layers and ParametricLIFNode with each option remat maps: decay_input false with v_reset -0.25 and
    ATan; soft reset with detach_reset and Sigmoid(alpha=2.5); a threshold and v_reset 0.125. Every w is moved
    off its initial value (a trained tau). Input [12]."""
    from spikingjelly.activation_based import functional, layer, neuron, surrogate
    torch.manual_seed(seed)
    net = nn.Sequential(
        layer.Linear(12, 16),
        neuron.ParametricLIFNode(init_tau=3.0, decay_input=False, v_reset=-0.25, surrogate_function=surrogate.ATan()),
        layer.Linear(16, 16),
        neuron.ParametricLIFNode(v_reset=None, detach_reset=True, surrogate_function=surrogate.Sigmoid(alpha=2.5)),
        layer.Linear(16, 4),
        neuron.ParametricLIFNode(init_tau=1.5, v_threshold=0.75, v_reset=0.125))
    with torch.no_grad():
        for m in net.modules():
            if hasattr(m, "w"):
                m.w.add_(0.3)
            if isinstance(m, nn.Linear):
                m.weight.mul_(3.0)  # enough input that every layer spikes
    functional.set_step_mode(net, "m")
    return net


@unittest.skipUnless(base.HAVE_SJ, base.SJ_WHY)
class PlifSpikingJelly(unittest.TestCase):

    def test_fields_and_weights(self):
        net = plif_net()
        model = remat_torch.to_model(net, (12,), T=4, N=2)
        by = {l["name"]: l for l in model["layers"]}
        self.assertEqual([l["type"] for l in model["layers"]], ["linear", "plif"] * 3)
        w1 = float(net[1].w)
        self.assertEqual(by["1"], {"name": "1", "type": "plif", "surrogate": "atan", "v_reset": -0.25,
                                   "init_tau": 1.0 + math.exp(-w1), "decay_input": False})
        self.assertEqual(by["3"]["v_reset"], None)
        self.assertTrue(by["3"]["detach_reset"])
        self.assertEqual(by["3"]["alpha"], 2.5)
        self.assertEqual((by["5"]["v_threshold"], by["5"]["v_reset"]), (0.75, 0.125))
        tensors = {(l, n): t for l, n, t in remat_torch.weights.layer_tensors(net, model)}
        self.assertIs(tensors[("1", "w")], net[1].w)

    def test_agreement(self):
        # remat's step from the module's weights against SpikingJelly's ParametricLIFNode step: /grads/<layer>/w too
        base.Agreement.check(self, "plif", plif_net(), (12,), 6, 4, "rate_mse")

    def test_plans(self):
        base.ApplyPlan.grid(self, "plif", plif_net(), (12,), 6, 2, "rate_mse", 8)


def setUpModule():
    os.makedirs(base.TMP, exist_ok=True)


def tearDownModule():
    new = list(base.REPORT)
    del base.REPORT[:]
    base.tearDownModule()
    if new:
        print("\n" + "\n".join(new), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
