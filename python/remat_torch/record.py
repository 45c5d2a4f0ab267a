"""record.py - record a user's real PyTorch training steps as a remat trace.

    import remat_torch.record as rec
    summary = rec.record(net, x, labels, out="step.h5", steps=2, loss="rate_mse",
                         optimizer=torch.optim.SGD(net.parameters(), lr=0.1), model=model)
    print(summary["steps"][-1]["peak_live_bytes"])
    # then: remat simulate --trace step.h5 --plan 'b1:bit'

What is recorded (docs/trace-schema.md, "External allocation stream, version 2"):

- every allocation and free of CPU tensor storage during the steps, with its bytes and
  address, in order: the allocator events of the CPU profiler (torch.profiler with
  ``profile_memory=True``; Debian's torch 1.13 has no other CPU memory statistics), or,
  for a CUDA ``x``, the caching allocator's trace (``snapshot_events``; PyTorch 2.0 or
  later, untested on hardware). The bytes are the storages' requested sizes, no
  allocator rounding;
- marks placed exactly in that stream: each one allocates and frees a sentinel
  tensor whose address the recorder notes, so a mark's position among the allocations
  is exact (no timestamps are compared). Marks: step and phase boundaries (forward,
  loss, backward, optimizer), the start and end of every module's forward (module
  pre-hooks and hooks), the arrival of the gradient of every module's output and the
  completion of the gradient of its input (tensor hooks: the module's backward), and,
  for a SpikingJelly multi-step neuron (a module whose ``multi_step_forward`` loops
  ``single_step_forward`` over ``T``), every time step of its forward and the arrival
  of every step's output gradient in backward;
- which storages autograd saved for backward, and for which module
  (``torch.autograd.graph.saved_tensors_hooks``: the pack hook returns the tensor
  detached, the same storage, so the step keeps exactly what it keeps without the
  recorder).

After the steps, three probes (docs/pytorch-record.md): one more forward in which autograd
saves nothing (where each storage ends unsaved), the chunk probes (the whole network run
as one apply_plan segment of k time chunks, for each k of ``chunks``: what a unit with
``/k`` allocates) and the compressor probe (every model layer's and block's input
compressed and decompressed by each compressor: their temporaries).

The recorder's own allocations are the sentinels only; they are removed from the
stream. The storages that existed before recording started (parameters, buffers,
gradients, optimiser state, the batch) are counted once as ``live_before_bytes``.
"""
from __future__ import annotations

import os
import struct
import sys
import zlib
from typing import Callable, Dict, List, Optional, Sequence, Union

import torch
import torch.nn as nn
import torch.nn.functional as F

from remat_torch import _sj
from remat_torch.profile import _walk
from remat_torch._atomic import atomic_path

EXT_FORMAT = "remat-external-alloc"
EXT_VERSION = 2

# mark kinds (the /record/marks attribute kind_names lists them in this order)
MARK_KINDS = ("step_begin", "step_end", "phase", "fwd_begin", "fwd_end", "bwd_begin", "bwd_end",
              "tstep_fwd", "tstep_bwd", "pack", "probe_begin", "probe_end", "chunks_begin", "chunk_begin",
              "chunk_end", "chunks_end", "comp_begin", "comp_mid", "comp_end", "ignore_begin", "ignore_end")
PHASES = ("other", "forward", "loss", "backward", "optimizer")
(K_STEP_BEGIN, K_STEP_END, K_PHASE, K_FWD_BEGIN, K_FWD_END, K_BWD_BEGIN, K_BWD_END, K_TSTEP_FWD, K_TSTEP_BWD,
 K_PACK, K_PROBE_BEGIN, K_PROBE_END, K_CHUNKS_BEGIN, K_CHUNK_BEGIN, K_CHUNK_END, K_CHUNKS_END, K_COMP_BEGIN,
 K_COMP_MID, K_COMP_END, K_IGNORE_BEGIN, K_IGNORE_END) = range(len(MARK_KINDS))
P_OTHER, P_FORWARD, P_LOSS, P_BACKWARD, P_OPTIMIZER = range(len(PHASES))
SENTINEL_BYTES = 4093  # a prime: no tensor of the recorded step should have that many bytes (a note says if one has)


def _storage_ptr(t: torch.Tensor) -> int:
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return int(st.data_ptr())


def _storage_nbytes(t: torch.Tensor) -> int:
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return int(st.nbytes()) if hasattr(st, "nbytes") else int(st.size() * t.element_size())


def _first_tensor(obj):
    if isinstance(obj, torch.Tensor):
        return obj
    if isinstance(obj, (list, tuple)):
        for o in obj:
            if isinstance(o, torch.Tensor):
                return o
    return None


def execution_label(device: str = "cpu") -> str:
    """The execution a recording describes, as every remat answer names it."""
    return "PyTorch %s on %s, recorded" % (torch.__version__.split("+")[0], device.upper())


class _Marks:
    """Marks in the allocation stream: each allocates and frees a sentinel of SENTINEL_BYTES (an odd size no
    tensor of the step has: a one-byte sentinel was confused with an op's own one-byte result, such as
    ``bool(t.all())``'s, freed just before at the same address)."""

    def __init__(self, device: Union[str, torch.device] = "cpu"):
        self.rows: List[tuple] = []  # (kind, module, step, tstep, sentinel ptr, storage ptr, numel, nnz)
        self.step = -1
        self.enabled = True
        self.device = torch.device(device)  # the sentinels live where the step's tensors do

    def mark(self, kind: int, module: int = -1, tstep: int = -1, storage: int = 0, numel: int = -1,
             nnz: int = -1) -> None:
        if not self.enabled:
            return
        s = torch.empty(SENTINEL_BYTES, dtype=torch.uint8, device=self.device)
        self.rows.append((kind, module, self.step, tstep, s.data_ptr(), storage, numel, nnz))
        del s


def _rate_loss(name: str, classes: int) -> Callable:
    if name == "rate_mse":
        return lambda out, labels: F.mse_loss(out.mean(0), F.one_hot(labels, classes).to(out.dtype))
    if name == "rate_ce":
        return lambda out, labels: F.cross_entropy(out.mean(0), labels)
    raise ValueError("record: loss: expected 'rate_mse', 'rate_ce' or a callable, got %r" % (name,))




