#!/usr/bin/env python3
"""torch_snapshot_bench.py - how fast `remat import-torch`, `remat plot` and the allocator
check are on PyTorch memory snapshots, on a real one and on a large synthetic one.

  python3 bench/torch_snapshot_bench.py SNAPSHOT.pickle [--mb 500] [--remat bazel-bin/tools/remat]
                                        [--work /tmp/remat-torch-bench] [--repeats 3] [--out RESULT.json] [--reuse]

The synthetic snapshot repeats the real snapshot's trace (its iteration pattern: every
allocation of the window is freed in it, so the end state stays valid) until the pickle
reaches --mb megabytes, with times shifted per repeat. It is written the way Python's
pickler writes a snapshot (protocol 4, memoized strings and shared frame lists, a MEMOIZE
after every dict, APPENDS in batches of 1000), by a streaming writer here, so memory
stays small. The real snapshot is read with an Unpickler that refuses every global.
Timings: wall-clock and CPU (user + system of the child), each the best of --repeats;
on a shared machine the CPU time is the steadier measure. MB are 10^6 bytes.
The synthetic stream repeats recorded addresses that the real allocator would not have
chosen again (the pre-window blocks freed in the first repeat are free in the next), so
its allocator agreement says nothing about the model; it is there for the timings.
"""
import argparse
import json
import os
import pickle
import resource
import struct
import subprocess
import sys
import time


class PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


class Writer:
    """A streaming protocol-4 pickler for plain data, memoizing strings and shared objects."""

    def __init__(self, f):
        self.f = f
        self.buf = bytearray()
        self.memo = {}   # key -> memo index
        self.n = 0       # next memo index
        self.keep = []   # objects memoized by id stay alive

    def flush(self, force=False):
        if force or len(self.buf) > 1 << 20:
            self.f.write(self.buf)
            self.buf.clear()

    def memoize(self):
        self.buf.append(0x94)
        self.n += 1
        return self.n - 1

    def get(self, idx):
        self.buf += b"h" + bytes([idx]) if idx < 256 else b"j" + struct.pack("<I", idx)

    def dump(self, v, share=True):
        b = self.buf
        if v is None:
            b.append(0x4E)
        elif v is True:
            b.append(0x88)
        elif v is False:
            b.append(0x89)
        elif isinstance(v, int):
            if 0 <= v < 256:
                b += b"K" + bytes([v])
            elif 0 <= v < 65536:
                b += b"M" + struct.pack("<H", v)
            elif -2**31 <= v < 2**31:
                b += b"J" + struct.pack("<i", v)
            else:
                raw = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
                b += b"\x8a" + bytes([len(raw)]) + raw
        elif isinstance(v, float):
            b += b"G" + struct.pack(">d", v)
        elif isinstance(v, str):
            key = ("s", v)
            if key in self.memo:
                return self.get(self.memo[key])
            raw = v.encode()
            b += (b"\x8c" + bytes([len(raw)]) if len(raw) < 256 else b"X" + struct.pack("<I", len(raw))) + raw
            self.memo[key] = self.memoize()
        elif isinstance(v, (list, tuple, dict)):
            key = ("o", id(v))
            if share and key in self.memo:
                return self.get(self.memo[key])
            if isinstance(v, tuple):
                b.append(0x28)
                for x in v:
                    self.dump(x)
                b.append(0x74)
                return
            b.append(0x5D if isinstance(v, list) else 0x7D)
            idx = self.memoize()
            if share:
                self.memo[key] = idx
                self.keep.append(v)
            items = list(v.items()) if isinstance(v, dict) else list(v)
            for i in range(0, len(items), 1000):
                b.append(0x28)
                for x in items[i:i + 1000]:
                    if isinstance(v, dict):
                        self.dump(x[0])
                        self.dump(x[1])
                    else:
                        self.dump(x)
                b.append(0x75 if isinstance(v, dict) else 0x65)
                self.flush()
        else:
            raise TypeError(type(v))


