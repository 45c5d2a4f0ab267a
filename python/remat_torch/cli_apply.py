"""python3 -m remat_torch apply: one step of a module under a remat plan, checked against its plain step."""
import argparse
import json
import subprocess
import sys

import torch

from remat_torch import cli_common


def remat_peak(remat: str, model_path: str, plan: str, N: int) -> int:
    """peak_live_bytes of `remat run --json` (remat's executor on its reference backend)."""
    cmd = [remat, "run", "--model", model_path, "--N", str(N), "--json"] + (["--plan", plan] if plan else [])
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if out.returncode != 0:
        raise ValueError("%s: %s" % (" ".join(cmd), out.stderr.strip()))
    return int(json.loads(out.stdout)["peak_live_bytes"])


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m remat_torch apply",
                                 description="Runs one training step (no optimiser update) of the module with plain "
                                             "backpropagation and under the plan (remat_torch.apply_plan), compares "
                                             "the loss, every gradient, the batch-norm statistics and dropout masks "
                                             "bit for bit, and prints the measured peak live tensor bytes of both "
                                             "(CPU profiler) beside remat's figure for its own executor. Exit 0 "
                                             "identical, 1 a tensor differs, 2 bad input.")
    cli_common.add_factory_args(ap)
    ap.add_argument("--model", required=True, help="the model file the module was imported as")
    ap.add_argument("--plan", required=True, help="a plan file or the plan notation")
    ap.add_argument("--weights", help="load the module's parameters from this file first (save_weights, a dump)")
    ap.add_argument("--N", type=int, help="batch size of the step (default: the model file's)")
    ap.add_argument("--data-seed", type=int, default=1, help="seed of the random input and labels (default 1)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda[:i]: where the steps run; on a GPU the "
                    "peaks are torch.cuda.max_memory_allocated")
    ap.add_argument("--remat", help="the remat binary: also print remat's peak for the model and plan")
    ap.add_argument("--no-measure", action="store_true", help="skip the memory measurement")
    a = ap.parse_args(argv)
    import remat_torch
    from remat_torch.dump import first_difference, step_tensors
    from remat_torch.profile import cuda_step_peak, step_peaks, train_step

    try:
        with open(a.model) as f:
            model = json.load(f)
        net = cli_common.build(a)
        if a.weights:
            from remat_torch.weights import load_weights
            load_weights(net, model, a.weights)
        wrapped = remat_torch.apply_plan(net, model, a.plan)
    except (ValueError, ImportError, AttributeError, TypeError, OSError) as e:
        return cli_common.fail("apply", e)
    T, N, shape = int(model["T"]), int(a.N or model["N"]), tuple(model["input"]["shape"])
    if N < 1:
        return cli_common.fail("apply", ValueError("--N: expected a positive batch size, got %d" % N))
    g = torch.Generator().manual_seed(a.data_seed)
    x = torch.rand((T, N) + shape, generator=g)
    if model["input"].get("kind") == "spikes":
        x = (x < float(model["input"].get("rate", 0.3))).float()
    labels = torch.randint(0, int(model["classes"]), (N,), generator=g)
    loss = model.get("loss", "rate_mse")
    try:
        dev = torch.device(a.device)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("--device %s: torch here has no CUDA device" % a.device)
    except (RuntimeError, ValueError) as e:
        return cli_common.fail("apply", e)
    net.to(dev)
    x, labels = x.to(dev), labels.to(dev)
    try:
        plain = step_tensors(net, x, labels, loss)
        planned = step_tensors(wrapped, x, labels, loss)
    except ValueError as e:
        return cli_common.fail("apply", e)
    diffs = first_difference(plain, planned)
    print("model %s (T=%d, N=%d), plan %s: one step plain and one under the plan, on %s" %
          (model["name"], T, N, wrapped.plan_label, "torch " + torch.__version__))
    for path, n, d in diffs:
        print("  %-40s %s elements differ, max |diff| %.3g" % (path[1:], n if n >= 0 else "all", d))
    if not a.no_measure:
        def run(mod):
            if dev.type == "cuda":
                return cuda_step_peak(lambda: train_step(mod, x, labels, loss), dev)
            return step_peaks(lambda: None, lambda s, i: train_step(mod, x, labels, loss), steps=1)[0]
        pp, pw = run(net), run(wrapped)
        how = "torch.cuda.max_memory_allocated" if dev.type == "cuda" else "CPU profiler"
        print("peak live tensor bytes (%s, this PyTorch step): plain %d, plan %d (%+.1f %%)"
              % (how, pp["peak_live_bytes"], pw["peak_live_bytes"],
                 100.0 * (pw["peak_live_bytes"] - pp["peak_live_bytes"]) / max(pp["peak_live_bytes"], 1)))
        if a.remat:
            try:
                rp, rw = remat_peak(a.remat, a.model, "", N), remat_peak(a.remat, a.model, a.plan, N)
            except ValueError as e:
                return cli_common.fail("apply", e)
            print("peak live bytes of remat's executor for the same model (remat run, its own step, not this "
                  "PyTorch one): plain %d, plan %d (%+.1f %%)" % (rp, rw, 100.0 * (rw - rp) / max(rp, 1)))
    n_all = len(set(plain) | set(planned))
    if diffs:
        print("verdict: MISMATCH: %d of %d tensors differ (first: %s)" % (len(diffs), n_all, diffs[0][0][1:]))
        return 1
    print("verdict: IDENTICAL: %d tensors bit-identical" % n_all)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