class _Hooks:
    """Forward/backward marks on every module, per-step marks in multi-step neurons,
    and the saved-tensor hooks."""

    def __init__(self, net: nn.Module, marks: _Marks, count_names=()):
        self.marks = marks
        self.count_inputs = set()
        self.names: List[str] = []
        self.handles = []
        self.patched = []
        self.fwd_stack: List[int] = []
        self.bn_bytes: List[int] = []
        self.comp_probe = False  # _compress_probe: compress and decompress each counted input
        for qual, m in net.named_modules():
            idx = len(self.names)
            self.names.append(qual if qual else "(net)")
            if qual in count_names:
                self.count_inputs.add(idx)
            self.bn_bytes.append(sum(b.numel() * b.element_size() for b in m.buffers(recurse=False))
                                 if isinstance(m, nn.modules.batchnorm._BatchNorm) else 0)
            self.handles.append(m.register_forward_pre_hook(self._pre(idx)))
            self.handles.append(m.register_forward_hook(self._post(idx)))
            if (hasattr(m, "single_step_forward") and hasattr(m, "multi_step_forward")
                    and "single_step_forward" not in m.__dict__):
                self._patch_steps(m, idx)

    def _pre(self, idx: int):
        def hook(module, inputs):
            x = _first_tensor(inputs)
            if self.comp_probe and x is not None and idx in self.count_inputs and x.is_floating_point():
                self._compressors(idx, x)
            ptr = _storage_ptr(x) if x is not None else 0
            numel = x.numel() if x is not None else -1
            nnz = -1
            if x is not None and idx in self.count_inputs and x.is_floating_point() and self.marks.enabled:
                # the spike count of a layer's input (the sparse compressor's bytes): the recorder's own
                # allocations, between two marks that remove them from the stream
                self.marks.mark(K_IGNORE_BEGIN, idx)
                nnz = int(torch.count_nonzero(x.detach()))
                self.marks.mark(K_IGNORE_END, idx)
            self.marks.mark(K_FWD_BEGIN, idx, storage=ptr, numel=numel, nnz=nnz)
            self.fwd_stack.append(idx)
            if x is not None and x.requires_grad and torch.is_grad_enabled():
                x.register_hook(self._grad_mark(K_BWD_END, idx))
        return hook

    def _compressors(self, idx: int, x: torch.Tensor) -> None:
        """apply_plan's compress and decompress of this input with each compressor, marked (comp_begin, comp_mid
        between the two, comp_end; tstep: the compressor, remat's numbering; comp_end's tstep -1 where the
        compressor refuses the values)."""
        from remat_torch import apply as A
        # the probe's input is not the step's (the parameters moved since): its spike count scales sparse's positions
        nnz = int(torch.count_nonzero(x.detach()))
        for code, comp in enumerate(A.COMPRESSORS):
            if comp == "none":
                continue
            self.marks.mark(K_COMP_BEGIN, idx, tstep=code, numel=x.numel(), nnz=nnz)
            try:
                c = A.compress(x.detach(), comp, "record")
            except ValueError:
                self.marks.mark(K_COMP_END, idx, tstep=-1)
                continue
            self.marks.mark(K_COMP_MID, idx, tstep=code)
            y = A.decompress(c)
            self.marks.mark(K_COMP_END, idx, tstep=code)
            del c, y

    def _post(self, idx: int):
        def hook(module, inputs, output):
            y = _first_tensor(output)
            self.marks.mark(K_FWD_END, idx, storage=_storage_ptr(y) if y is not None else 0,
                            numel=y.numel() if y is not None else -1)
            if self.fwd_stack and self.fwd_stack[-1] == idx:
                self.fwd_stack.pop()
            if y is not None and y.requires_grad and torch.is_grad_enabled():
                y.register_hook(self._grad_mark(K_BWD_BEGIN, idx))
        return hook

    def _grad_mark(self, kind: int, idx: int, tstep: int = -1):
        marks = self.marks

        def hook(grad):
            marks.mark(kind, idx, tstep=tstep, storage=_storage_ptr(grad) if isinstance(grad, torch.Tensor) else 0)
        return hook

    def _patch_steps(self, m: nn.Module, idx: int) -> None:
        orig = m.single_step_forward
        counter = {"t": 0}
        pre_hook_self = self

        def single_step_forward(x, *a, **kw):
            t = counter["t"]
            counter["t"] += 1
            pre_hook_self.marks.mark(K_TSTEP_FWD, idx, tstep=t)
            y = orig(x, *a, **kw)
            if isinstance(y, torch.Tensor) and y.requires_grad and torch.is_grad_enabled():
                y.register_hook(self._grad_mark(K_TSTEP_BWD, idx, t))
            return y

        def reset_counter(module, inputs):
            counter["t"] = 0
        self.handles.append(m.register_forward_pre_hook(reset_counter))
        m.single_step_forward = single_step_forward
        self.patched.append(m)

    def pack(self, t: torch.Tensor):
        mod = self.fwd_stack[-1] if self.fwd_stack else -1
        self.marks.mark(K_PACK, mod, storage=_storage_ptr(t))
        # the same storage without the autograd history: returning t itself would make a saved output hold its
        # own grad_fn, a reference cycle that outlives the step (the step would hold more than without the hooks)
        return t.detach()

    @staticmethod
    def unpack(t):
        return t

    def remove(self):
        for h in self.handles:
            h.remove()
        for m in self.patched:
            del m.single_step_forward


