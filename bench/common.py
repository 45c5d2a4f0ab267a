"""common.py - shared helpers of the bench/ experiment scripts (bench/exp*.py).

Each experiment script runs its commands, prints its table, and writes
bench/results/<name>.json (and .csv): the exact command that reproduces it, the machine,
the date, every underlying command line, and the measured rows. bench/make_doc.py turns
those files into docs/benchmarks.md.

The remat binary: $REMAT_BIN if set, else bazel-bin/tools/remat under
$(bazel [--output_base=$BAZEL_OUTPUT_BASE] info bazel-bin) (bench/run-all builds it).
"""
import csv
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time


def answer_help(argv=None, doc=None):
    """-h / --help anywhere in argv: print the script's docstring (its usage and what it
    measures) and exit 0 before anything runs. Every experiment script imports this module
    first, and importing it calls this for the script being run (its __main__ docstring)."""
    argv = sys.argv[1:] if argv is None else argv
    if "-h" not in argv and "--help" not in argv:
        return
    if doc is None:
        doc = getattr(sys.modules.get("__main__"), "__doc__", None)
    print((doc or "no usage text").strip())
    sys.exit(0)


answer_help()

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
WORK = os.path.join(RESULTS, "work")  # generated model/plan/trace files (not committed)
TORCH_PYTHON = "/usr/bin/python3"     # Debian's interpreter, where python3-torch lives


def bazel_cmd():
    base = os.environ.get("BAZEL_OUTPUT_BASE")
    return ["bazel"] + (["--output_base=" + base] if base else [])


_BIN = None
_BAZEL_BIN = None


def bazel_bin():
    """The bazel-bin folder of this workspace (and output base)."""
    global _BAZEL_BIN
    if not _BAZEL_BIN:
        _BAZEL_BIN = subprocess.run(bazel_cmd() + ["info", "bazel-bin"], cwd=ROOT, capture_output=True, text=True,
                                    check=True).stdout.strip()
    return _BAZEL_BIN


SANITIZER_MARKS = (b"__asan_init", b"__ubsan_handle_", b"__tsan_init", b"__msan_init")


