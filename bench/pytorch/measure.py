#!/usr/bin/python3
"""measure.py - step time and exact peak of live tensor memory of one model file in PyTorch (CPU).

  /usr/bin/python3 bench/pytorch/measure.py --model data/models/mlp-lif.json [--checkpoint]
      [--T 64] [--N 128] [--threads 1] [--repeats 5] [--json]

Threads: --threads for torch's intra-op pool and for OpenBLAS (OPENBLAS_NUM_THREADS is set
before torch loads it; torch.set_num_threads alone leaves OpenBLAS on every core).

Time: one warm-up step, then --repeats timed training steps (forward, loss, backward,
optimiser), each timed with time.perf_counter; median, min and max are printed.

Memory (exact, Debian's torch 1.13 has no CPU memory statistics API): a second pass runs
under torch.profiler with profile_memory=True, started BEFORE the model is built. The CPU
allocator then reports every allocation and free of tensor storage to the profiler, and
each [memory] event carries `total_allocated`, the allocator's running sum of live bytes
under its lock (c10 ProfiledCPUMemoryReporter), i.e. the exact live tensor bytes after that
event. The peak of a step is the largest total_allocated among the events between the
start and the end of that step (marked with record_function); the second step is
reported (parameters, gradients, optimiser state, batch, activations are all live then,
as in remat's figure for a step after the first). Byte counts are the requested storage
sizes (no allocator rounding), the same convention as remat's peak_live_bytes.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
sys.dont_write_bytecode = True

# torch.set_num_threads does not reach the BLAS Debian's torch calls: OpenBLAS (the
# pthread build behind libblas.so.3) starts its own threads, one per core, unless told
# otherwise before it is loaded. Give it the same thread count as torch.
_threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
os.environ["OPENBLAS_NUM_THREADS"] = _threads
os.environ["OMP_NUM_THREADS"] = _threads

import torch  # noqa: E402
import snn  # noqa: E402
from remat_torch.profile import step_peaks  # noqa: E402


def build(spec, checkpoint, seed):
    torch.manual_seed(seed)
    net = snn.SNN(spec, checkpoint=checkpoint)
    opt = snn.make_optimizer(spec, net.parameters())
    # gradients allocated once and kept (remat allocates them at start-up, zeroed)
    for p in net.parameters():
        p.grad = torch.zeros_like(p)
    return net, opt


INPUT_GRAD = "--no-input-grad" not in sys.argv


def one_step(spec, net, opt, state):
    state["x"] = state["labels"] = None  # free the previous batch (and its gradient) first
    x, labels = snn.make_batch(spec, net, input_grad=INPUT_GRAD)
    state["x"], state["labels"] = x, labels
    return snn.train_step(net, opt, x, labels)


def measure_time(spec, checkpoint, repeats, seed):
    net, opt = build(spec, checkpoint, seed)
    state = {}
    one_step(spec, net, opt, state)  # warm-up (also allocates optimiser state)
    times, loss = [], 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        loss = one_step(spec, net, opt, state)
        times.append(time.perf_counter() - t0)
    return times, loss


def measure_memory(spec, checkpoint, seed, steps=2):
    """Peak live bytes per step, by remat_torch.profile.step_peaks (the profiler started before the model is
    built, so every storage is counted)."""
    def setup():
        net, opt = build(spec, checkpoint, seed)
        return net, opt, {}

    return step_peaks(setup, lambda st, i: one_step(spec, st[0], st[1], st[2]), steps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--checkpoint", action="store_true", help="torch.utils.checkpoint per block (non-reentrant)")
    ap.add_argument("--T", type=int)
    ap.add_argument("--N", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--no-input-grad", action="store_true",
                    help="the input needs no gradient (a training loop's step; remat run --no-input-grad)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    spec = snn.load_model(a.model)
    if a.T:
        spec["T"] = a.T
    if a.N:
        spec["N"] = a.N
    res = {"model": spec["name"], "T": spec["T"], "N": spec["N"], "checkpoint": a.checkpoint,
           "threads": a.threads, "torch": torch.__version__, "input_grad": INPUT_GRAD}
    if a.repeats > 0:
        times, loss = measure_time(spec, a.checkpoint, a.repeats, a.seed)
        res.update({"step_time_s": statistics.median(times), "step_time_min_s": min(times),
                    "step_time_max_s": max(times), "step_times_s": times, "loss": loss})
    if not a.no_memory:
        mem = measure_memory(spec, a.checkpoint, a.seed)
        res.update({"peak_live_bytes": mem[-1]["peak_live_bytes"], "memory_steps": mem})
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print("%-18s %s" % (k, v))


if __name__ == "__main__":
    main()