def synthesize(snap, path, mb):
    trace = snap["device_traces"][0]
    span = trace[-1]["time_us"] - trace[0]["time_us"] + 1000
    with open(path, "wb") as f:
        w = Writer(f)
        w.buf += b"\x80\x04"
        w.buf.append(0x7D)
        w.memoize()
        w.buf.append(0x28)
        w.dump("segments")
        w.dump(snap["segments"])
        w.dump("device_traces")
        w.buf.append(0x5D)
        w.memoize()
        w.buf.append(0x5D)  # the device's list
        w.memoize()
        written, reps, entries = 0, 0, 0
        while written < mb * 1e6:
            batch = 0
            for e in trace:
                if batch == 0:
                    w.buf.append(0x28)
                d = dict(e)
                d["time_us"] = e["time_us"] + reps * span
                w.dump(d, share=False)  # a new dict each time, its strings and frame lists shared
                batch += 1
                entries += 1
                if batch == 1000:
                    w.buf.append(0x65)
                    batch = 0
                    w.flush()
            if batch:
                w.buf.append(0x65)
            reps += 1
            written = f.tell() + len(w.buf)
        w.buf.append(0x61)  # APPEND the device's list to device_traces
        for k in ("allocator_settings", "external_annotations"):
            if k in snap:
                w.dump(k)
                w.dump(snap[k])
        w.buf += b"u."
        w.flush(True)
    return reps, entries


def best_of(cmd, repeats):
    """Best wall time and best CPU time (user + system) over the repeats, and the output."""
    best, best_cpu, out = None, None, None
    for _ in range(repeats):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True)
        dt = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        if p.returncode not in (0, 1):
            sys.exit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip()}")
        if best is None or dt < best:
            best, out = dt, p.stdout
        if best_cpu is None or cpu < best_cpu:
            best_cpu = cpu
    return (best, best_cpu), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("snapshot")
    ap.add_argument("--mb", type=float, default=500)
    ap.add_argument("--remat", default="bazel-bin/tools/remat")
    ap.add_argument("--work", default="/tmp/remat-torch-bench")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--reuse", action="store_true", help="reuse WORK/synthetic.pickle when it is there")
    a = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import common  # the one sanitizer check of bench/
    common.refuse_sanitizer(a.remat)
    os.makedirs(a.work, exist_ok=True)
    with open(a.snapshot, "rb") as f:
        snap = PlainUnpickler(f).load()
    synth = os.path.join(a.work, "synthetic.pickle")
    t = time.perf_counter()
    if a.reuse and os.path.exists(synth):
        reps = entries = -1  # not regenerated: counts unknown here (the import prints the events)
    else:
        reps, entries = synthesize(snap, synth, a.mb)
    gen_s = time.perf_counter() - t
    res = {"snapshot": os.path.basename(a.snapshot), "synthetic_mb": os.path.getsize(synth) / 1e6,
           "synthetic_events": entries, "synthetic_repeats": reps, "generate_s": gen_s, "cpus": os.cpu_count()}
    for name, src in (("real", a.snapshot), ("synthetic", synth)):
        h5 = os.path.join(a.work, name + ".h5")
        mb = os.path.getsize(src) / 1e6
        (dt, cpu), _ = best_of([a.remat, "import-torch", src, "--out", h5, "--quiet"], a.repeats)
        res[name + "_import_s"], res[name + "_import_cpu_s"] = dt, cpu
        res[name + "_import_mb_per_s"] = mb / dt
        res[name + "_import_mb_per_cpu_s"] = mb / cpu if cpu > 0 else None
        (dt, cpu), _ = best_of([a.remat, "plot", "--trace", h5, "--out", os.path.join(a.work, name + ".png")],
                               a.repeats)
        res[name + "_plot_s"], res[name + "_plot_cpu_s"] = dt, cpu
        (dt, cpu), _ = best_of([a.remat, "plot", "--trace", h5, "--out", os.path.join(a.work, name + "-d.png"),
                                "--data-only"], a.repeats)
        res[name + "_plot_data_only_s"], res[name + "_plot_data_only_cpu_s"] = dt, cpu
        (dt, cpu), out = best_of([a.remat, "simulate", "--trace", h5, "--allocator", "caching", "--json"], a.repeats)
        dev = json.loads(out)["devices"][0]
        res[name + "_check_s"], res[name + "_check_cpu_s"] = dt, cpu
        res[name + "_allocations"] = dev["allocations"]
        res[name + "_placed_at_recorded_address"] = dev["placed_at_recorded_address"]
        res[name + "_reserved_end_exact"] = dev["reserved_end_predicted"] == dev["reserved_end_recorded"]
    print(json.dumps(res, indent=1))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