def _rng_get() -> tuple:
    """The random generators' states a probe puts back: the CPU's, and every GPU's once CUDA is initialised."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def _rng_set(state: tuple) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state_all(state[1])


def _probe(net: nn.Module, x: torch.Tensor, labels: torch.Tensor, loss_fn: Callable, marks: _Marks,
           step: int) -> None:
    """One more forward and loss in which autograd keeps nothing (the pack hook drops the
    tensor): each storage then ends where its last Python reference does, as inside a
    checkpointed forward. The module's buffers (batch-norm statistics), its neurons'
    state and the random generator are put back as they were."""
    buffers = [b.detach().clone() for b in net.buffers()]
    rng = _rng_get()
    marks.step = step
    marks.mark(K_PROBE_BEGIN)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: None, lambda p: None):
        y = net(x)
        L = loss_fn(y, labels)
        del y, L
    marks.mark(K_PROBE_END)
    _sj.reset(net)
    with torch.no_grad():
        for b, v in zip(net.buffers(), buffers):
            b.copy_(v)
    _rng_set(rng)


def _compress_probe(net: nn.Module, x: torch.Tensor, hooks: "_Hooks", marks: _Marks, step: int) -> None:
    """One more forward (no autograd) in which the input of every model layer and block is
    compressed and decompressed by each of apply_plan's compressors, between marks: the
    compressors' temporaries, as a checkpointed unit's forward and backward make them.
    Buffers, neuron state and the random generator are put back afterwards."""
    buffers = [b.detach().clone() for b in net.buffers()]
    rng = _rng_get()
    marks.step = step
    _sj.reset(net)
    hooks.comp_probe = True
    try:
        with torch.no_grad():
            y = net(x)
            del y
    finally:
        hooks.comp_probe = False
        _sj.reset(net)
        with torch.no_grad():
            for b, v in zip(net.buffers(), buffers):
                b.copy_(v)
        _rng_set(rng)


def _chunk_steps(net: nn.Module, model: Optional[dict], x: torch.Tensor, chunks, notes: List[str]):
    """(the layers of net as apply_plan runs them, the chunk counts to probe); ([], []) without a model."""
    if not model or hasattr(net, "_program"):  # no model file, or a PlannedModule (its layers are net's)
        return [], []
    T = int(x.shape[0])
    ks = [k for k in range(2, T + 1) if T % k == 0] if chunks is None else list(chunks)
    for k in ks:
        if not isinstance(k, int) or k < 2 or T % k:
            raise ValueError("record: chunks: expected divisors of T = %d above 1, got %r" % (T, k))
    if not ks:
        return [], []
    from remat_torch import apply as A
    try:
        steps = [s for kind, item in A.apply_plan(net, model, None)._program for s in item]
    except ValueError as e:
        notes.append("no chunk probe (time chunks are not predicted): %s" % e)
        return [], []
    return steps, ks


def _chunk_probe(net: nn.Module, steps, x: torch.Tensor, k: int, marks: _Marks, step: int,
                 notes: List[str]) -> None:
    """The time chunks' probe for k chunks: the whole network run as one segment of
    ``remat_torch.apply_plan`` with k time chunks (its autograd Function: the forward
    chunk by chunk, then, in backward, each chunk recomputed and backpropagated, last
    to first), marked at every chunk's start and end; the gradient of the output is
    ones. Every layer thus runs on T/k steps exactly as inside a chunked unit, so the
    unit's allocations are read from here (sim/torch_sim.h). Parameters' gradients,
    buffers, neurons' state and the random generator are put back afterwards."""
    from remat_torch import apply as A
    params = [p for p in net.parameters()]
    grads = [p.grad.detach().clone() if p.grad is not None else None for p in params]
    buffers = [b.detach().clone() for b in net.buffers()]
    rng = _rng_get()
    spec = A._SegmentSpec(steps, "input", "none", k, "record: chunk probe (k=%d)" % k,
                          on_chunk=lambda end, c: marks.mark(K_CHUNK_END if end else K_CHUNK_BEGIN, tstep=c))
    # batch norm in eval mode: a unit with time chunks holds none (apply_plan refuses it), and on T/k steps of a
    # small batch training-mode statistics may not exist (one value per channel)
    bns = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training]
    anchor = torch.empty(0, requires_grad=True)
    marks.step = step
    _sj.reset(net)
    marks.mark(K_CHUNKS_BEGIN, tstep=k)
    try:
        for m in bns:
            m.eval()
        y = A._Segment.apply(spec, x.detach(), anchor)
        g = torch.ones_like(y)
        y.backward(g)
        del y, g
        marks.mark(K_CHUNKS_END, tstep=k)
    except (RuntimeError, ValueError) as e:
        marks.mark(K_CHUNKS_END, tstep=-1)  # the sim finds no probe for k
        notes.append("no chunk probe for k = %d (time chunks of %d are not predicted): %s"
                     % (k, k, str(e).splitlines()[0] if str(e) else type(e).__name__))
    finally:
        for m in bns:
            m.train()
        _sj.reset(net)
        with torch.no_grad():
            for p, g0 in zip(params, grads):
                if g0 is None:
                    p.grad = None
                else:
                    p.grad.copy_(g0)
            for b, v in zip(net.buffers(), buffers):
                b.copy_(v)
        _rng_set(rng)


def _allocation_events(prof) -> List[tuple]:
    """(ptr, signed bytes, total_allocated, time_ns) of every CPU allocator event, in
    the allocator's order: by time, ties put in the order the running total implies."""
    ev = []
    for e in _walk(prof.profiler.kineto_results.experimental_event_tree()):
        f = e.extra_fields
        if type(f).__name__ == "_ExtraFields_Allocation":
            ev.append((int(e.start_time_ns), int(f.ptr), int(f.alloc_size), int(f.total_allocated)))
    ev.sort(key=lambda a: a[0])
    out: List[tuple] = []
    total = 0
    i = 0
    while i < len(ev):
        j = i
        while j < len(ev) and ev[j][0] == ev[i][0]:
            j += 1
        group = ev[i:j]
        while group:  # the event whose total follows the running total comes first
            k = next((q for q, g in enumerate(group) if g[3] - g[2] == total), 0)
            g = group.pop(k)
            out.append((g[1], g[2], g[3], g[0]))
            total = g[3]
        i = j
    return out


class _CpuSource:
    """The CPU event source: the profiler's allocator events (``profile_memory=True``).

    ``with src: <steps>`` then ``src.events()``: the stream ``_assemble`` reads."""

    def __init__(self):
        from torch.profiler import ProfilerActivity, profile
        self._prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
        self.notes: List[str] = []

    def __enter__(self) -> "_CpuSource":
        self._prof.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._prof.__exit__(*exc)

    def events(self) -> List[tuple]:
        return _allocation_events(self._prof)


