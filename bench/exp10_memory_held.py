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
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402

# name, batch
MODELS = [("vgg-dvs", 4), ("sew-resnet18-cifar", 16), ("mlp-lif", 64)]
QUICK_MODELS = [("vgg-dvs", 2)]


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
    for name, n in (QUICK_MODELS if quick else MODELS):
        base = os.path.join(C.ROOT, "data/models/%s.json" % name)
        for prec in ("fp32", "bf16"):
            model = C.write_model(base, "%s-%s-N%d" % (name, prec, n), precision=prec, N=n)
            cmd = [C.remat_bin(), "run", "--model", model, "--iters", 1, "--threads", threads, "--json", *C.TRAIN_FLAGS]
            commands.append(C.show(cmd) + "   # child max RSS via wait4")
            d, rss = run_rss(cmd)
            row = {"model": name, "N": n, "precision": prec, "peak_live": d["peak_live_bytes"],
                   "peak_reserved": d["peak_reserved_bytes"], "rss": rss, "program_rss": program,
                   "step_time_s": d["step_time_s"]}
            row["rss_minus_program_over_reserved"] = (rss - program) / row["peak_reserved"]
            if other:
                d2, row["other_rss"] = run_rss([other] + cmd[1:])
                if d2["peak_reserved_bytes"] != row["peak_reserved"]:
                    sys.exit("exp10: %s reports another reserved peak for %s" % (other, model))
                print("    %s: max RSS %.1f MiB" % (other, C.mib(row["other_rss"])))
            rows.append(row)
            print("%-20s N=%-3d %s  live %8.1f MiB  reserved %8.1f MiB  max RSS %8.1f MiB  (RSS - program) / reserved"
                  " = %.3f" % (name, n, prec, C.mib(row["peak_live"]), C.mib(row["peak_reserved"]), C.mib(rss),
                               row["rss_minus_program_over_reserved"]))
    C.save("exp10_memory_held", {"command": "python3 bench/exp10_memory_held.py" + (" --quick" if quick else "") +
                                 (" --compare-bin <remat 0.2.0>" if other else ""),
                                 "commands": commands, "program_rss": program, "compare_bin": other,
                                 "rows": rows}, rows)


if __name__ == "__main__":
    main()