def refuse_sanitizer(path):
    """Exits when path is a sanitizer build (AddressSanitizer, UBSan, ...): timing one
    measures the sanitizer, about 3x slower than the optimised build.

    >>> refuse_sanitizer(remat_bin())   # returns path when it is an optimised build
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        sys.exit("bench: %s: %s" % (path, e.strerror))
    for mark in SANITIZER_MARKS:
        if mark in data:
            sys.exit("bench: %s: a sanitizer build (it holds %s): benchmarks time the optimised build only; "
                     "build it with `%s build //tools:remat //bench:...` (no --config=asan), or set REMAT_BIN"
                     % (path, mark.decode(), " ".join(bazel_cmd())))
    return path


def bench_bin(target):
    """bazel-bin/bench/<target>, refused when missing or a sanitizer build."""
    path = os.path.join(bazel_bin(), "bench", target)
    if not os.access(path, os.X_OK):
        sys.exit("bench: %s: not built (run: %s build //bench:%s)" % (path, " ".join(bazel_cmd()), target))
    return refuse_sanitizer(path)


def remat_bin():
    global _BIN
    if _BIN:
        return _BIN
    if os.environ.get("REMAT_BIN"):
        _BIN = os.environ["REMAT_BIN"]
    else:
        _BIN = os.path.join(bazel_bin(), "tools", "remat")
    if not os.access(_BIN, os.X_OK):
        sys.exit("bench: %s: not built (run: %s build //tools:remat)" % (_BIN, " ".join(bazel_cmd())))
    refuse_sanitizer(_BIN)
    return _BIN


def rel(path):
    """Path relative to the repository root, for printing commands."""
    p = os.path.abspath(path)
    return os.path.relpath(p, ROOT) if p.startswith(ROOT) else p


def show(cmd):
    """The command as a user would type it from the repository root."""
    out = []
    for a in cmd:
        a = str(a)
        if a == _BIN:
            a = "remat"
        elif os.path.isabs(a) and a.startswith(ROOT):
            a = rel(a)
        out.append(shlex.quote(a))
    return " ".join(out)


def run(cmd, ok=(0,), timeout=1800, env=None):
    """Runs cmd from the repository root; returns (rc, stdout, stderr, wall seconds)."""
    cmd = [str(c) for c in cmd]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    wall = time.perf_counter() - t0
    if p.returncode not in ok:
        raise RuntimeError("bench: `%s` exited %d: %s" % (show(cmd), p.returncode, p.stderr.strip()[-2000:]))
    return p.returncode, p.stdout, p.stderr, wall


def best_openblas_coretype():
    """The OpenBLAS core a benchmark forces with OPENBLAS_CORETYPE (never tests or CI):
    OpenBLAS 0.3.21 does not recognise every CPU and silently falls back to a generic
    kernel (Prescott on some AVX-512 Xeons). The rule of bench/gemm_bench.c: SkylakeX with
    AVX-512 F/BW/DQ/VL, else Zen on AMD or Haswell with AVX2 + FMA."""
    flags, vendor = set(), ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("vendor_id") and not vendor:
                vendor = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
                break
    if ISA != "native":  # --isa (arg_isa): that path's core
        return ISA_ENV[ISA]["OPENBLAS_CORETYPE"]
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Zen" if vendor == "AuthenticAMD" else "Haswell"
    return "Sandybridge" if "avx" in flags else "Prescott"


# --isa avx2 (bench/exp4_pytorch.py, bench/exp8_conv_speed.py): every library on its AVX2
# code path, on whatever CPU this is (an AVX-512 one runs them too): remat's GEMM and
# element-wise kernels (REMAT_SIMD, core/ref/simd.c), OpenBLAS's Haswell kernel
# (OPENBLAS_CORETYPE) and oneDNN's jit:avx2 convolutions (ONEDNN_MAX_CPU_ISA; oneDNN 2.x
# also reads the older DNNL_ name). The substitute for an AVX2 machine where none is at
# hand: the same code paths, not the same memory system or clock, so the tables say so.
ISA_ENV = {"avx2": {"REMAT_SIMD": "avx2", "OPENBLAS_CORETYPE": "Haswell", "ONEDNN_MAX_CPU_ISA": "AVX2",
                    "DNNL_MAX_CPU_ISA": "AVX2"}}
ISA = "native"  # what arg_isa chose


def arg_isa():
    """--isa avx2|native from argv (default native: each library's widest path). With avx2
    it sets ISA_ENV["avx2"] in os.environ, so every process the benchmark starts inherits
    it, and returns "avx2".

        isa = arg_isa()          # before any remat, OpenBLAS or torch process starts
    """
    global ISA
    isa = sys.argv[sys.argv.index("--isa") + 1] if "--isa" in sys.argv else "native"
    if isa not in ("native", "avx2"):
        sys.exit("bench: --isa: expected native or avx2, got %r" % isa)
    if isa == "avx2":
        missing = {"avx2", "fma"} - cpu_flags()
        if missing:
            sys.exit("bench: --isa avx2: this CPU lacks %s" % " ".join(sorted(missing)))
        os.environ.update(ISA_ENV["avx2"])
    ISA = isa
    return isa


def isa_label(isa):
    """How the tables name the code paths of a run (never as another machine)."""
    return "AVX2 code paths on an AVX-512 Intel Xeon" if isa == "avx2" and "avx512f" in cpu_flags() else (
        "AVX2 code paths" if isa == "avx2" else "each library's widest code path")


def cpu_flags():
    """The flags of /proc/cpuinfo's first processor (a set; empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def remat_simd():
    """The SIMD path `remat --version` reports (REMAT_SIMD from the environment applies)."""
    out = run([remat_bin(), "--version"])[1]
    for line in out.splitlines():
        if line.startswith("simd:"):
            return line.split()[1]
    return "?"


def run_json(cmd, ok=(0,), timeout=1800, env=None):
    rc, out, err, wall = run(cmd, ok, timeout, env=env)
    try:
        d = json.loads(out)
    except ValueError:
        line = [l for l in out.splitlines() if l.strip().startswith("{")]
        if not line:
            raise RuntimeError("bench: `%s` printed no JSON: %s %s" % (show(cmd), out[-500:], err[-500:]))
        d = json.loads(line[-1])
    d["_rc"] = rc
    d["_wall_s"] = wall
    return d


def remat(*args, ok=(0,), timeout=1800):
    return run_json([remat_bin()] + [str(a) for a in args] + ["--json"], ok=ok, timeout=timeout)


# A training loop's step: the data needs no gradient (`remat run --no-input-grad`; the
# trace records it and simulate/search/tune follow it). The published figures are
# training steps, so the experiments that compare with them run this way; --input-grad
# on an experiment's command line computes dL/dinput as the gradient dump does.
TRAIN_FLAGS = [] if "--input-grad" in sys.argv else ["--no-input-grad"]

MEASURE_ITERS = 4  # measured runs: one warm-up step, then the best of the other three


def steady(d):
    """The last step of a `remat run --json` result, with step_time_s the best (smallest)
    over every step after the first (the first pays page faults and lazy allocation)."""
    st = dict(d["steps"][-1])
    later = d["steps"][1:] or d["steps"]
    st["step_time_s"] = min(x["step_time_s"] for x in later)
    st["step_times_s"] = [x["step_time_s"] for x in d["steps"]]
    return st


def med(xs):
    return statistics.median(xs) if xs else None


def stats(xs):
    """median, min, max of a list of numbers."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def machine():
    model, cores = platform.processor() or "unknown", os.cpu_count()
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for l in out.splitlines():
            k, _, v = l.partition(":")
            if k.strip() == "Model name":
                model = v.strip()
            if k.strip() == "CPU(s)":
                cores = int(v.strip())
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = "%.0f GiB RAM" % (kb / 1048576)
    except OSError:
        pass
    return "%s, %s cores, %s, %s" % (model, cores, mem, platform.platform())


def now():
    return datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")


def write_model(base_path, name, **changes):
    """A copy of a model file with fields changed (T, N, ...), under bench/results/work/."""
    os.makedirs(WORK, exist_ok=True)
    with open(base_path) as f:
        m = json.load(f)
    m.update(changes)
    path = os.path.join(WORK, name + ".json")
    with open(path, "w") as f:
        json.dump(m, f, indent=1)
    return path


def write_plan(model_name, blocks, name, description=""):
    os.makedirs(WORK, exist_ok=True)
    p = {"model": model_name, "blocks": blocks}
    if description:
        p["description"] = description
    path = os.path.join(WORK, name + ".json")
    with open(path, "w") as f:
        json.dump(p, f, indent=1)
    return path


LOAD_START = os.getloadavg()
T_START = time.time()


def save(name, result, rows=None, columns=None):
    """Writes bench/results/<name>.json (result) and <name>.csv (rows)."""
    os.makedirs(RESULTS, exist_ok=True)
    result.setdefault("machine", machine())
    result.setdefault("date", now())
    result.setdefault("loadavg_start", list(LOAD_START))
    result.setdefault("loadavg_end", list(os.getloadavg()))
    result.setdefault("elapsed_s", time.time() - T_START)
    uses_flag = "input_grad" not in result
    result.setdefault("input_grad", not TRAIN_FLAGS)
    if uses_flag and not TRAIN_FLAGS and "--input-grad" not in result.get("command", ""):
        result["command"] = result.get("command", "") + " --input-grad"
    with open(os.path.join(RESULTS, name + ".json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    if rows:
        columns = columns or list(rows[0].keys())
        with open(os.path.join(RESULTS, name + ".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow(r)


def mib(b):
    return None if b is None else b / 1048576.0


def arg_quick():
    """--quick in argv (or BENCH_QUICK=1): smaller sweeps, fewer repeats."""
    return "--quick" in sys.argv or os.environ.get("BENCH_QUICK") == "1"


def arg_int(name, default):
    if name in sys.argv:
        return int(sys.argv[sys.argv.index(name) + 1])
    return default


SPIKINGJELLY = os.path.join(ROOT, "..", "shared", "third_party", "spikingjelly")


def torch_record_setup(label):
    """Prepares a run of bench/pytorch/record_check.py's checks (exp12, exp12b): one thread,
    python/, bench/pytorch/ and SpikingJelly on sys.path, bench/results/work/<label>/ made.
    Returns (torch, record_check, work dir), or None after printing that SpikingJelly is
    absent (the experiment is skipped).

        got = torch_record_setup("exp12")
        if got is None:
            return 0
        torch, record_check, work = got
    """
    if not os.path.isdir(os.path.join(SPIKINGJELLY, "spikingjelly")):
        print("%s: skipped: SpikingJelly not found at %s" % (label, os.path.normpath(SPIKINGJELLY)))
        return None
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "bench", "pytorch"), SPIKINGJELLY]
    import torch
    import record_check
    torch.set_num_threads(1)
    work = os.path.join(WORK, label)
    os.makedirs(work, exist_ok=True)
    return torch, record_check, work