CUDA_TRACE_ENTRIES = 1 << 24  # the allocator trace's ring buffer: a recording that fills it is refused


class _CudaSource:
    """The CUDA event source: the caching allocator's trace (``torch.cuda.memory._record_memory_history``
    with ``trace_alloc_max_entries``, PyTorch 2.0 and later; later versions keep that spelling as their
    legacy form), read from ``torch.cuda.memory._snapshot()`` by ``snapshot_events``.

    Refuses, naming the reason, where CUDA is not available or this torch has no allocation trace
    (torch 1.13's ``_record_memory_history(enabled, device)`` records only each block's history,
    without frees or their order)."""

    def __init__(self, device: torch.device):
        import inspect
        if not torch.cuda.is_available():
            raise ValueError("record: x: a CUDA tensor, but CUDA is not available to this torch %s (no GPU or a CPU "
                             "build): record on the CPU, or on a machine with a GPU" % torch.__version__)
        fn = torch.cuda.memory._record_memory_history
        params = inspect.signature(fn).parameters
        legacy = getattr(torch.cuda.memory, "_record_memory_history_legacy", None)
        if "trace_alloc_max_entries" not in params and not (
                legacy is not None and "trace_alloc_max_entries" in inspect.signature(legacy).parameters):
            raise ValueError("record: x: a CUDA tensor, but torch %s has no allocation trace "
                             "(torch.cuda.memory._record_memory_history without trace_alloc_max_entries: it "
                             "records each block's history only, not the frees in order); the GPU recording "
                             "needs PyTorch 2.0 or later" % torch.__version__)
        self.device = int(device.index if device.index is not None else torch.cuda.current_device())
        self.snapshot: Optional[dict] = None
        self.notes: List[str] = []

    def __enter__(self) -> "_CudaSource":
        torch.cuda.synchronize(self.device)
        torch.cuda.memory._record_memory_history(True, trace_alloc_max_entries=CUDA_TRACE_ENTRIES,
                                                 trace_alloc_record_context=False, device=self.device)
        return self

    def __exit__(self, *exc) -> None:
        torch.cuda.synchronize(self.device)
        self.snapshot = torch.cuda.memory._snapshot(self.device)
        torch.cuda.memory._record_memory_history(False, device=self.device)

    def events(self) -> List[tuple]:
        stream, notes = snapshot_events(self.snapshot, self.device, max_entries=CUDA_TRACE_ENTRIES)
        self.notes.extend(notes)
        return stream


def snapshot_events(snapshot: dict, device: int = 0, max_entries: Optional[int] = None):
    """The allocation stream of a PyTorch memory snapshot's trace, as the CPU source gives it.

    ``snapshot`` is what ``torch.cuda.memory._snapshot()`` returns (PyTorch 2.0 and later):
    ``device_traces[device]`` is the caching allocator's trace in order, entries with
    ``action`` (alloc, free_requested, free_completed, segment_alloc, segment_free, ...),
    ``addr``, ``size`` and, from 2.1, ``time_us``. Returns ``(stream, notes)``: stream is
    ``[(addr, signed bytes, running total, time_ns)]``, one row per ``alloc`` (its bytes, the
    requested size the trace records) and one per ``free_requested`` (the storage's end, the
    bytes of its allocation); ``free_completed`` (the block back in the pool, later only where
    another stream used it) and the segment actions are not storage events: the notes give
    the reserved bytes the segments reached and how many frees completed late. Raises
    ValueError naming the field where the snapshot is not of that shape, or where the trace
    filled its ring buffer (``max_entries``: its first entries are lost).

    Example::

        stream, notes = snapshot_events(torch.cuda.memory._snapshot(), 0)
    """
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("device_traces"), list):
        raise ValueError("record: snapshot: device_traces: expected a list (a PyTorch 2.0 or later memory snapshot "
                         "recorded with trace_alloc_max_entries)")
    traces = snapshot["device_traces"]
    if not 0 <= device < len(traces) or not isinstance(traces[device], list):
        raise ValueError("record: snapshot: device_traces[%d]: expected a list of trace entries (%d devices)"
                         % (device, len(traces)))
    trace = traces[device]
    if max_entries is not None and len(trace) >= max_entries:
        raise ValueError("record: snapshot: device_traces[%d]: %d entries, the trace's ring buffer is full (its first "
                         "allocations are lost): record fewer steps" % (device, len(trace)))
    stream: List[tuple] = []
    live: Dict[int, int] = {}  # addr -> bytes of the live allocation there
    pending: Dict[int, int] = {}  # addr -> stream position of its free_requested, until free_completed
    total, reserved, reserved_peak, late, unknown = 0, 0, 0, 0, 0
    for i, e in enumerate(trace):
        try:
            action, addr, size = e["action"], int(e["addr"]), int(e["size"])
        except (TypeError, KeyError, ValueError):
            raise ValueError("record: snapshot: device_traces[%d][%d]: expected a dict with action, addr and size"
                             % (device, i))
        tns = int(e.get("time_us", 0) or 0) * 1000
        if action == "alloc":
            live[addr] = size
            total += size
            stream.append((addr, size, total, tns))
        elif action == "free_requested":
            b = live.pop(addr, None)
            if b is None:  # allocated before the trace started: the entry's own bytes
                b, unknown = size, unknown + 1
            total -= b
            stream.append((addr, -b, total, tns))
            pending[addr] = len(stream)
        elif action == "free_completed":
            q = pending.pop(addr, None)
            if q is not None and q != len(stream):
                late += 1
        elif action == "segment_alloc":
            reserved += size
            reserved_peak = max(reserved_peak, reserved)
        elif action == "segment_free":
            reserved -= size
        # segment_map / segment_unmap / snapshot / oom / annotate: no storage event
    notes = []
    if reserved_peak:
        notes.append("caching allocator: segments reached %d B reserved above the reserved bytes before recording "
                     "started (the v2 trace does not carry the segments; remat simulate predicts live bytes)"
                     % reserved_peak)
    if late:
        notes.append("%d frees completed after later allocations (blocks used by another stream): the stream "
                     "frees them when requested" % late)
    if unknown:
        notes.append("%d trace frees of blocks allocated before the trace started" % unknown)
    return stream, notes


