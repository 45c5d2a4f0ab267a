"""test_remat_torch.py - the Python bridge (python/remat_torch) against remat and against itself.

    PYTHONPATH=python:python/tests REMAT_BIN=bazel-bin/tools/remat /usr/bin/python3 -m unittest \
        discover -s python/tests -v

SpikingJelly is taken from ../shared/third_party/spikingjelly (or $REMAT_SPIKINGJELLY); the tests
that need it skip with that reason where it is absent. The remat binary is $REMAT_BIN (test.sh
sets it; a missing one is then a failure) or bazel-bin/tools/remat.
"""
import copy
import json
import os

# Debian's torch calls OpenBLAS, whose threads torch.set_num_threads does not reach; with more than one, a GEMM
# splits its rows between threads by the row count, so a time chunk's rows can round differently. One thread, as
# docs/pytorch.md asks of a bit-for-bit check on the CPU. Set before torch loads OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn as nn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
SJ_PATH = os.environ.get("REMAT_SPIKINGJELLY", os.path.join(ROOT, "..", "shared", "third_party", "spikingjelly"))
if os.path.isdir(os.path.join(SJ_PATH, "spikingjelly")):
    sys.path.insert(0, SJ_PATH)
try:
    import spikingjelly.activation_based  # noqa: F401
    HAVE_SJ, SJ_WHY = True, ""
except ImportError as e:  # visible in the unittest output
    HAVE_SJ, SJ_WHY = False, "SpikingJelly not found at %s (%s)" % (SJ_PATH, e)

import remat_torch  # noqa: E402
from remat_torch.apply import compress, decompress  # noqa: E402
from remat_torch.dump import first_difference, step_tensors  # noqa: E402
from remat_torch.losses import rate_loss  # noqa: E402
from remat_torch.profile import step_peaks, train_step  # noqa: E402

import nets  # noqa: E402

torch.set_num_threads(1)
REMAT = os.environ.get("REMAT_BIN", os.path.join(ROOT, "bazel-bin", "tools", "remat"))
REMAT_REQUIRED = "REMAT_BIN" in os.environ
TMP = tempfile.mkdtemp(prefix="remat_torch_test_")
REPORT = []  # figures printed at the end (agreement, plans, peaks)


def need_remat(test):
    if not os.access(REMAT, os.X_OK):
        if REMAT_REQUIRED:
            test.fail("REMAT_BIN=%s is not an executable" % REMAT)
        test.skipTest("the remat binary is not built (%s); bazel build //tools:remat" % REMAT)


