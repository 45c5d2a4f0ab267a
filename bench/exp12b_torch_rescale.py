#!/usr/bin/env python3
"""exp12b_torch_rescale.py - a recorded PyTorch step at another batch size, from two
recordings (`remat simulate --trace N1.h5 --second-trace N2.h5 --N 4`, docs/pytorch-record.md)
against the step recorded at that batch size.

  python3 bench/exp12b_torch_rescale.py [--quick]

For each of bench/pytorch/record_check.py's SpikingJelly networks (dense, conv, vgg, sew18;
--quick: dense and conv) the plain step is recorded at N = 1, 2 and 4 (each batch one sample
repeated, so that spike counts scale with N too), and each plan of the sample is predicted at
N = 4 from the first two recordings and from the third; the plain peak is also compared with
the recorder's own measurement at N = 4. Needs SpikingJelly at ../shared/third_party/spikingjelly
(skipped, saying so, without it).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

def main():
    quick = C.arg_quick()
    got = C.torch_record_setup("exp12b")
    if got is None:
        return 0
    torch, record_check, work = got
    rows = []
    for m in (["dense", "conv"] if quick else ["dense", "conv", "vgg", "sew18"]):
        rows += record_check.rescale_check(m, C.remat_bin(), work)
    for r in rows:
        for k in ("rescaled", "recorded", "error_bytes", "measured"):
            r.setdefault(k, None)
        r.setdefault("refused", "")
    off = [r for r in rows if r["error_bytes"]]
    C.save("exp12b_torch_rescale",
           {"command": "python3 bench/exp12b_torch_rescale.py" + (" --quick" if quick else ""),
            "torch": torch.__version__, "rows": rows, "input_grad": None, "off": len(off),
            "commands": ["remat simulate --trace %s-N1.h5 --second-trace %s-N2.h5 --N 4 --plan '%s' --json" %
                         (r["model"], r["model"], r["plan"]) for r in rows]},
           rows, ["model", "plan", "from_N", "N", "rescaled", "recorded", "error_bytes", "measured", "record_s",
                  "predict_s", "refused"])
    print("exp12b: %d plans compared, %d off" % (len([r for r in rows if r["rescaled"] is not None]), len(off)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
