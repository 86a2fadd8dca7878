"""What the order of a placement costs on one device (issue 31): one
`opplace.torch run` job on 2 ranks x 1 thread traces a placement's median
step; its ops, in the order they started on either rank, become a one-device
placement; a second job runs the model's single-device placement (program
order) and that one interleaved; a third traces the one-device placement
alone.  The traced jobs also measure the op times in program order
(`--measure`, between their steps).  Prints both steps and, per op type,
the ops' measured times in the traced order against their program-order
times, and in the 2-rank trace split by how much of each op overlapped the
other rank's compute.

usage: .venv/bin/python bench/order_effect.py MODEL PLACEMENT ONE_DEVICE_PLACEMENT GRAPH CLUSTER
       [--out DIR] [--steps N]
   e.g. (after bash bench/fidelity_real.sh, whose files it reads)
       .venv/bin/python bench/order_effect.py gnmt bench/out/fidelity_real/gnmt.heft.executed.json \
           bench/out/fidelity_real/gnmt.single.json bench/out/fidelity_real/gnmt.json \
           bench/out/fidelity_real/gnmt.cluster.json
"""
import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)


def run(model, graph, cluster, placements, steps, extra):
    from fidelity_models import MODELS
    from fidelity_real import env
    factory, inputs = MODELS[model]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
           "--standalone", "-m", "opplace.torch", "run", factory,
           *[x for i in inputs for x in ("--input", i)], "--graph", graph, "--cluster", cluster,
           "--threads", "1", "--steps", str(steps), "--warmup", "2",
           *[x for p in placements for x in ("--placement", p)], *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env())
    if r.returncode:
        sys.exit("order_effect: %s failed:\n%s" % (" ".join(cmd), r.stderr[-3000:]))


def op_events(trace):
    """[(start, end, op, rank)] of a run --trace file's ops."""
    return [(e["ts"], e["ts"] + e["dur"], e["name"], e["tid"])
            for e in json.load(open(trace))["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") == "Op"]


def by_type(rows, graph):
    """{(type, label): [measured, graph time, count]} of (op, dur, label) rows."""
    ops = {o["name"]: o for o in json.load(open(graph))["ops"]}
    out = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for op, dur, label in rows:
        t = ops[op]["time_us"]
        a = out[(ops[op].get("type", "?"), label)]
        a[0] += dur
        a[1] += t["cpu"] if isinstance(t, dict) else t
        a[2] += 1
    return out


def show(title, agg):
    print(title)
    for (typ, label), (m, g, n) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        if g >= 1000:
            print("  %-16s %-12s %4d ops  measured %8.1f ms  program order %8.1f ms  %.2fx"
                  % (typ, label, n, m / 1e3, g / 1e3, m / g))


def main():
    ap = argparse.ArgumentParser()
    for k in ("model", "placement", "one_device", "graph", "cluster"):
        ap.add_argument(k)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "order_effect"))
    ap.add_argument("--steps", type=int, default=10)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    # each trace is compared with the op times its own job measured: the
    # machine's speed moves by 10-20 % between processes (RESULTS)
    trace, placed_insitu = (os.path.join(a.out, "placed.trace.json"),
                            os.path.join(a.out, "placed.insitu"))
    run(a.model, a.graph, a.cluster, [a.placement], a.steps,
        ["--trace", trace, "--measure", placed_insitu])
    ev = sorted(op_events(trace))
    p = json.load(open(a.placement))
    order = [op for _, _, op, _ in ev if op in p["device_of"]]
    if len(order) != len(p["device_of"]):
        sys.exit("order_effect: the trace has %d of the placement's %d ops"
                 % (len(order), len(p["device_of"])))
    dev = json.load(open(a.cluster))["devices"][0]["name"]
    on_one = os.path.join(a.out, "on_one.json")
    json.dump(dict({k: p[k] for k in ("format", "version", "graph") if k in p},
                   device_of={op: dev for op in order}, order={dev: order}), open(on_one, "w"))
    res = os.path.join(a.out, "one.run.json")
    one_trace, one_insitu = (os.path.join(a.out, "on_one.trace.json"),
                             os.path.join(a.out, "on_one.insitu"))
    run(a.model, a.graph, a.cluster, [a.one_device, on_one], a.steps, ["--json", res])
    run(a.model, a.graph, a.cluster, [on_one], a.steps,
        ["--trace", one_trace, "--measure", one_insitu])
    steps = [r["measured_step_us"] / 1e3 for r in json.load(open(res))["runs"]]
    print("%s, one device: program order %.1f ms, %s's order %.1f ms (%.2fx), interleaved"
          % (a.model, steps[0], os.path.basename(a.placement), steps[1], steps[1] / steps[0]))
    show("one device in the placement's order, per op type:",
         by_type([(op, e - s, "") for s, e, op, _ in op_events(one_trace)],
                 os.path.join(one_insitu, "graph.json")))

    def overlap(s, e, r):
        return sum(max(0.0, min(e, e2) - max(s, s2)) for s2, e2, _, r2 in ev if r2 != r)
    rows = []
    for s, e, op, r in ev:
        f = overlap(s, e, r) / (e - s) if e > s else 0.0
        rows.append((op, e - s, "overlap>75%" if f > 0.75 else "overlap<25%" if f < 0.25
                     else "overlap mid"))
    show("2 ranks, per op type and overlap with the other rank's compute:",
         by_type(rows, os.path.join(placed_insitu, "graph.json")))


if __name__ == "__main__":
    main()