def remat(*args, check=True):
    p = subprocess.run([REMAT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if check and p.returncode != 0:
        raise AssertionError("remat %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr))
    return p


def write_model(model, name):
    path = os.path.join(TMP, name)
    remat_torch.write_model(model, path)
    return path


def rel_agreement(dump_path, net, loss, masks=None):
    """Max |remat - torch| over the loss and every gradient, relative to the largest gradient; and the worst
    tensor. The torch step runs net on remat's input and labels."""
    import h5py
    with h5py.File(dump_path, "r") as f:
        x = torch.from_numpy(f["/input"][()])
        labels = torch.from_numpy(f["/labels"][()]).long()
        want = {k: torch.tensor(f[k][()]) for k in _datasets(f) if k.startswith("/grads/") or k == "/loss"}
        mask_vals = {k: torch.from_numpy(f[k][()]) for k in _datasets(f) if k.startswith("/masks/")}
    mods = dict(net.named_modules())

    def loss_fn(out, lab):
        return rate_loss(out, lab, loss)

    from remat_torch import _sj

    class WithMasks(nn.Module):  # remat's dropout masks into SpikingJelly's layer.Dropout
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, xx):
            for k, v in mask_vals.items():
                _sj.memories(mods[k[len("/masks/"):]])["mask"] = v
            return self.inner(xx)

    got = step_tensors(WithMasks(net) if mask_vals else net, x, labels, loss_fn)
    got = {("/grads/" + k[len("/grads/inner."):] if k.startswith("/grads/inner.") else k): v for k, v in got.items()}
    gmax = max(float(v.abs().max()) for k, v in want.items() if k.startswith("/grads/"))
    worst, worst_k = 0.0, None
    for k, v in want.items():
        g = got[k].reshape(v.shape)
        d = float((g.double() - v.double()).abs().max())
        if d > worst:
            worst, worst_k = d, k
    return worst / gmax, worst_k, gmax, len(want)


def _datasets(f):
    out = []
    f.visit(lambda n: out.append("/" + n) if hasattr(f[n], "shape") else None)
    return out


# --- import ----------------------------------------------------------------------------------------------------

class ImportTorchNN(unittest.TestCase):
    """torch.nn only (no SpikingJelly): mapping, names, refusals."""

    def test_plain_torch_layers_map_and_load(self):
        class Res(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
                self.bn = nn.BatchNorm2d(4)

            def forward(self, x):
                T, N = x.shape[:2]
                y = self.bn(self.conv(x.flatten(0, 1))).view(T, N, 4, 8, 8)
                return x + y

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 4, 3, padding="same")
                self.res = Res()
                self.pool = nn.AvgPool2d(2)
                self.gap = nn.AdaptiveAvgPool2d((2, 2))
                self.fc = nn.Linear(16, 5)

            def forward(self, x):
                T, N = x.shape[:2]
                x = self.stem(x.flatten(0, 1)).view(T, N, 4, 8, 8)
                x = self.res(x)
                x = self.gap(self.pool(x.flatten(0, 1)))
                return self.fc(torch.flatten(x.view(T, N, 4, 2, 2), 2))

        m = remat_torch.to_model(Net(), (3, 8, 8), T=2, N=2)
        types = [(l["name"], l["type"]) for l in m["layers"]]
        self.assertEqual(types, [("stem", "conv2d"), ("res.conv", "conv2d"), ("res.bn", "batchnorm"),
                                 ("res.add", "add"), ("pool", "avgpool2d"), ("gap", "adaptiveavgpool2d"),
                                 ("flatten", "flatten"), ("fc", "linear")])
        self.assertEqual(m["layers"][0]["padding"], 1)  # 'same' with a 3x3 kernel
        self.assertEqual(m["layers"][1]["input"] if "input" in m["layers"][1] else None, None)
        self.assertEqual(m["layers"][5]["out"], 2)  # 4x4 -> 2x2: an exact average pool
        self.assertEqual(m["classes"], 5)
        if os.access(REMAT, os.X_OK):
            out = remat("run", "--model", write_model(m, "torchnn.json"), "--json")
            self.assertGreater(json.loads(out.stdout)["peak_live_bytes"], 0)

    def test_batchnorm_momentum_and_eps(self):
        torch.manual_seed(5)
        net = self.seq(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4, momentum=0.3, eps=1e-3), nn.Flatten(), nn.Linear(64, 3))
        m = remat_torch.to_model(net, (2, 6, 6), T=2, N=2)
        bn = [l for l in m["layers"] if l["name"] == "body.1"][0]
        self.assertEqual((bn["type"], bn["momentum"], bn["eps"]), ("batchnorm", 0.3, 1e-3))
        plain = remat_torch.to_model(self.seq(nn.Conv2d(2, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(64, 3)),
                                     (2, 6, 6), T=2, N=2)
        self.assertNotIn("momentum", [l for l in plain["layers"] if l["name"] == "body.1"][0])
        if not os.access(REMAT, os.X_OK):
            return
        # remat's step from the same weights: the running statistics PyTorch's training forward leaves
        mp, wp, dp = write_model(m, "bnopt.json"), os.path.join(TMP, "bnopt_w.h5"), os.path.join(TMP, "bnopt.h5")
        remat_torch.save_weights(net, m, wp)
        remat("run", "--model", mp, "--init", wp, "--dump", dp)
        import h5py
        with h5py.File(dp, "r") as f:
            x = torch.from_numpy(f["/input"][()])
            after = {k: torch.from_numpy(f["/after/body.1/" + k][()]) for k in ("running_mean", "running_var")}
        ref = copy.deepcopy(net).train()
        with torch.no_grad():
            ref(x)
        for k, v in after.items():
            want = getattr(ref.body[1], k)
            self.assertLess(float((v.double() - want.double()).abs().max()), 1e-6 * float(want.abs().max()) + 1e-7, k)

    def refused(self, net, shape, *needles):
        with self.assertRaises(ValueError) as cm:
            remat_torch.to_model(net, shape, T=2, N=2)
        msg = str(cm.exception)
        for n in needles:
            self.assertIn(n, msg)
        self.assertIn("supported:", msg)
        return msg

    def seq(self, *mods):
        class S(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Sequential(*mods)

            def forward(self, x):
                T, N = x.shape[:2]
                y = self.body(x.flatten(0, 1))
                return y.view((T, N) + tuple(y.shape[1:]))
        return S()

    def test_refusals_name_the_module_its_type_and_why(self):
        self.refused(self.seq(nn.Conv2d(4, 4, 3, padding_mode="circular"), nn.Flatten()), (4, 6, 6),
                     "body.0 (Conv2d)", "padding_mode='circular'")
        self.refused(self.seq(nn.MaxPool2d(2, dilation=2), nn.Flatten()), (4, 8, 8), "body.0 (MaxPool2d)",
                     "dilation=1")
        self.refused(self.seq(nn.AvgPool2d(2, ceil_mode=True), nn.Flatten()), (4, 5, 5), "body.0 (AvgPool2d)",
                     "ceil_mode")
        self.refused(self.seq(nn.Flatten(), nn.LayerNorm(16)), (1, 4, 4), "body.1 (LayerNorm)",
                     "no remat equivalent")
        self.refused(self.seq(nn.Flatten(), nn.ReLU()), (1, 4, 4), "body.1 (ReLU)")
        self.refused(self.seq(nn.Flatten(), nn.Dropout(0.5)), (1, 4, 4), "body.1 (Dropout)", "layer.Dropout")
        self.refused(self.seq(nn.AdaptiveAvgPool2d((7, 7)), nn.Flatten()), (1, 4, 4),
                     "body.0 (AdaptiveAvgPool2d)", "upsampling")
        self.refused(self.seq(nn.Conv2d(4, 4, 3), nn.BatchNorm2d(4, momentum=None), nn.Flatten()), (4, 5, 5),
                     "body.1 (BatchNorm2d)", "momentum=None")

        class Scaled(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 3)

            def forward(self, x):
                return self.fc(x * 2.0)
        self.refused(Scaled(), (4,), "mul", "no remat equivalent")

        class Dead(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 3)

            def forward(self, x):
                self.a(x)
                return self.b(x)
        self.refused(Dead(), (4,), "a (Linear)", "never read")


@unittest.skipUnless(HAVE_SJ, SJ_WHY)
class ImportSpikingJelly(unittest.TestCase):
    def test_sew_resnet18_names_blocks_and_fields(self):
        net = nets.sew_resnet18()
        m = remat_torch.to_model(net, (3, 32, 32), T=2, N=2, loss="rate_ce")
        by = {l["name"]: l for l in m["layers"]}
        self.assertEqual([b["name"] for b in m["blocks"]],
                         ["stem", "layer1.0", "layer1.1", "layer2.0", "layer2.1", "layer3.0", "layer3.1", "layer4.0",
                          "layer4.1", "head"])
        self.assertEqual(by["sn1"], {"name": "sn1", "type": "if", "detach_reset": True, "surrogate": "atan"})
        self.assertEqual(by["layer2.0.downsample.0"]["input"], "layer1.1.add")
        self.assertEqual(by["layer2.0.add"], {"name": "layer2.0.add", "type": "add", "from": "layer2.0.sn2"})
        self.assertEqual((by["avgpool"]["type"], by["avgpool"]["out"]), ("adaptiveavgpool2d", 1))  # of a 1x1 map
        self.assertEqual(len(m["layers"]), 72)

    def test_vgg_lif_fields(self):
        m = remat_torch.to_model(nets.vgg_lif(), (2, 16, 16), T=4, N=2)
        by = {l["name"]: l for l in m["layers"]}
        self.assertEqual(by["4"], {"name": "4", "type": "lif", "detach_reset": True, "surrogate": "atan",
                                   "tau": 4.0 / 3.0, "decay_input": False})
        self.assertEqual(by["7"], {"name": "7", "type": "lif", "v_reset": None, "surrogate": "sigmoid",
                                   "alpha": 3.0})
        self.assertEqual(by["6.0"]["type"], "conv2d")
        self.assertEqual(by["10"], {"name": "10", "type": "dropout", "p": 0.25})

    def test_refusals(self):
        from spikingjelly.activation_based import functional, layer, neuron
        from spikingjelly.activation_based.model import sew_resnet, spiking_vgg
        vgg = spiking_vgg.spiking_vgg11_bn(spiking_neuron=neuron.LIFNode, num_classes=10)
        functional.set_step_mode(vgg, "m")
        with self.assertRaises(ValueError) as cm:
            remat_torch.to_model(vgg, (3, 32, 32), T=2, N=2)
        self.assertIn("avgpool (AdaptiveAvgPool2d): output 7x7 from a 1x1 input", str(cm.exception))
        iand = sew_resnet.sew_resnet18(spiking_neuron=neuron.IFNode, cnf="IAND", num_classes=10)
        functional.set_step_mode(iand, "m")
        with self.assertRaises(ValueError) as cm:
            remat_torch.to_model(iand, (3, 32, 32), T=2, N=2)
        self.assertIn("layer1.0", str(cm.exception))
        qif = nn.Sequential(layer.Flatten(), layer.Linear(16, 4), neuron.QIFNode())
        functional.set_step_mode(qif, "m")
        with self.assertRaises(ValueError) as cm:
            remat_torch.to_model(qif, (1, 4, 4), T=2, N=2)
        self.assertIn("2 (QIFNode)", str(cm.exception))
        single = nn.Sequential(layer.Flatten(), layer.Linear(16, 4), neuron.IFNode())  # step_mode 's'
        with self.assertRaises(ValueError) as cm:
            remat_torch.to_model(single, (1, 4, 4), T=2, N=2)
        self.assertIn("multi-step", str(cm.exception))

    def test_cli_import_writes_model_and_weights(self):
        out, w = os.path.join(TMP, "cli.json"), os.path.join(TMP, "cli.h5")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"),
                                                           os.path.dirname(os.path.abspath(__file__)), SJ_PATH]))
        p = subprocess.run([sys.executable, "-m", "remat_torch", "import", "--factory", "nets:vgg_lif",
                            "--kwargs", '{"channels": 4}', "--input-shape", "2,16,16", "--T", "4", "--N", "2",
                            "--optimizer", "adam", "--lr", "0.001", "--out", out, "--weights", w],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("written to", p.stdout)
        with open(out) as f:
            m = json.load(f)
        self.assertEqual(m["optimizer"], {"type": "adam", "lr": 0.001})
        p = subprocess.run([sys.executable, "-m", "remat_torch", "import", "--factory", "nets:vgg_lif",
                            "--input-shape", "2,3,3", "--T", "4", "--N", "2", "--out", out], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


# --- remat run --init: agreement with SpikingJelly ----------------------------------------------------------------

@unittest.skipUnless(HAVE_SJ, SJ_WHY)
class Agreement(unittest.TestCase):
    """One step of the imported model on remat (remat run --init --dump) against SpikingJelly's own step on the
    same input and weights: the loss and every gradient within 1e-5 of the largest gradient."""

    def check(self, label, net, shape, T, N, loss):
        need_remat(self)
        torch.manual_seed(3)
        for m in net.modules():  # batch-norm statistics other than 0/1, so --init visibly carries them
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.9, 1.1)
        model = remat_torch.to_model(net, shape, T=T, N=N, loss=loss)
        mp = write_model(model, label + ".json")
        wp = os.path.join(TMP, label + "_w.h5")
        remat_torch.save_weights(net, model, wp)
        dp = os.path.join(TMP, label + "_dump.h5")
        remat("run", "--model", mp, "--init", wp, "--dump", dp)
        import h5py
        with h5py.File(dp, "r") as f:  # the dump starts from the user's weights, in their real shapes
            for layer, name, t in remat_torch.weights.layer_tensors(net, model):
                v = f["/params/%s/%s" % (layer, name)][()]
                if t.dim() == 0 and v.shape == (1,):  # a scalar (ParametricLIFNode's w) is stored as [1]
                    v = v.reshape(())
                self.assertEqual(tuple(v.shape), tuple(t.shape), layer)
                self.assertTrue(torch.equal(torch.from_numpy(v), t.detach()), layer)
        rel, worst, gmax, n = rel_agreement(dp, net, loss)
        REPORT.append("agreement %s: %d tensors (loss and gradients), max |remat - SpikingJelly| = %.3g of the "
                      "largest gradient (%.3g), worst %s" % (label, n, rel, gmax, worst))
        self.assertLess(rel, 1e-5, "%s: %s differs by %.3g of the largest gradient" % (label, worst, rel))

    def test_sew_resnet18(self):
        # 64 x 64: layer4's batch norm then sees 16 values per channel (4 at 32 x 32, where rounding differences
        # grow to about 1e-5 of the largest gradient)
        self.check("sew_resnet18", nets.sew_resnet18(), (3, 64, 64), 2, 2, "rate_ce")

    def test_vgg_lif(self):
        self.check("vgg_lif", nets.vgg_lif(), (2, 16, 16), 4, 2, "rate_mse")

    def test_init_refuses_other_shapes_one_line_each(self):
        need_remat(self)
        model = remat_torch.to_model(nets.vgg_lif(channels=4), (2, 16, 16), T=4, N=2)
        other = remat_torch.to_model(nets.vgg_lif(channels=6), (2, 16, 16), T=4, N=2)
        wp = os.path.join(TMP, "narrow.h5")
        remat_torch.save_weights(nets.vgg_lif(channels=4), model, wp)
        p = remat("run", "--model", write_model(other, "wide.json"), "--init", wp, check=False)
        self.assertEqual(p.returncode, 2)
        lines = p.stderr.strip().splitlines()
        self.assertIn("remat run: --init: %s: /params/0/weight: expected float32 [6, 2, 3, 3] (layer \"0\", conv2d), "
                      "got float32 [4, 2, 3, 3]" % wp, lines)
        self.assertGreaterEqual(len(lines), 8)


# --- apply_plan ----------------------------------------------------------------------------------------------

class Compressors(unittest.TestCase):
    def test_round_trip_and_refusals(self):
        g = torch.Generator().manual_seed(1)
        spikes = (torch.rand(3, 2, 5, 7, generator=g) < 0.3).float()
        counts = torch.randint(0, 256, (3, 2, 11), generator=g).float()
        for comp, x in [("bit", spikes), ("bool", spikes), ("sparse", spikes), ("uint8", spikes),
                        ("uint8", counts), ("none", counts)]:
            y = decompress(compress(x, comp, "t"))
            self.assertTrue(torch.equal(x.view(torch.int32), y.view(torch.int32)), comp)
        minus0 = torch.full_like(spikes, -0.0)  # -0.0 would come back as +0.0: not lossless
        for comp, bad, what in [("bit", counts + 2, "stores spikes"), ("sparse", spikes * 0.5, "stores spikes"),
                                ("bool", minus0, "stores spikes"), ("uint8", counts + 0.5, "integers 0..255"),
                                ("uint8", minus0, "integers 0..255"), ("uint8", counts + 256, "integers 0..255"),
                                ("bit", minus0, "stores spikes")]:
            with self.assertRaises(ValueError) as cm:
                compress(bad, comp, "segment at 'x'")
            self.assertIn(what, str(cm.exception))
            self.assertIn("segment at 'x'", str(cm.exception))


def plain_vs_plan(net, model, plan, x, labels, loss):
    wrapped = remat_torch.apply_plan(net, model, plan)
    a = step_tensors(net, x, labels, loss, seed=4)
    b = step_tensors(wrapped, x, labels, loss, seed=4)
    return wrapped, first_difference(a, b), a


def without_chunks(plan):
    """The same plan with every k = 1 (notation)."""
    return ",".join("/".join(o for o in e.split("/") if not (o.startswith("k") and o[1:].isdigit()))
                    for e in plan.split(","))


def has_chunks(plan):
    return any(o.startswith("k") and o[1:].isdigit() for e in plan.split(",") for o in e.split("/")[1:])


def rel_diff(diffs, ref):
    """The largest difference relative to the largest element of its tensor."""
    return max([d[2] / max(float(ref[d[0]].abs().max()), 1e-30) for d in diffs] or [0.0])


@unittest.skipUnless(HAVE_SJ, SJ_WHY)
class ApplyPlan(unittest.TestCase):
    """Plans remat writes for the imported models (a seeded sample of remat verify's grid), run on the user's
    module: bit-identical to its plain step, except the weight gradients of conv/linear layers inside time-
    chunked segments (PyTorch sums them chunk by chunk: the KernelBatchInvariance test shows the kernel)."""

    def grid(self, label, net, shape, T, N, loss, sample, spikes=False):
        need_remat(self)
        model = remat_torch.to_model(net, shape, T=T, N=N, loss=loss, input_kind="spikes" if spikes else "analog")
        mp = write_model(model, label + "_grid.json")
        p = remat("verify", "--model", mp, "--grid", "--sample", str(sample), "--equivalence-only", "--json",
                  "--no-compress-check")
        plans = [r["plan"] for r in json.loads(p.stdout)["plans"]]
        self.assertGreaterEqual(len(plans), min(sample, 4))
        g = torch.Generator().manual_seed(2)
        x = torch.rand((T, N) + shape, generator=g)
        if spikes:
            x = (x < 0.3).float()
        labels = torch.randint(0, model["classes"], (N,), generator=g)
        identical, close, worst, kinds = 0, 0, 0.0, set()
        for plan in plans:
            wrapped, diffs, ref = plain_vs_plan(net, model, plan, x, labels, loss)
            if not has_chunks(plan):
                self.assertEqual(diffs, [], "%s: plan %s" % (label, plan))
            elif diffs:
                # time chunks: PyTorch's conv/linear kernels on T*N/k rows (KernelBatchInvariance); the same plan
                # without chunks is bit-identical, and the difference is rounding
                _, d1, _ = plain_vs_plan(net, model, without_chunks(plan), x, labels, loss)
                self.assertEqual(d1, [], "%s: plan %s" % (label, without_chunks(plan)))
                r = rel_diff(diffs, ref)
                self.assertLess(r, 1e-4, "%s: plan %s: %s" % (label, plan, diffs[:3]))
                worst = max(worst, r)
                close += 1
            if not diffs:
                identical += 1
            for e in plan.split(","):
                kinds.add(e.split(":")[1].split("/")[0] if ":" in e else "none")
                kinds.update(o.rstrip("0123456789").split("@")[0] for o in e.split("/")[1:])
        REPORT.append("apply_plan %s: %d plans of remat's grid (sample %d of %s): %d bit-identical; %d with time "
                      "chunks differ by rounding (at most %.2g of a tensor's largest element; without chunks each is "
                      "bit-identical); kinds %s" % (label, len(plans), sample, json.loads(p.stdout)["grid_size"],
                                                     identical, close, worst, ", ".join(sorted(kinds))))
        return identical

    def test_sew_resnet18_grid(self):
        n = self.grid("sew_resnet18", nets.sew_resnet18(), (3, 32, 32), 2, 2, "rate_ce", 10)
        self.assertGreater(n, 0)

    def test_vgg_lif_grid(self):
        self.grid("vgg_lif", nets.vgg_lif(), (2, 16, 16), 4, 2, "rate_mse", 12, spikes=True)

    def test_each_kind_of_plan(self):
        net = nets.vgg_lif()
        T, N = 4, 2
        model = remat_torch.to_model(net, (2, 16, 16), T=T, N=N)
        self.assertEqual([b["name"] for b in model["blocks"]], ["stem", "b2", "b3", "head"])
        g = torch.Generator().manual_seed(5)
        x = (torch.rand(T, N, 2, 16, 16, generator=g) < 0.4).float()
        labels = torch.randint(0, 10, (N,), generator=g)
        # True: bit-identical; None: time chunks, only chunked conv/linear weight gradients may differ
        for plan, identical in [("stem:bit", True), ("b2:sparse", True), ("b2:bool", True), ("b2/split@4", True),
                                ("b3/split@7", True), ("stem/span4", True), ("b2:uint8/span3", True),
                                ("b2/k2/split@4", None), ("head/k4/split@12", None), ("b2:bit/k2", None),
                                ("head:bit/k4", None), ("b2:bit/k4", None)]:
            wrapped, diffs, ref = plain_vs_plan(net, model, plan, x, labels, "rate_mse")
            if identical:
                self.assertEqual(diffs, [], plan)
            else:
                self.assertTrue(wrapped.chunked_weight_layers(), plan)
                self.assertLess(rel_diff(diffs, ref), 1e-4, plan)
                self.assertEqual(plain_vs_plan(net, model, without_chunks(plan), x, labels, "rate_mse")[1], [], plan)
        # the segment input at a split must suit the compressor: a conv output is real
        with self.assertRaises(ValueError) as cm:
            step_tensors(remat_torch.apply_plan(net, model, "b2:sparse/split@4"), x, labels)
        self.assertIn("segment at '4' (block 'b2'): compressor 'sparse' stores spikes", str(cm.exception))
        # a non-binary value under a spike compressor is refused when the forward meets it
        with self.assertRaises(ValueError) as cm:
            step_tensors(remat_torch.apply_plan(net, model, "stem:bit"), x * 0.5, labels)
        self.assertIn("segment at '0' (block 'stem'): compressor 'bit' stores spikes", str(cm.exception))

    def test_plan_refusals(self):
        net = nets.vgg_lif()
        model = remat_torch.to_model(net, (2, 16, 16), T=4, N=2)
        for plan, msg in [("stem/k2", "stem' has batch norm"), ("b9", "expected a block of model"),
                          ("b2/span9", "blocks[0].span"), ("stem/split@0", "blocks[0].splits"),
                          ({"blocks": [{"name": "b2", "k": 2}]}, "checkpoint: expected true"),
                          ({"blocks": [{"name": "b2", "checkpoint": True, "compressor": "zip"}]}, "compressor"),
                          ("stem/span2,b2", "which the plan names too"),
                          ({"blocks": [{"name": "stem", "checkpoint": True, "span": 2}, {"name": "b2"}]},
                           "which the plan names too")]:
            with self.assertRaises(ValueError) as cm:
                remat_torch.apply_plan(net, model, plan)
            self.assertIn(msg, str(cm.exception))
        sew = nets.sew_resnet18()
        sm = remat_torch.to_model(sew, (3, 32, 32), T=2, N=2)
        with self.assertRaises(ValueError) as cm:
            remat_torch.apply_plan(sew, sm, "layer1.0/split@layer1.0.conv2")
        self.assertIn("cuts 'layer1.0.add' (add) from 'maxpool'", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            remat_torch.apply_plan(net, sm, "stem")
        self.assertIn("was the model imported from this module?", str(cm.exception))


class KernelBatchInvariance(unittest.TestCase):
    """Why k > 1 can change weight gradients in PyTorch: the same conv / linear weight gradient over all T*N
    samples at once and summed over k chunks of T*N/k samples."""

    def test_kernels_over_chunks(self):
        g = torch.Generator().manual_seed(7)
        out = []
        # the shapes of the tests' chunked segments: the SEW head's linear (T*N = 4 rows, k = 2), a VGG conv
        for kind, rows, k in (("linear 512->10", 4, 2), ("linear 256->16", 64, 4), ("conv2d 8->8 3x3", 16, 4)):
            if kind.startswith("conv"):
                x = (torch.rand(rows, 8, 8, 8, generator=g) < 0.3).float().requires_grad_()
                w = torch.randn(8, 8, 3, 3, generator=g, requires_grad=True)
                f = lambda a: torch.nn.functional.conv2d(a, w, padding=1)  # noqa: E731
            else:
                fin, fout = (512, 10) if "512" in kind else (256, 16)
                x = torch.rand(rows, fin, generator=g).requires_grad_()
                w = torch.randn(fout, fin, generator=g, requires_grad=True)
                f = lambda a: torch.nn.functional.linear(a, w)  # noqa: E731
            y = f(x)
            gy = torch.randn(y.shape, generator=g)
            gx_full, gw_full = torch.autograd.grad(y, (x, w), gy)
            ys, gxs, gw = [], [], torch.zeros_like(w)
            for c in range(k - 1, -1, -1):
                sl = slice(c * rows // k, (c + 1) * rows // k)
                xc = x.detach()[sl].requires_grad_()
                yc = f(xc)
                gxc, gwc = torch.autograd.grad(yc, (xc, w), gy[sl])
                ys.insert(0, yc.detach())
                gxs.insert(0, gxc)
                gw += gwc
            same = lambda a, b: "same bits" if torch.equal(a, b) else "differs by %.2g" % float(  # noqa: E731
                (a - b).abs().max() / a.abs().max())
            out.append("kernel %s, %d rows against %d chunks: forward %s, input gradient %s, weight gradient (summed "
                       "over chunks) %s" % (kind, rows, k, same(y.detach(), torch.cat(ys)), same(gx_full,
                                                                                                torch.cat(gxs)),
                                            same(gw_full, gw)))
            self.assertLess(float((gw_full - gw).abs().max() / gw_full.abs().max()), 1e-5)
        REPORT.extend(out)


# --- dump_step and remat verify --dump --------------------------------------------------------------------------

@unittest.skipUnless(HAVE_SJ, SJ_WHY)
class DumpAndVerify(unittest.TestCase):
    def test_dump_twice_then_remat_verify(self):
        need_remat(self)
        import h5py
        net = nets.sew_resnet18()
        model = remat_torch.to_model(net, (3, 32, 32), T=2, N=2, loss="rate_ce")
        g = torch.Generator().manual_seed(9)
        x, labels = torch.rand(2, 2, 3, 32, 32, generator=g), torch.randint(0, 10, (2,), generator=g)
        a, b, c = (os.path.join(TMP, n) for n in ("plain.h5", "plan.h5", "bad.h5"))
        remat_torch.dump_step(net, x, labels, a, loss="rate_ce", model=model)
        plan = "layer1.0:bit,layer2.0:uint8/span2,head"
        remat_torch.dump_step(remat_torch.apply_plan(net, model, plan), x, labels, b, loss="rate_ce", model=model)
        with h5py.File(b, "r") as f:
            self.assertEqual(f["/params/conv1/weight"].shape, (64, 3, 7, 7))
            self.assertIn("/grads/layer1.0.conv1/weight", f)
            self.assertEqual(f.attrs["plan"], plan)
        p = remat("verify", "--dump", a, "--dump", b, check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("IDENTICAL", p.stdout)
        shutil.copy(b, c)
        with h5py.File(c, "r+") as f:
            d = f["/grads/layer3.1.conv2/weight"]
            v = d[()]
            v.flat[5] = v.flat[5] * (1 + 2 ** -20) + 1e-30
            d[...] = v
        p = remat("verify", "--dump", a, "--dump", c, check=False)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("first: grads/layer3.1.conv2/weight", p.stdout)
        REPORT.append("dump_step: plain and %s dumps of sew_resnet18: remat verify --dump exit 0 (IDENTICAL); one "
                      "gradient element changed: exit 1 naming grads/layer3.1.conv2/weight" % plan)


@unittest.skipUnless(HAVE_SJ, SJ_WHY)
class ApplyCLI(unittest.TestCase):
    def test_apply_and_verify_init(self):
        need_remat(self)
        mp, wp = os.path.join(TMP, "cli_apply.json"), os.path.join(TMP, "cli_apply.h5")
        net = nets.vgg_lif(channels=4)
        model = remat_torch.to_model(net, (2, 16, 16), T=4, N=2, input_kind="spikes")
        remat_torch.write_model(model, mp)
        remat_torch.save_weights(net, model, wp)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"),
                                                           os.path.dirname(os.path.abspath(__file__)), SJ_PATH]))
        base = [sys.executable, "-m", "remat_torch", "apply", "--factory", "nets:vgg_lif", "--kwargs",
                '{"channels": 4}', "--model", mp, "--weights", wp, "--remat", REMAT]
        p = subprocess.run(base + ["--plan", "stem:bit,b2:sparse"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("verdict: IDENTICAL", p.stdout)
        self.assertIn("peak live tensor bytes (CPU profiler, this PyTorch step): plain", p.stdout)
        self.assertIn("peak live bytes of remat's executor", p.stdout)
        p = subprocess.run(base + ["--plan", "stem/k2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, env=env)
        self.assertEqual(p.returncode, 2)
        self.assertIn("batch norm", p.stderr)
        # remat verify --init: both runs from the user's weights
        v = remat("verify", "--model", mp, "--plan", "stem:bit,b2:sparse", "--init", wp, "--equivalence-only")
        self.assertIn("IDENTICAL", v.stdout.upper())


# --- memory ----------------------------------------------------------------------------------------------------

@unittest.skipUnless(HAVE_SJ, SJ_WHY)
class Memory(unittest.TestCase):
    """The wrapped module really holds less: peak live tensor bytes of the plain and the planned step (CPU
    profiler allocator events), beside remat's figure for its own executor on the same model and plan."""

    def test_planned_step_holds_less(self):
        need_remat(self)
        net = nets.vgg_lif(channels=8)
        T, N = 16, 4
        model = remat_torch.to_model(net, (2, 16, 16), T=T, N=N, input_kind="spikes")
        mp = write_model(model, "mem.json")
        g = torch.Generator().manual_seed(11)
        x = (torch.rand(T, N, 2, 16, 16, generator=g) < 0.3).float()
        labels = torch.randint(0, 10, (N,), generator=g)
        rows = []
        for plan in ["no checkpointing", "stem:bit,b2:bit,b3", "stem:bit/span4", "b2:bit/k4,head:bit/k4"]:
            mod = net if plan == "no checkpointing" else remat_torch.apply_plan(net, model, plan)
            peak = step_peaks(lambda: None, lambda s, i: train_step(mod, x, labels), steps=1)[0]["peak_live_bytes"]
            r = json.loads(remat("run", "--model", mp, "--plan", plan, "--json").stdout)["peak_live_bytes"]
            rows.append((plan, peak, r))
        base = rows[0]
        saving = 0
        for plan, peak, r in rows[1:]:
            if r < base[2]:  # where remat says the plan saves, the wrapped PyTorch step holds less too
                self.assertLess(peak, base[1], plan)
                saving += 1
        self.assertGreaterEqual(saving, 2)
        REPORT.append("peak live bytes, vgg_lif T=%d N=%d (PyTorch step measured by the CPU profiler | remat's "
                      "executor, remat run):" % (T, N))
        for plan, peak, r in rows:
            REPORT.append("  %-26s PyTorch %10d (%5.1f %% of plain)   remat %10d (%5.1f %%)"
                          % (plan, peak, 100.0 * peak / base[1], r, 100.0 * r / base[2]))


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)
    if REPORT:
        print("\n" + "\n".join(REPORT), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
