"""profile.py - the exact peak of live tensor bytes of a PyTorch step on the CPU.

Debian's torch 1.13 has no CPU memory statistics API, so the step runs under
``torch.profiler`` with ``profile_memory=True``: the CPU allocator reports every allocation
and free of tensor storage to the profiler, and each memory event carries
``total_allocated``, the allocator's running sum of live bytes under its lock (c10
ProfiledCPUMemoryReporter), i.e. the exact live tensor bytes after that event. The peak of
a step is the largest ``total_allocated`` between its start and end (marked with
``record_function``). Byte counts are the requested storage sizes (no allocator
rounding), the convention of remat's ``peak_live_bytes``. On a GPU,
``torch.cuda.max_memory_allocated`` gives the same figure for device memory.
"""
from typing import Callable, Dict, List

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def _walk(events):
    stack = list(events)
    while stack:
        e = stack.pop()
        yield e
        stack.extend(e.children)


def allocation_events(prof) -> List[tuple]:
    """(time ns, total_allocated after the event, alloc_size) of every CPU allocator event, in time order."""
    out = []
    for e in _walk(prof.profiler.kineto_results.experimental_event_tree()):
        if type(e.extra_fields).__name__ == "_ExtraFields_Allocation":
            out.append((e.start_time_ns, e.extra_fields.total_allocated, e.extra_fields.alloc_size))
    out.sort(key=lambda a: a[0])
    return out


def step_peaks(setup: Callable[[], object], step: Callable[[object, int], None], steps: int = 2
               ) -> List[Dict[str, int]]:
    """Runs ``state = setup()`` then ``step(state, i)`` for i < steps under the profiler (started before setup,
    so every live storage is counted) and returns per step {"peak_live_bytes", "live_at_start", "events"}.

    Example::

        >>> peaks = step_peaks(lambda: make_net_and_batch(), lambda s, i: train_step(*s), steps=2)
        >>> peaks[-1]["peak_live_bytes"]
    """
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        state = setup()
        for i in range(steps):
            with record_function("remat_step_%d" % i):
                step(state, i)
        del state
    windows = {}
    for e in _walk(prof.profiler.kineto_results.experimental_event_tree()):
        if e.name.startswith("remat_step_"):
            windows[int(e.name[len("remat_step_"):])] = (e.start_time_ns, e.end_time_ns)
    allocs = allocation_events(prof)
    out = []
    for i in range(steps):
        lo, hi = windows[i]
        inside = [a for a in allocs if lo <= a[0] <= hi]
        before = [a for a in allocs if a[0] < lo]
        start = before[-1][1] if before else 0
        peak = max([start] + [a[1] for a in inside])
        out.append({"peak_live_bytes": int(peak), "live_at_start": int(start), "events": len(inside)})
    return out


def cuda_step_peak(step: Callable[[], None], device=None) -> Dict[str, int]:
    """On a GPU: {"peak_live_bytes": torch.cuda.max_memory_allocated during step(), "live_at_start": the bytes
    allocated before it} (the caching allocator's own counters; no profiler needed)."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    start = torch.cuda.memory_allocated(device)
    step()
    torch.cuda.synchronize(device)
    return {"peak_live_bytes": int(torch.cuda.max_memory_allocated(device)), "live_at_start": int(start)}


def train_step(net: torch.nn.Module, x: torch.Tensor, labels: torch.Tensor, loss: str = "rate_mse") -> float:
    """One step as a training loop runs it, for measuring: gradients released first, forward, remat's loss,
    backward (no optimiser update, no copies kept); SpikingJelly states reset. ``net`` may be apply_plan's."""
    from remat_torch import _sj
    from remat_torch.losses import rate_loss

    base = getattr(net, "net", net)
    for p in base.parameters():
        p.grad = None
    _sj.reset(base)
    lv = rate_loss(net(x), labels, loss)
    lv.backward()
    return float(lv)
