#!/usr/bin/python3
"""torch_formula_check.py - remat's layers against PyTorch's formulas, one step each.

  /usr/bin/python3 tests/torch_formula_check.py REMAT MODEL.json...   (exit 0: all agree, 1: not)

For each model: `remat run --model M --dump D.h5` writes one step (parameters before it,
input, labels, gradients, batch-norm statistics after it). The same network is built
in PyTorch from the model file (bench/pytorch/snn.py: F.conv2d, F.batch_norm, ...,
the multi-step neurons of docs/determinism.md) in float64, loaded with the dump's
parameters and dropout masks (/masks/<layer>: remat draws them from its own counter-based
generator, which torch's cannot reproduce), run on the dump's input and labels; every gradient and every running
statistic must agree with remat's to a relative 1e-4 of its largest magnitude (remat
computes in float32), the loss to 1e-5.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
import h5py  # noqa: E402
import torch  # noqa: E402

import snn  # noqa: E402 (bench/pytorch on PYTHONPATH)


def close(name, got, want, rel=1e-4):
    """got (remat) against want (torch): max |got - want| <= rel * max |want| + 1e-7."""
    got, want = torch.as_tensor(got, dtype=torch.float64).reshape(-1), want.detach().reshape(-1).double()
    if got.shape != want.shape:
        print("MISMATCH %s: %d elements against %d" % (name, got.numel(), want.numel()))
        return False
    err, scale = (got - want).abs().max().item() if got.numel() else 0.0, want.abs().max().item() if got.numel() else 0.0
    ok = err <= rel * scale + 1e-7
    print("%s %s: max error %.3g of %.3g" % ("ok      " if ok else "MISMATCH", name, err, scale))
    return ok


def check(remat, path):
    spec = snn.load_model(path)
    with tempfile.TemporaryDirectory() as d:
        dump = os.path.join(d, "step.h5")
        subprocess.run([remat, "run", "--model", path, "--dump", dump], check=True, stdout=subprocess.DEVNULL)
        f = h5py.File(dump, "r")
        torch.set_default_dtype(torch.float64)
        net = snn.SNN(spec)
        layers = {l.name: l for b in net.blocks for l in b.layers}
        with torch.no_grad():
            for lname, grp in f["params"].items():
                for pname, ds in grp.items():
                    t = getattr(layers[lname], pname)
                    t.copy_(torch.from_numpy(ds[()]).reshape(t.shape))
        for lname, ds in (f["masks"].items() if "masks" in f else ()):
            layers[lname].mask = torch.from_numpy(ds[()]).double()
        x = torch.from_numpy(f["input"][()]).double().requires_grad_(True)
        labels = torch.from_numpy(f["labels"][()]).long()
        loss = net.loss(net(x), labels)
        loss.backward()
        ok = close("%s loss" % spec["name"], f["loss"][()], loss, 1e-5)
        for lname, grp in f["grads"].items():
            if lname == "input":
                continue
            for pname, ds in grp.items():
                ok &= close("%s grad %s/%s" % (spec["name"], lname, pname), ds[()], getattr(layers[lname], pname).grad)
        ok &= close("%s grad input" % spec["name"], f["grads/input"][()], x.grad)
        for lname, grp in (f["after"].items() if "after" in f else ()):  # no batch norm: none
            for pname, ds in grp.items():
                ok &= close("%s after %s/%s" % (spec["name"], lname, pname), ds[()], getattr(layers[lname], pname))
        return ok


def main(argv):
    ok = True
    for path in argv[2:]:
        ok &= check(argv[1], path)
    print("all agree" if ok else "FAILED: remat and PyTorch disagree")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