def _event_source(device: torch.device):
    """The allocation event source for tensors on ``device``: _CpuSource or _CudaSource."""
    if device.type == "cpu":
        return _CpuSource()
    if device.type == "cuda":
        return _CudaSource(device)
    raise ValueError("record: x: expected a CPU or CUDA tensor, got one on %s" % device)


def _unique_storages(tensors) -> Dict[int, int]:
    seen: Dict[int, int] = {}
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.numel() > 0:
            seen[_storage_ptr(t)] = _storage_nbytes(t)
    return seen


def _model_maps(model: Optional[dict]):
    """layer name -> index, block name -> index, layer index -> block index."""
    if not model:
        return {}, {}, {}
    layers = {l["name"]: i for i, l in enumerate(model.get("layers", []))}
    blocks, layer_block = {}, {}
    for b, blk in enumerate(model.get("blocks", [])):
        blocks[blk["name"]] = b
        for ln in blk.get("layers", []):
            if ln in layers:
                layer_block[layers[ln]] = b
    return layers, blocks, layer_block


def record(net: nn.Module, x: torch.Tensor, labels: torch.Tensor, out: Optional[str] = "step.h5", steps: int = 2,
           loss: Union[str, Callable] = "rate_mse", optimizer: Optional[torch.optim.Optimizer] = None,
           model: Optional[Union[dict, str]] = None, classes: Optional[int] = None,
           chunks: Optional[Sequence[int]] = None) -> dict:
    """Runs ``steps`` real training steps of ``net`` on ``x``'s device and writes them to ``out``.

    The allocation stream comes from one event source per device: on the CPU the
    profiler's allocator events, on CUDA the caching allocator's trace (PyTorch 2.0 or
    later; ``snapshot_events``; untested on hardware). Everything else is shared.

    Each step: zero the gradients (when ``optimizer`` is given), forward ``net(x)``
    (``x`` is ``[T, N, ...]``, SpikingJelly's multi-step layout), the loss
    (``rate_mse``, ``rate_ce`` on the firing rate, or a callable ``loss(out, labels)``),
    backward, ``optimizer.step()``, then the neurons' state reset (as
    ``spikingjelly.activation_based.functional.reset_net``).

    ``model`` is the remat model file of ``net`` (a dict, or a path: what
    ``remat_torch.to_model`` returns or writes); its layer and block names, the modules'
    qualified names, let ``remat simulate --trace out --plan P`` apply a plan written in
    them. Without it the trace still records every module, but only the plain step can
    be predicted.

    ``chunks``: the time-chunk counts k for which a chunk probe is recorded (the whole
    network run as one ``apply_plan`` segment of k chunks, after the steps), so that
    plans with ``/k`` can be predicted; default every divisor of T above 1 (with
    ``model``), ``()`` none.

    Returns ``{"execution": ..., "live_before_bytes": ..., "steps": [{"peak_live_bytes",
    "live_at_start", "events"}...]}``: per step, the peak of live tensor bytes (the
    storages before recording started included), as ``bench/pytorch/measure.py``
    measures it. ``out=None`` records without writing a file.

    Example::

        net = nn.Sequential(layer.Linear(16, 32), neuron.LIFNode(step_mode='m'))
        s = record(net, torch.rand(4, 2, 16), torch.tensor([0, 1]), out="step.h5", model=model)
    """
    if steps < 1:
        raise ValueError("record: steps: expected at least 1, got %d" % steps)
    if not isinstance(x, torch.Tensor) or x.dim() < 3:
        raise ValueError("record: x: expected a [T, N, ...] tensor")
    source = _event_source(x.device)
    model_text = ""
    if isinstance(model, str):
        with open(model, "r", encoding="utf-8") as fh:
            model_text = fh.read()
        import json
        model = json.loads(model_text)
    elif model is not None:
        import json
        model_text = json.dumps(model, indent=1)
    if classes is None:
        classes = int(model["classes"]) if model and "classes" in model else None
    if isinstance(loss, str):
        if classes is None:
            raise ValueError("record: classes: needed for loss %r (give model= or classes=)" % loss)
        loss_fn = _rate_loss(loss, classes)
        loss_name = loss
    else:
        loss_fn, loss_name = loss, getattr(loss, "__name__", "callable")
    before = [x, labels] + list(net.parameters()) + list(net.buffers())
    before += [p.grad for p in net.parameters() if p.grad is not None]
    if optimizer is not None:
        for st in optimizer.state.values():
            before += [v for v in st.values() if isinstance(v, torch.Tensor)]
    before_storages = _unique_storages(before)
    live_before = sum(before_storages.values())

    pre_notes: List[str] = []
    chunk_steps, chunk_ks = _chunk_steps(net, model, x, chunks, pre_notes)
    marks = _Marks(x.device)
    names = set()
    if model:
        names = {l["name"] for l in model.get("layers", [])} | {b["name"] for b in model.get("blocks", [])}
    hooks = _Hooks(net, marks, names)
    try:
        with source:
            with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
                for step in range(steps):
                    marks.step = step
                    marks.mark(K_STEP_BEGIN)
                    marks.mark(K_PHASE, P_OPTIMIZER if optimizer is not None else P_OTHER)
                    if optimizer is not None:
                        optimizer.zero_grad()
                    marks.mark(K_PHASE, P_FORWARD)
                    y = net(x)
                    marks.mark(K_PHASE, P_LOSS)
                    L = loss_fn(y, labels)
                    marks.mark(K_PHASE, P_BACKWARD)
                    L.backward()
                    marks.mark(K_PHASE, P_OPTIMIZER)
                    if optimizer is not None:
                        optimizer.step()
                    marks.mark(K_PHASE, P_OTHER)
                    _sj.reset(net)
                    del y, L
                    marks.mark(K_STEP_END)
                _probe(net, x, labels, loss_fn, marks, steps)
                for k in chunk_ks:
                    _chunk_probe(net, chunk_steps, x, k, marks, steps, pre_notes)
                    hooks.fwd_stack.clear()
                if names:
                    _compress_probe(net, x, hooks, marks, steps)
            marks.enabled = False
    finally:
        hooks.remove()
    stream = source.events()
    rec = _assemble(stream, marks.rows, hooks.names, model, before_storages)
    rec["notes"] = pre_notes + source.notes + rec["notes"]
    rec["device"] = x.device.type
    rec["mod_bn_bytes"] = hooks.bn_bytes
    rec["rng_state_bytes"] = int(torch.get_rng_state().numel())
    rec["execution"] = execution_label(x.device.type)
    rec["live_before_bytes"] = live_before
    rec["model_text"] = model_text
    rec["loss"] = loss_name
    rec["steps_recorded"] = steps
    rec["T"], rec["N"] = int(x.shape[0]), int(x.shape[1])
    if out:
        write_h5(rec, out)
    return {"execution": rec["execution"], "live_before_bytes": live_before, "steps": rec["step_summary"],
            "events": len(rec["ev_addr"]), "marks": len(rec["mk_kind"]), "notes": rec["notes"]}


