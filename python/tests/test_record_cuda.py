"""test_record_cuda.py - remat_torch.record's CUDA event source, tested on the CPU.

The GPU path itself needs a GPU and PyTorch 2.0 or later (neither is on the test machine);
what is tested here: the snapshot-to-stream conversion (``record.snapshot_events``) on a
snapshot synthesised from a real CPU recording's own stream (the marks must come out at
the same places), on hand-made traces (late frees, frees of older blocks, a full ring
buffer, bad shapes), on a real PyTorch snapshot from ../shared/fixtures/torch-snapshots
(skipped with the reason when absent), and the refusals of record() on a CUDA input.
Run by tests/torch_record_test.sh.
"""
import inspect
import io
import os
import pickle
import unittest
from unittest import mock

import torch
import torch.nn as nn

from remat_torch import record as R

FIXTURE = None
for _d in (os.environ.get("REMAT_SHARED", ""), os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "..", "..", "shared")):
    _p = os.path.join(_d, "fixtures", "torch-snapshots", "cs336-memory_snapshot.pickle") if _d else ""
    if _p and os.path.exists(_p):
        FIXTURE = _p
        break


class _NoGlobals(pickle.Unpickler):
    """Reads a pickle of plain containers only (the snapshots are pickles: refuse any global)."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError("refused global %s.%s" % (module, name))


def cpu_recording():
    """(stream, mark rows, module names) of one small training step recorded on the CPU."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.rand(3, 8)
    marks = R._Marks()
    hooks = R._Hooks(net, marks)
    src = R._event_source(x.device)
    try:
        with src:
            with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
                marks.step = 0
                marks.mark(R.K_STEP_BEGIN)
                marks.mark(R.K_PHASE, R.P_FORWARD)
                y = net(x)
                marks.mark(R.K_PHASE, R.P_BACKWARD)
                y.sum().backward()
                del y
                marks.mark(R.K_STEP_END)
            marks.enabled = False
    finally:
        hooks.remove()
    return src.events(), marks.rows, hooks.names


def to_snapshot(stream, segment=2 << 20):
    """The snapshot a caching allocator's trace of that stream would give (2.1's layout)."""
    tr = [{"action": "segment_alloc", "addr": 1 << 40, "size": segment, "stream": 0}]
    for ptr, size, _total, tns in stream:
        t = tns // 1000
        if size > 0:
            tr.append({"action": "alloc", "addr": ptr, "size": size, "stream": 0, "time_us": t})
        else:
            tr.append({"action": "free_requested", "addr": ptr, "size": -size, "stream": 0, "time_us": t})
            tr.append({"action": "free_completed", "addr": ptr, "size": -size, "stream": 0, "time_us": t})
    tr.append({"action": "segment_free", "addr": 1 << 40, "size": segment, "stream": 0})
    return {"segments": [], "device_traces": [tr]}


