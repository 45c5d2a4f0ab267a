"""test_remat_torch_options.py - the bridge on the layer options remat's model files take (conv groups,
dilation, padding 'same' / 'valid', Conv1d and the 1-d pools and batch norm on [C, L], pooling ceil_mode,
AdaptiveAvgPool2d, batch-norm momentum and eps), as torch.nn and as SpikingJelly's layer.* wrappers: what the
importer writes, remat's step against PyTorch's on the same weights, and remat's plans run by apply_plan.

    PYTHONPATH=python:python/tests REMAT_BIN=bazel-bin/tools/remat /usr/bin/python3 -m unittest \
        python/tests/test_remat_torch_options.py -v

The helpers (remat, the agreement check, the plan grid) are test_remat_torch.py's.
"""
import json
import os
import subprocess
import sys
import unittest

import test_remat_torch as base  # noqa: E402 (sets the paths, finds SpikingJelly and remat)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import nets  # noqa: E402
import remat_torch  # noqa: E402


def by_name(model):
    return {l["name"]: l for l in model["layers"]}


class ImportOptionsTorchNN(unittest.TestCase):
    """torch.nn modules with the options: the fields written, and remat's step from the same weights."""

    def net(self):
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                torch.manual_seed(7)
                self.dw = nn.Conv2d(3, 6, 3, padding="same", groups=3)
                self.bn = nn.BatchNorm2d(6, momentum=0.3, eps=1e-4)
                self.gd = nn.Conv2d(6, 4, (3, 2), dilation=(2, 1), groups=2, padding="valid", bias=False)
                self.mp = nn.MaxPool2d(2, ceil_mode=True)
                self.gap = nn.AdaptiveAvgPool2d((1, None))
                self.fc = nn.Linear(4 * 4, 5)

            def forward(self, x):
                T, N = x.shape[:2]
                y = self.gap(self.mp(self.gd(self.bn(self.dw(x.flatten(0, 1))))))
                return self.fc(torch.flatten(y.view((T, N) + tuple(y.shape[1:])), 2))
        return Net()

    def test_fields(self):
        m = by_name(remat_torch.to_model(self.net(), (3, 9, 8), T=2, N=2))
        self.assertEqual(m["dw"], {"name": "dw", "type": "conv2d", "in": 3, "out": 6, "kernel": 3, "stride": 1,
                                   "padding": 1, "groups": 3, "bias": True})
        self.assertEqual((m["bn"]["momentum"], m["bn"]["eps"]), (0.3, 1e-4))
        self.assertEqual(m["gd"], {"name": "gd", "type": "conv2d", "in": 6, "out": 4, "kernel": [3, 2], "stride": 1,
                                   "padding": 0, "dilation": [2, 1], "groups": 2, "bias": False})
        self.assertEqual(m["mp"], {"name": "mp", "type": "maxpool2d", "kernel": 2, "ceil_mode": True})
        # gd: 9 x 8 -> 5 x 7; mp with ceil_mode: 3 x 4; gap (1, None): an exact 3 x 1 average pool -> 1 x 4
        self.assertEqual(m["gap"], {"name": "gap", "type": "adaptiveavgpool2d", "out": [1, 4]})

    def test_step_matches_pytorch(self):
        base.need_remat(self)
        net = self.net()
        model = remat_torch.to_model(net, (3, 9, 8), T=2, N=2)
        mp = base.write_model(model, "opts_nn.json")
        wp, dp = os.path.join(base.TMP, "opts_nn_w.h5"), os.path.join(base.TMP, "opts_nn.h5")
        remat_torch.save_weights(net, model, wp)
        base.remat("run", "--model", mp, "--init", wp, "--dump", dp)
        rel, worst, gmax, n = base.rel_agreement(dp, net, "rate_mse")
        base.REPORT.append("agreement torch.nn options: %d tensors, max |remat - PyTorch| = %.3g of the largest "
                           "gradient (%.3g), worst %s" % (n, rel, gmax, worst))
        self.assertLess(rel, 1e-5, worst)

    def test_refusals(self):
        seq = base.ImportTorchNN.seq
        refused = base.ImportTorchNN.refused
        refused(self, seq(self, nn.Conv2d(4, 4, 2, padding="same"), nn.Flatten()), (4, 6, 6), "body.0 (Conv2d)",
                "padding='same' with dilation * (kernel - 1) odd")
        refused(self, seq(self, nn.AvgPool2d(2, ceil_mode=True), nn.Flatten()), (4, 5, 5), "body.0 (AvgPool2d)",
                "ceil_mode=True adds a last window")
        refused(self, seq(self, nn.MaxPool2d(2, dilation=2), nn.Flatten()), (4, 6, 6), "body.0 (MaxPool2d)",
                "dilation=1")
        refused(self, seq(self, nn.Conv2d(4, 4, 3, padding_mode="reflect"), nn.Flatten()), (4, 6, 6),
                "body.0 (Conv2d)", "padding_mode")


