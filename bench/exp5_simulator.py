#!/usr/bin/env python3
"""exp5_simulator.py - how fast the simulator is.

  python3 bench/exp5_simulator.py [--quick] [--repeats R]

1. The benchmark binaries (their own sources say what they time); this script builds
   them with Bazel, runs them and keeps their JSON:
   - bench/replay_bench: replay throughput (events/s) per allocator model on a trace of
     10M+ events;
   - bench/sim_bench --blocks 100,200 --repeats 1 (--quick: 100 only): plans evaluated
     per second and `search --budget` time on generated chains of 100 and 200 blocks.
2. From the command line, end to end (process start and trace reading included), on
   each shipped model: `remat simulate` of its shipped plan (wall time, median of R) and
   `remat search --budget` at 60 % of the baseline peak (simulations and seconds as the
   search reports them, hence plans evaluated per second).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import common as C  # noqa: E402


def bench_binary(target, args, commands):
    """Builds and runs //bench:<target> if bench/BUILD declares it; returns its output."""
    with open(os.path.join(C.ROOT, "bench", "BUILD")) as f:
        if ('name = "%s"' % target) not in f.read():
            return {"target": target, "status": "not declared in bench/BUILD"}
    try:
        C.run(C.bazel_cmd() + ["build", "//bench:" + target], timeout=1800)
        binp = C.bench_bin(target)
        cmd = [binp] + args
        rc, out, err, wall = C.run(cmd, timeout=1200)
    except (RuntimeError, OSError) as e:
        return {"target": target, "status": "failed: %s" % str(e)[-600:]}
    commands.append(" ".join(["bazel-bin/bench/" + target] + args))
    res = {"target": target, "status": "ok", "wall_s": wall, "stdout": out}
    try:
        res["json"] = json.loads(out)
    except ValueError:
        lines = [l for l in out.splitlines() if l.strip().startswith("{")]
        if lines:
            try:
                res["json"] = json.loads(lines[-1])
            except ValueError:
                pass
    return res


def main():
    quick = C.arg_quick()
    repeats = C.arg_int("--repeats", 3)
    commands = []
    blocks = "100" if quick else "100,200"
    binaries = [bench_binary("replay_bench", ["--json"], commands),
                bench_binary("sim_bench", ["--blocks", blocks, "--repeats", "1", "--json"], commands)]
    for b in binaries:
        print("%s: %s (%.1f s)" % (b["target"], b["status"], b.get("wall_s", 0)), flush=True)
    shipped = []
    for name in ("mlp-lif", "3block-if", "resnet-bn"):
        model = os.path.join(C.ROOT, "data/models/%s.json" % name)
        plan = os.path.join(C.ROOT, "data/plans/%s-ckpt.json" % name)
        trace = os.path.join(C.WORK, "%s-exp5-base.h5" % name)
        os.makedirs(C.WORK, exist_ok=True)
        cmd = ["run", "--model", model, "--iters", 2, "--trace", trace]
        base = C.remat(*cmd)
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        cmd = ["simulate", "--trace", trace, "--plan", plan]
        sims = [C.remat(*cmd) for _ in range(repeats)]
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        budget = int(0.6 * base["peak_live_bytes"])
        cmd = ["search", "--trace", trace, "--budget-on", "live", "--device-overhead", "0", "--budget", "%dB" % budget]
        srs = [C.remat(*cmd, ok=(0, 1)) for _ in range(repeats)]
        commands.append(C.show([C.remat_bin()] + cmd + ["--json"]))
        s = srs[-1]["search"]
        row = {"model": name, "trace_events": sims[0].get("trace_events"),
               "simulate_wall_s": C.stats([x["_wall_s"] for x in sims]),
               "search_budget_bytes": budget, "search_fits": srs[-1].get("fits"),
               "search_seconds": C.stats([x["search"]["seconds"] for x in srs]),
               "search_wall_s": C.stats([x["_wall_s"] for x in srs]),
               "simulations": s["simulations"], "options": s["options"],
               "plans_per_s": s["simulations"] / C.med([x["search"]["seconds"] for x in srs])}
        shipped.append(row)
        print("%-10s simulate %.3f s; search --budget 60%%: %d simulations in %.3f s (%.0f plans/s), %d options" % (
            name, row["simulate_wall_s"]["median"], row["simulations"], row["search_seconds"]["median"],
            row["plans_per_s"], row["options"]), flush=True)
    C.save("exp5_simulator", {"input_grad": True,
        "title": "Simulator speed",
        "command": "python3 bench/exp5_simulator.py" + (" --quick" if quick else "") + " --repeats %d" % repeats,
        "repeats": repeats, "commands": commands, "binaries": binaries, "shipped": shipped},
        shipped)


if __name__ == "__main__":
    main()
