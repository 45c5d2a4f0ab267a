#!/usr/bin/env python3
"""exp12_torch_record.py - remat's prediction of a user's recorded PyTorch step against the
step measured under each plan (docs/pytorch-record.md).

  python3 bench/exp12_torch_record.py [--quick]

Runs bench/pytorch/record_check.py's check on SpikingJelly networks at small inputs on the
CPU (dense, conv, a spiking VGG, SEW-ResNet-18; --quick: dense and conv): the plain step
recorded once with remat_torch.record, each plan of a sample predicted by `remat simulate
--trace plain.h5 --plan P`, and measured by recording the step run under the plan by
remat_torch.apply_plan; then the plans without a compressor of conv and vgg again with
torch.utils.checkpoint (non-reentrant) as the executor (`--executor torch-nonreentrant`),
and those of remat's shipped tiny models as bench/pytorch/snn.py writes them in PyTorch
(its own autograd neurons; apply_plan does not import snn.py's layers, so these run with
the non-reentrant executor).
Needs SpikingJelly at ../shared/third_party/spikingjelly (skipped, saying so, without it).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

def record_check_model(name):
    """The model dict of one of record_check's networks (for its plan sample)."""
    import record_check
    import remat_torch
    net, shape, T, N = record_check.MODELS[name]()
    return remat_torch.to_model(net, input_shape=shape, T=T, N=N, input_kind="spikes")


def main():
    quick = C.arg_quick()
    got = C.torch_record_setup("exp12")
    if got is None:
        return 0
    torch, record_check, work = got
    models = ["dense", "conv"] if quick else ["dense", "conv", "vgg", "sew18", "wide"]
    rows = []
    for m in models:
        rows += record_check.check_model(m, C.remat_bin(), work)
    for m in (["conv"] if quick else ["conv", "vgg"]):  # the other executor: torch.utils.checkpoint, non-reentrant
        rows += record_check.check_model(m, C.remat_bin(), work, executor="torch-nonreentrant",
                                         plans=[p for p in record_check.plans_of(record_check_model(m))
                                                if ":" not in p and "/k" not in p])
    for m in ([] if quick else record_check.SNN_MODELS):  # remat's shipped models as bench/pytorch/snn.py writes them
        spec_model = record_check.snn_model(m)[2]
        rows += record_check.check_model(m, C.remat_bin(), work,
                                         plans=[p for p in record_check.plans_of(spec_model) if ":" not in p and "/k" not in p])
    for r in rows:
        r.setdefault("measured", None)
        r.setdefault("error", None)
        r.setdefault("refused", "")
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    C.save("exp12_torch_record", {"command": "python3 bench/exp12_torch_record.py" + (" --quick" if quick else ""),
                                  "torch": torch.__version__, "rows": rows, "input_grad": None,
                                  "largest_error": max(errs) if errs else None,
                                  "commands": ["remat simulate --trace %s-plain.h5 --plan '%s' --json" %
                                               (r["model"], r["plan"]) for r in rows]},
           rows, ["model", "executor", "plan", "predicted", "measured", "error", "plain", "record_s", "predict_s",
                  "refused"])
    print("exp12: %d plans measured, largest |error| %.4f %%" % (len(errs), 100 * max(errs) if errs else 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