class SnapshotEventsTest(unittest.TestCase):
    def test_synthesised_snapshot_gives_the_cpu_stream_and_marks(self):
        stream, rows, names = cpu_recording()
        self.assertGreater(len(rows), 5)
        got, notes = R.snapshot_events(to_snapshot(stream), 0)
        self.assertEqual([(a, s) for a, s, _, _ in got], [(a, s) for a, s, _, _ in stream])
        self.assertTrue(any("2097152 B reserved" in n for n in notes), notes)
        a = R._assemble(stream, rows, names, None, {})
        b = R._assemble(got, rows, names, None, {})
        for k in ("mk_kind", "mk_event", "mk_storage", "ev_size", "ev_storage", "ev_module", "ev_phase"):
            self.assertEqual(a[k], b[k], k)
        self.assertEqual(a["step_summary"][0]["peak_live_bytes"], b["step_summary"][0]["peak_live_bytes"])

    def test_frees_pair_with_their_allocation(self):
        tr = [{"action": "alloc", "addr": 100, "size": 24},
              {"action": "alloc", "addr": 200, "size": 512},
              {"action": "free_requested", "addr": 100, "size": 512},  # the block's bytes: the alloc's count
              {"action": "alloc", "addr": 300, "size": 8},
              {"action": "free_completed", "addr": 100, "size": 512},  # completed late (another stream)
              {"action": "free_requested", "addr": 900, "size": 64},  # allocated before the trace
              {"action": "segment_map", "addr": 0, "size": 0},
              {"action": "free_requested", "addr": 200, "size": 512},
              {"action": "free_completed", "addr": 200, "size": 512}]
        got, notes = R.snapshot_events({"device_traces": [[], tr]}, 1)
        self.assertEqual([(a, s, t) for a, s, t, _ in got],
                         [(100, 24, 24), (200, 512, 536), (100, -24, 512), (300, 8, 520), (900, -64, 456),
                          (200, -512, -56)])
        self.assertTrue(any(n.startswith("1 frees completed after") for n in notes), notes)
        self.assertTrue(any(n.startswith("1 trace frees of blocks allocated before") for n in notes), notes)

    def test_refusals_name_the_field(self):
        with self.assertRaisesRegex(ValueError, r"snapshot: device_traces: expected a list"):
            R.snapshot_events([{"blocks": []}], 0)  # torch 1.13's snapshot: a list of segments
        with self.assertRaisesRegex(ValueError, r"device_traces\[2\]: expected a list .*\(1 devices\)"):
            R.snapshot_events({"device_traces": [[]]}, 2)
        with self.assertRaisesRegex(ValueError, r"device_traces\[0\]\[1\]: expected a dict with action, addr"):
            R.snapshot_events({"device_traces": [[{"action": "alloc", "addr": 1, "size": 2}, {"action": "alloc"}]]}, 0)
        full = [{"action": "alloc", "addr": i, "size": 1} for i in range(4)]
        with self.assertRaisesRegex(ValueError, r"ring buffer is full"):
            R.snapshot_events({"device_traces": [full]}, 0, max_entries=4)

    @unittest.skipIf(FIXTURE is None, "SKIP (visible): ../shared/fixtures/torch-snapshots absent")
    def test_real_snapshot(self):
        with open(FIXTURE, "rb") as fh:
            snap = _NoGlobals(io.BytesIO(fh.read())).load()
        trace = snap["device_traces"][0]
        got, notes = R.snapshot_events(snap, 0)
        n_alloc = sum(1 for e in trace if e["action"] == "alloc")
        n_free = sum(1 for e in trace if e["action"] == "free_requested")
        self.assertEqual(sum(1 for r in got if r[1] > 0), n_alloc)
        self.assertEqual(sum(1 for r in got if r[1] < 0), n_free)
        # this window frees two blocks allocated before it (a 327,680,000 B one and a 4 B one) and ends with
        # two of its own allocations live; every other free pairs with its allocation, at its bytes
        self.assertIn("2 trace frees of blocks allocated before the trace started", notes)
        self.assertEqual(got[-1][2], sum(e["size"] for e in trace if e["action"] == "alloc")
                         - sum(e["size"] for e in trace if e["action"] == "free_requested"))
        live, older = {}, []
        for a, s, _, _ in got:
            if s > 0:
                self.assertNotIn(a, live)
                live[a] = s
            elif a in live:
                self.assertEqual(live.pop(a), -s)
            else:
                older.append(-s)
        self.assertEqual(sorted(older), [4, 327680000])
        self.assertEqual(len(live), 2)


class CudaRefusalTest(unittest.TestCase):
    @unittest.skipIf(torch.cuda.is_available(), "CUDA is available here: the refusal is not reachable")
    def test_no_cuda(self):
        with self.assertRaisesRegex(ValueError, r"record: x: a CUDA tensor, but CUDA is not available"):
            R._event_source(torch.device("cuda"))

    @unittest.skipIf(hasattr(torch.cuda.memory, "_record_memory_history_legacy")
                     or "trace_alloc_max_entries" in inspect.signature(torch.cuda.memory._record_memory_history).parameters,
                     "this torch has the allocation trace")
    def test_torch_without_trace(self):
        with mock.patch.object(torch.cuda, "is_available", return_value=True):
            with self.assertRaisesRegex(ValueError, r"has no allocation trace .* needs PyTorch 2.0 or later"):
                R._event_source(torch.device("cuda", 0))

    def test_other_devices(self):
        net = nn.Sequential(nn.Linear(8, 4))
        x = torch.empty(2, 3, 8, device="meta")
        with self.assertRaisesRegex(ValueError, r"record: x: expected a CPU or CUDA tensor, got one on meta"):
            R.record(net, x, torch.zeros(3, dtype=torch.long), out=None, classes=4)


if __name__ == "__main__":
    unittest.main()