def _assemble(stream, mark_rows, names, model, before_storages) -> dict:
    """Removes the sentinels, places the marks, pairs allocations with frees into
    storage ids, labels each event with its step, phase, module and time step."""
    ev_addr, ev_size, ev_time = [], [], []
    mk = []  # (kind, module, step, tstep, event position, storage ptr, numel, nnz)
    ignoring, ignored = False, 0
    j = 0
    i = 0
    while i < len(stream):
        ptr, size, total, tns = stream[i]
        if (j < len(mark_rows) and size == SENTINEL_BYTES and ptr == mark_rows[j][4] and i + 1 < len(stream)
                and stream[i + 1][0] == ptr and stream[i + 1][1] == -SENTINEL_BYTES):
            r = mark_rows[j]
            if r[0] == K_IGNORE_BEGIN:
                ignoring, ignored = True, 0
            elif r[0] == K_IGNORE_END:
                if ignored != 0:
                    raise RuntimeError("record: the recorder's spike count left %d bytes allocated" % ignored)
                ignoring = False
            else:
                mk.append((r[0], r[1], r[2], r[3], len(ev_addr), r[5], r[6], r[7]))
            j += 1
            i += 2
            continue
        if ignoring:
            ignored += size
            i += 1
            continue
        ev_addr.append(ptr)
        ev_size.append(size)
        ev_time.append(tns)
        i += 1
    if j != len(mark_rows):
        raise RuntimeError("record: the profiler's allocation stream lost %d of %d marks (another thread "
                           "allocating?)" % (len(mark_rows) - j, len(mark_rows)))
    n = len(ev_addr)
    notes = []
    # storages
    storage = [-1] * n
    live: Dict[int, int] = {}
    sid_bytes: List[int] = []
    unknown_frees = 0
    mk_by_pos: Dict[int, List[int]] = {}
    for q, m in enumerate(mk):
        mk_by_pos.setdefault(m[4], []).append(q)
    mk_storage = [-1] * len(mk)
    for e in range(n + 1):
        for q in mk_by_pos.get(e, []):
            if mk[q][5]:
                mk_storage[q] = live.get(mk[q][5], -1)
        if e == n:
            break
        if ev_size[e] > 0:
            storage[e] = len(sid_bytes)
            sid_bytes.append(ev_size[e])
            live[ev_addr[e]] = storage[e]
        else:
            s = live.pop(ev_addr[e], -1)
            storage[e] = s
            if s < 0:
                unknown_frees += 1
    if any(abs(v) == SENTINEL_BYTES for v in ev_size):
        notes.append("the step allocates tensors of %d B, the marks' sentinel size: a mark may be misplaced next to "
                     "one" % SENTINEL_BYTES)
    if unknown_frees:
        notes.append("%d frees of storages allocated before recording started (their bytes are in "
                     "live_before_bytes)" % unknown_frees)
    # per-event step, phase, module, time step
    ev_step, ev_phase, ev_module, ev_tstep = [-1] * n, [0] * n, [-1] * n, [-1] * n
    step, phase, fstack, bmod, tstep, tmod = -1, 0, [], -1, -1, -1
    for e in range(n + 1):
        for q in mk_by_pos.get(e, []):
            k, mod, st, ts = mk[q][0], mk[q][1], mk[q][2], mk[q][3]
            if k == K_STEP_BEGIN:
                step, fstack, bmod = st, [], -1
            elif k == K_PHASE:
                phase = mod
                bmod = -1
            elif k == K_FWD_BEGIN:
                fstack.append(mod)
            elif k == K_FWD_END:
                if fstack and fstack[-1] == mod:
                    fstack.pop()
                if mod == tmod:
                    tstep, tmod = -1, -1
            elif k == K_BWD_BEGIN:
                bmod = mod
            elif k == K_TSTEP_FWD or k == K_TSTEP_BWD:
                tstep, tmod = ts, mod
        if e == n:
            break
        ev_step[e], ev_phase[e], ev_tstep[e] = step, phase, tstep
        ev_module[e] = fstack[-1] if fstack else (bmod if phase == P_BACKWARD else -1)
    # per-step summaries: live bytes relative to the window's start, plus live_before
    live_before = sum(before_storages.values())
    summary = []
    cur = 0
    pos_begin = {m[2]: m[4] for m in mk if m[0] == K_STEP_BEGIN}
    pos_end = {m[2]: m[4] for m in mk if m[0] == K_STEP_END}
    prefix = [0] * (n + 1)
    for e in range(n):
        cur += ev_size[e]
        prefix[e + 1] = cur
    for st in sorted(pos_begin):
        a, b = pos_begin[st], pos_end.get(st, n)
        start = prefix[a]
        peak = max(prefix[a:b + 1])
        summary.append({"step": st, "peak_live_bytes": live_before + peak, "live_at_start": live_before + start,
                        "events": b - a})
    # modules
    layers, blocks, layer_block = _model_maps(model)
    mod_layer = [layers.get(nm, -1) for nm in names]
    mod_block = [blocks.get(nm, layer_block.get(layers.get(nm, -1), -1)) for nm in names]
    mod_is_block = [1 if nm in blocks else 0 for nm in names]
    return {
        "ev_addr": ev_addr, "ev_size": ev_size, "ev_time": ev_time, "ev_storage": storage, "ev_step": ev_step,
        "ev_phase": ev_phase, "ev_module": ev_module, "ev_tstep": ev_tstep,
        "mk_kind": [m[0] for m in mk], "mk_module": [m[1] for m in mk], "mk_step": [m[2] for m in mk],
        "mk_tstep": [m[3] for m in mk], "mk_event": [m[4] for m in mk], "mk_storage": mk_storage,
        "mk_numel": [m[6] for m in mk], "mk_nnz": [m[7] for m in mk],
        "mod_names": names, "mod_layer": mod_layer, "mod_block": mod_block, "mod_is_block": mod_is_block,
        "n_storages": len(sid_bytes), "step_summary": summary, "notes": notes,
    }


