#!/usr/bin/env python3
"""exp10_memory_held.py - what the reference backend really holds against what remat
reports, in fp32 and bf16 (docs/precision.md, "Memory: what is reported is what is held").

  python3 bench/exp10_memory_held.py [--quick] [--threads N] [--compare-bin OTHER_REMAT]

For each model and precision, one training step (`remat run --iters 1 --json`) runs as a
child process (its step time is listed too: bf16's conversions cost on the CPU); its reported peaks (peak_live_bytes, peak_reserved_bytes: the exact and
caching allocator models, which place every tensor of the step) are set beside the
child's maximum resident set size (getrusage of the child: every page the process
touched, so the segments the backend really obtained plus the program itself). The
program's own footprint (binary, libraries, HDF5, GEMM packing buffers) is the RSS of
the same command on tiny-mlp-lif, whose tensors take under 1 MiB. A bf16 model stores
activations as 16-bit words, so its RSS should follow its reserved bytes as the fp32
model's does (remat 0.2.0 held bf16 values in fp32 slots: twice the activation bytes).
--compare-bin runs the same steps with another remat binary (e.g. a 0.2.0 build) too and
records its RSS beside this one's (same model files, same reported peaks).

The check: every buffer the executor or a kernel obtains is either in the trace (so in
the reported reserved bytes) or bounded by a documented constant (the GEMM's packing
buffers: REMAT_GEMM_SCRATCH_BYTES, 6 MiB per thread, core/ref/ref_kernels.h). So on
every shipped model and on wide linear layers (2^22 and 2^24 features, fp32 and bf16,
where the GEMM's K is largest) max RSS - program <= reserved + threads x 6 MiB + 8 MiB
(the C library's heap slack); a row over that bound makes the script exit 1. remat
0.3.0 held rows x K floats of packing for a bf16 GEMM (3,593 MiB RSS against 1,092 MiB
reserved on the 2^24-feature layer).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

# name, batch: every shipped model (the ImageNet ones at batch 1)
MODELS = [("vgg-dvs", 4), ("sew-resnet18-cifar", 16), ("mlp-lif", 64), ("3block-if", 64), ("resnet-bn", 64),
          ("sew-resnet18", 1), ("sew-resnet34", 1), ("tiny-3block-if", 0), ("tiny-resnet-bn", 0),
          ("tiny-sew-resnet", 0), ("tiny-vgg-dvs", 0)]
QUICK_MODELS = [("vgg-dvs", 2), ("mlp-lif", 64)]
# wide linear layers: features, T, N (one linear of 16 outputs and an IF neuron)
WIDE = [(1 << 22, 2, 4), (1 << 24, 1, 1)]
QUICK_WIDE = [(1 << 22, 2, 4)]
GEMM_SCRATCH = 6 << 20  # REMAT_GEMM_SCRATCH_BYTES, per thread
HEAP_SLACK = 8 << 20


def wide_model(features, T, N, prec):
    """A model file of one linear layer over `features` inputs, under bench/results/work/."""
    m = {"name": "wide", "T": T, "N": N, "input": {"shape": [features], "kind": "spikes", "rate": 0.5},
         "classes": 16, "loss": "rate_mse", "precision": prec,
         "layers": [{"name": "fc", "type": "linear", "out": 16}, {"name": "sn", "type": "if"}],
         "blocks": [{"name": "b", "layers": ["fc", "sn"]}]}
    os.makedirs(C.WORK, exist_ok=True)
    path = os.path.join(C.WORK, "wide-%d-%s.json" % (features, prec))
    with open(path, "w") as f:
        json.dump(m, f)
    return path


class RssPopen(subprocess.Popen):
    """Popen that keeps its child's maximum resident set size (wait4's rusage)."""

    rss = None

    def _try_wait(self, wait_flags):
        try:
            pid, sts, ru = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            return self.pid, 0
        if pid == self.pid:
            self.rss = ru.ru_maxrss * 1024  # KiB on Linux
        return pid, sts


def run_rss(cmd):
    """Runs cmd; returns (its JSON stdout, its max RSS in bytes)."""
    p = RssPopen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit("exp10: %s failed (%d): %s" % (" ".join(map(str, cmd)), p.returncode, err.decode()[-400:]))
    return json.loads(out), p.rss


def main():
    quick = C.arg_quick()
    threads = C.arg_int("--threads", 1)
    rows, commands = [], []
    other = sys.argv[sys.argv.index("--compare-bin") + 1] if "--compare-bin" in sys.argv else None
    tiny = [C.remat_bin(), "run", "--model", os.path.join(C.ROOT, "data/models/tiny-mlp-lif.json"), "--iters", 1,
            "--threads", threads, "--json", *C.TRAIN_FLAGS]
    commands.append(C.show(tiny) + "   # the program's own footprint")
    d, program = run_rss(tiny)
    print("program footprint (tiny-mlp-lif, reserved %.1f MiB): RSS %.1f MiB" %
          (C.mib(d["peak_reserved_bytes"]), C.mib(program)))
    cases = []
    for name, n in (QUICK_MODELS if quick else MODELS):
        base = os.path.join(C.ROOT, "data/models/%s.json" % name)
        for prec in ("fp32", "bf16"):
            changes = {"precision": prec}
            if n:
                changes["N"] = n
            cases.append((name, n or json.load(open(base))["N"], prec,
                          C.write_model(base, "%s-%s-N%d" % (name, prec, n), **changes)))
    for features, T, n in (QUICK_WIDE if quick else WIDE):
        for prec in ("fp32", "bf16"):
            cases.append(("wide linear 2^%d x 16 (T=%d)" % (features.bit_length() - 1, T), n, prec,
                          wide_model(features, T, n, prec)))
    bound_extra = threads * GEMM_SCRATCH + HEAP_SLACK
    over = []
    for name, n, prec, model in cases:
        cmd = [C.remat_bin(), "run", "--model", model, "--iters", 1, "--threads", threads, "--json", *C.TRAIN_FLAGS]
        commands.append(C.show(cmd) + "   # child max RSS via wait4")
        d, rss = run_rss(cmd)
        row = {"model": name, "N": n, "precision": prec, "peak_live": d["peak_live_bytes"],
               "peak_reserved": d["peak_reserved_bytes"], "rss": rss, "program_rss": program,
               "step_time_s": d["step_time_s"]}
        row["rss_minus_program_over_reserved"] = (rss - program) / row["peak_reserved"]
        row["held_beyond_reserved"] = rss - program - row["peak_reserved"]
        row["within_bound"] = row["held_beyond_reserved"] <= bound_extra
        if not row["within_bound"]:
            over.append(row)
        if other:
            d2, row["other_rss"] = run_rss([other] + cmd[1:])
            if d2["peak_reserved_bytes"] != row["peak_reserved"]:
                sys.exit("exp10: %s reports another reserved peak for %s" % (other, model))
            print("    %s: max RSS %.1f MiB" % (other, C.mib(row["other_rss"])))
        rows.append(row)
        print("%-28s N=%-3d %s  live %8.1f MiB  reserved %8.1f MiB  max RSS %8.1f MiB  (RSS - program) / reserved"
              " = %.3f  held beyond reserved %+.1f MiB%s" %
              (name, n, prec, C.mib(row["peak_live"]), C.mib(row["peak_reserved"]), C.mib(rss),
               row["rss_minus_program_over_reserved"], C.mib(row["held_beyond_reserved"]),
               "" if row["within_bound"] else "  OVER THE BOUND"), flush=True)
    C.save("exp10_memory_held", {"command": "python3 bench/exp10_memory_held.py" + (" --quick" if quick else "") +
                                 (" --compare-bin <remat 0.2.0>" if other else ""),
                                 "commands": commands, "program_rss": program, "compare_bin": other,
                                 "threads": threads, "bound_extra": bound_extra, "rows": rows}, rows)
    if over:
        sys.exit("exp10: %d rows hold more than reserved + %.0f MiB (threads x REMAT_GEMM_SCRATCH_BYTES + heap "
                 "slack): %s" % (len(over), C.mib(bound_extra), ", ".join("%s %s" % (r["model"], r["precision"])
                                                                           for r in over)))


if __name__ == "__main__":
    main()
