#!/usr/bin/env python3
"""trace_peak.py - what is live at the peak of a remat trace (reads HDF5 with h5dump).

  python3 bench/trace_peak.py TRACE.h5 [--iter I] [--top K]

Replays the allocation events of the trace (docs/trace-schema.md: /events/kind, bytes,
role, phase, layer, tensor, iter) and prints, at the largest live total within step I
(default: the last step), every live tensor with its bytes, role, layer and the phase
that allocated it. Used by docs/benchmarks.md to explain where a peak comes from.
"""
import subprocess
import sys

FIELDS = ["kind", "bytes", "role", "phase", "layer", "iter", "tensor"]


def column(path, name):
    out = subprocess.run(["h5dump", "-w", "0", "-d", "/events/" + name, path], capture_output=True, text=True,
                         check=True).stdout
    vals, inside = [], False
    for line in out.splitlines():
        if line.startswith("   DATA {"):
            inside = True
            continue
        if inside and line.startswith("   }"):
            break
        if inside and "(" in line:
            vals += [int(v) for v in line.split(":", 1)[1].replace(" ", "").split(",") if v]
    return vals


def names(path, attr):
    out = subprocess.run(["h5dump", "-a", attr, path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "(0):" in line:
            return line.split("(0):", 1)[1].strip().strip('"').split(",")
    return []


def peak(path, it=None):
    ev = {f: column(path, f) for f in FIELDS}
    roles = names(path, "/events/role_names")
    phases = names(path, "/events/phase_names")
    if it is None:
        it = max(ev["iter"])
    live, best, snap, at = 0, -1, {}, -1
    alive = {}
    for i in range(len(ev["kind"])):
        b = ev["bytes"][i]
        if ev["kind"][i] == 0:
            live += b
            alive[ev["tensor"][i]] = (b, ev["role"][i], ev["layer"][i], ev["phase"][i])
        else:
            live -= b
            alive.pop(ev["tensor"][i], None)
        if ev["iter"][i] == it and live > best:
            best, snap, at = live, dict(alive), i
    rn = lambda r: roles[r] if 0 <= r < len(roles) else str(r)  # noqa: E731
    pn = lambda p: phases[p] if 0 <= p < len(phases) else str(p)  # noqa: E731
    tensors = [{"tensor": t, "bytes": b, "role": rn(r), "layer": l, "phase": pn(p)} for t, (b, r, l, p) in
               sorted(snap.items(), key=lambda x: -x[1][0])]
    return {"peak_bytes": best, "event": at, "phase": pn(ev["phase"][at]), "layer": ev["layer"][at],
            "tensors": tensors}


def main():
    if len(sys.argv) < 2 or "-h" in sys.argv or "--help" in sys.argv:
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    path = sys.argv[1]
    it = int(sys.argv[sys.argv.index("--iter") + 1]) if "--iter" in sys.argv else None
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 12
    p = peak(path, it)
    print("peak %d B (%.2f MiB) at event %d, phase %s, layer %d" % (p["peak_bytes"], p["peak_bytes"] / 1048576,
                                                                    p["event"], p["phase"], p["layer"]))
    for t in p["tensors"][:top]:
        print("  tensor %4d %10.2f MiB  %-12s layer %3d  allocated in %s" % (
            t["tensor"], t["bytes"] / 1048576, t["role"], t["layer"], t["phase"]))


if __name__ == "__main__":
    main()