# ---- HDF5 (docs/trace-schema.md, external allocation stream version 2) --------------

_EVENT_COLS = (("action", "u1"), ("addr", "i8"), ("size", "i8"), ("stream", "i8"), ("time_us", "i8"),
               ("device_free", "i8"), ("label", "i4"))
_SEG_COLS = (("address", "i8"), ("total_size", "i8"), ("stream", "i8"), ("pool", "u1"), ("expandable", "u1"),
             ("first_block", "i8"), ("n_blocks", "i8"))
_BLOCK_COLS = (("address", "i8"), ("size", "i8"), ("requested_size", "i8"), ("state", "u1"), ("label", "i4"))
REC_EVENT_COLS = (("storage", "i8"), ("step", "i4"), ("phase", "u1"), ("module", "i4"), ("tstep", "i4"))
REC_MARK_COLS = (("kind", "u1"), ("module", "i4"), ("step", "i4"), ("tstep", "i4"), ("event", "i8"),
                 ("storage", "i8"), ("numel", "i8"), ("nnz", "i8"))
REC_MODULE_COLS = (("label", "i4"), ("layer", "i4"), ("block", "i4"), ("is_block", "u1"), ("bn_buffer_bytes", "i8"))
ACTION_NAMES = ("alloc,free_requested,free_completed,segment_alloc,segment_free,segment_map,segment_unmap,"
                "snapshot,oom,annotate")
REC_STR_ATTRS = ("model", "execution", "torch_version", "device", "loss")
REC_INT_ATTRS = ("live_before_bytes", "steps", "T", "N", "rng_state_bytes")


def _crc(crc: int, arr) -> int:
    import numpy as np
    a = np.ascontiguousarray(arr)
    return zlib.crc32(a.tobytes(), crc) if a.size else crc