@unittest.skipUnless(base.HAVE_SJ, base.SJ_WHY)
class ImportOptionsSpikingJelly(unittest.TestCase):
    """SpikingJelly's layer.* wrappers with the options: fields, agreement with SpikingJelly's step, plans."""

    def test_fields_2d(self):
        m = by_name(remat_torch.to_model(nets.options_2d(), (2, 16, 16), T=2, N=2))
        types = [l["type"] for l in m.values()]
        self.assertEqual(types, ["conv2d", "batchnorm", "lif", "conv2d", "if", "maxpool2d", "conv2d", "batchnorm",
                                 "if", "avgpool2d", "adaptiveavgpool2d", "flatten", "linear", "lif"])
        self.assertEqual((m["0"]["groups"], m["0"]["padding"]), (2, 1))
        self.assertEqual((m["1"]["momentum"], m["1"]["eps"]), (0.2, 1e-3))
        self.assertEqual((m["3"]["groups"], m["3"]["dilation"], m["3"]["padding"]), (2, 2, 2))
        self.assertTrue(m["5"]["ceil_mode"] and m["9"]["ceil_mode"])
        self.assertEqual((m["6"]["groups"], m["6"]["padding"]), (8, 0))
        self.assertEqual(m["10"]["out"], 1)

    def test_fields_1d(self):
        model = remat_torch.to_model(nets.audio_1d(), (4, 32), T=2, N=2)
        m = by_name(model)
        self.assertEqual(model["input"]["shape"], [4, 32])
        self.assertEqual(m["0"], {"name": "0", "type": "conv1d", "in": 4, "out": 8, "kernel": 5, "stride": 1,
                                  "padding": 4, "dilation": 2, "groups": 4, "bias": True})
        self.assertEqual(m["1"], {"name": "1", "type": "batchnorm", "features": 8})
        self.assertEqual(m["3"], {"name": "3", "type": "maxpool1d", "kernel": 3, "stride": 2, "ceil_mode": True})
        self.assertEqual((m["4"]["type"], m["4"]["groups"], m["4"]["bias"]), ("conv1d", 2, False))
        self.assertEqual(m["6"], {"name": "6", "type": "avgpool1d", "kernel": 2})

    def test_cli_import_of_a_1d_input(self):
        out = os.path.join(base.TMP, "cli_1d.json")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(base.ROOT, "python"),
                                                           os.path.dirname(os.path.abspath(__file__)), base.SJ_PATH]))
        p = subprocess.run([sys.executable, "-m", "remat_torch", "import", "--factory", "nets:audio_1d",
                            "--input-shape", "4,32", "--T", "4", "--N", "2", "--out", out],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["input"]["shape"], [4, 32])

    def test_agreement_2d(self):
        base.Agreement.check(self, "options_2d", nets.options_2d(), (2, 16, 16), 4, 2, "rate_mse")

    def test_agreement_1d(self):
        base.Agreement.check(self, "audio_1d", nets.audio_1d(), (4, 32), 4, 2, "rate_ce")

    def test_plans_2d(self):
        base.ApplyPlan.grid(self, "options_2d", nets.options_2d(), (2, 16, 16), 4, 2, "rate_mse", 8, spikes=True)

    def test_plans_1d(self):
        base.ApplyPlan.grid(self, "audio_1d", nets.audio_1d(), (4, 32), 4, 2, "rate_ce", 8, spikes=True)


_REPORT_FROM = [0]


def setUpModule():
    os.makedirs(base.TMP, exist_ok=True)  # test_remat_torch's teardown may have removed it
    _REPORT_FROM[0] = len(base.REPORT)


def tearDownModule():
    new = base.REPORT[_REPORT_FROM[0]:]
    del base.REPORT[_REPORT_FROM[0]:]
    base.tearDownModule()
    if new:
        print("\n" + "\n".join(new), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