def write_h5(rec: dict, path: str) -> None:
    """Writes the recording atomically (a temporary in the same folder, fsynced, renamed)."""
    import h5py
    import numpy as np
    n = len(rec["ev_addr"])
    labels = list(rec["mod_names"])
    text = b"".join(s.encode() + b"\0" for s in labels)
    offs, o = [], 0
    for s in labels:
        offs.append(o)
        o += len(s.encode()) + 1
    ev = {
        "action": np.array([0 if s > 0 else 2 for s in rec["ev_size"]], dtype="u1"),
        "addr": np.array(rec["ev_addr"], dtype="<i8"),
        "size": np.array([abs(s) for s in rec["ev_size"]], dtype="<i8"),
        "stream": np.full(n, -1, dtype="<i8"),
        "time_us": np.array([t // 1000 for t in rec["ev_time"]], dtype="<i8"),
        "device_free": np.full(n, -1, dtype="<i8"),
        "label": np.array(rec["ev_module"], dtype="<i4"),
    }
    recev = {"storage": rec["ev_storage"], "step": rec["ev_step"], "phase": rec["ev_phase"],
             "module": rec["ev_module"], "tstep": rec["ev_tstep"]}
    marks = {"kind": rec["mk_kind"], "module": rec["mk_module"], "step": rec["mk_step"], "tstep": rec["mk_tstep"],
             "event": rec["mk_event"], "storage": rec["mk_storage"], "numel": rec["mk_numel"], "nnz": rec["mk_nnz"]}
    mods = {"label": list(range(len(labels))), "layer": rec["mod_layer"], "block": rec["mod_block"],
            "is_block": rec["mod_is_block"], "bn_buffer_bytes": rec["mod_bn_bytes"]}
    notes = "\n".join(rec["notes"])
    str_attrs = {"source": "pytorch-record", "source_file": os.path.basename(path), "allocator_settings": "", "allocator_config": "",
                 "notes": notes, "format": EXT_FORMAT}
    rec_str = {"model": rec["model_text"], "execution": rec["execution"], "torch_version": torch.__version__,
               "device": rec.get("device", "cpu"), "loss": rec["loss"]}
    rec_int = {"live_before_bytes": rec["live_before_bytes"], "steps": rec["steps_recorded"], "T": rec["T"],
               "N": rec["N"], "rng_state_bytes": rec["rng_state_bytes"]}
    crc = 0
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w", libver=("v108", "latest")) as f:  # checksummed metadata (as remat writes)
            def put(name, data, dtype):
                a = np.ascontiguousarray(np.array(data, dtype=dtype))
                f.create_dataset(name, data=a, shape=a.shape, dtype=a.dtype)
                return a
            t_arr = put("labels/text", np.frombuffer(text, dtype="u1") if text else [], "u1")
            o_arr = put("labels/offset", offs, "<i8")
            crc = _crc(crc, t_arr)
            crc = _crc(crc, o_arr)
            for name, dt in _EVENT_COLS:
                crc = _crc(crc, put("devices/0/events/" + name, ev[name], dt))
            for grp, cols in (("segments", _SEG_COLS), ("blocks", _BLOCK_COLS)):
                for name, dt in cols:
                    put("devices/0/%s/%s" % (grp, name), [], dt)
            f["devices/0"].attrs["device"] = np.int64(0)
            crc = zlib.crc32(struct.pack("<i", 0), crc)
            f["devices/0/events"].attrs["action_names"] = np.string_(ACTION_NAMES)
            f["devices/0/blocks"].attrs["state_names"] = np.string_("active_allocated,active_pending_free,inactive")
            f["devices/0/segments"].attrs["pool_names"] = np.string_("small,large,unknown")
            # the record group
            for name, dt in REC_EVENT_COLS:
                crc = _crc(crc, put("record/events/" + name, recev[name], dt))
            for name, dt in REC_MARK_COLS:
                crc = _crc(crc, put("record/marks/" + name, marks[name], dt))
            for name, dt in REC_MODULE_COLS:
                crc = _crc(crc, put("record/modules/" + name, mods[name], dt))
            f["record/marks"].attrs["kind_names"] = np.string_(",".join(MARK_KINDS))
            f["record/events"].attrs["phase_names"] = np.string_(",".join(PHASES))
            for k in REC_STR_ATTRS:
                f["record"].attrs[k] = np.string_(rec_str[k].encode())
                crc = zlib.crc32(rec_str[k].encode() + b"\0", crc)
            for k in REC_INT_ATTRS:
                f["record"].attrs[k] = np.int64(rec_int[k])
                crc = zlib.crc32(struct.pack("<q", int(rec_int[k])), crc)
            for k in ("source", "source_file", "allocator_settings", "allocator_config", "notes", "format"):
                f.attrs[k] = np.string_(str_attrs[k].encode())
                crc = zlib.crc32(str_attrs[k].encode() + b"\0", crc)
            f.attrs["external_schema_version"] = np.int64(EXT_VERSION)
            f.attrs["n_devices"] = np.int64(1)
            f.attrs["settings_recorded"] = np.int64(0)
            crc = zlib.crc32(struct.pack("<qqq", EXT_VERSION, 1, 0), crc)
            f.attrs["content_crc32"] = np.int64(crc)


# ---- python3 -m remat_torch record --------------------------------------------------

def main(argv=None) -> int:
    """python3 -m remat_torch record --factory PKG.MOD:FN [--kwargs JSON] --model M.json --out step.h5 ..."""
    import argparse
    import json
    import sys
    ap = argparse.ArgumentParser(prog="python3 -m remat_torch record",
                                 description="Record real training steps of a module (CPU) as a remat trace: "
                                             "every tensor storage allocation and free, marked with module, phase, "
                                             "time step and what autograd saved. Then: remat simulate --trace OUT "
                                             "--plan P.")
    from remat_torch import cli_common
    cli_common.add_factory_args(ap)
    ap.add_argument("--model", help="the module's remat model file (python3 -m remat_torch import); default: "
                                    "imported here with --input-shape, --T, --N")
    ap.add_argument("--input-shape", type=cli_common.shape_arg, help="C,H,W or F (without --model)")
    ap.add_argument("--T", type=int, help="time steps (default: the model file's)")
    ap.add_argument("--N", type=int, help="batch size (default: the model file's)")
    ap.add_argument("--loss", default=None, help="rate_mse or rate_ce (default: the model file's)")
    ap.add_argument("--optimizer", default="sgd", help="sgd (lr 0.1, momentum 0.9), adam or none")
    ap.add_argument("--plan", help="record the step under this plan (remat_torch.apply_plan): the measurement "
                                   "to compare remat simulate's prediction with")
    ap.add_argument("--steps", type=int, default=2, help="training steps to record (default 2; the last is predicted)")
    ap.add_argument("--chunks", default=None, help="time-chunk counts k to record a chunk probe for (for plans with "
                                                   "/k), comma-separated, or none (default: every divisor of T above 1)")
    ap.add_argument("--out", required=True, help="the trace to write (HDF5)")
    ap.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    a = ap.parse_args(argv)
    try:
        net = cli_common.build(a)
        torch.manual_seed(a.seed)
        if a.model:
            with open(a.model, "r", encoding="utf-8") as fh:
                model = json.load(fh)
        else:
            if not (a.input_shape and a.T and a.N):
                raise ValueError("--model, or --input-shape, --T and --N, expected")
            from remat_torch.importer import to_model
            model = to_model(net, a.input_shape, a.T, a.N)
        T, N = a.T or int(model["T"]), a.N or int(model["N"])
        shape = [int(v) for v in model["input"]["shape"]]
        if model["input"].get("kind") == "spikes":
            x = (torch.rand([T, N] + shape) < float(model["input"].get("rate", 0.3))).float()
        else:
            x = torch.rand([T, N] + shape)
        labels = torch.randint(0, int(model["classes"]), (N,))
        run = net
        if a.plan:
            from remat_torch import apply_plan
            run = apply_plan(net, model, a.plan)
        if a.optimizer == "none":
            opt = None
        elif a.optimizer == "sgd":
            opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        elif a.optimizer == "adam":
            opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        else:
            raise ValueError("--optimizer: expected sgd, adam or none, got %r" % a.optimizer)
        chunks = None
        if a.chunks is not None:
            try:
                chunks = [] if a.chunks == "none" else [int(v) for v in a.chunks.split(",")]
            except ValueError:
                raise ValueError("--chunks: expected divisors of T, comma-separated, or none, got %r" % a.chunks)
        s = record(run, x, labels, out=a.out, steps=a.steps, loss=a.loss or model.get("loss", "rate_mse"),
                   optimizer=opt, model=model, chunks=chunks)
    except (ValueError, OSError, KeyError) as e:
        return cli_common.fail("record", e)
    if a.json:
        print(json.dumps(s))
    else:
        print("recorded %d steps of %s (%s), %d events: %s" % (len(s["steps"]), model.get("name", "?"),
                                                              s["execution"], s["events"], a.out))
        for st in s["steps"]:
            print("  step %d: peak live %d B (live at its start %d B)" % (st["step"], st["peak_live_bytes"],
                                                                       st["live_at_start"]))
        print("next: remat simulate --trace %s --plan PLAN" % a.out)
    return 0


# `remat_torch.record` names both this module (once imported, the package attribute is the
# module) and the function (interfaces.md: remat_torch.record(net, x, labels, ...)): calling
# the module calls the function, so both spellings work whichever was imported first.
class _CallableModule(sys.modules[__name__].__class__):
    def __call__(self, *args, **kwargs):
        return record(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
