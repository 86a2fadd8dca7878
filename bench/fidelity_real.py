"""Real runs against the simulator (issue 31): on this machine, 2 ranks x 1
thread under torchrun, a cluster calibrated by `opplace.torch calibrate`,
each model exported with op times measured on one CPU thread, placed by
every fast placer and auto, and run for real by `opplace.torch run`.

Per model and placement: the simulated step of the schedule the run
executed (with the calibrated cluster, and without its links' host costs,
the simulator's model before rule 5.9), the measured step (median of the
timed steps, every rank starting each step at one instant) and the error;
per model the Spearman rank correlation of simulated and measured steps
over the distinct placements; and whether every placement simulated >= 20 %
faster than one device was measured faster than one device.

usage: python bench/fidelity_real.py [--models a,b] [--placers a,b]
           [--steps N] [--warmup N] [--out DIR]   (bench/fidelity_real.sh)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
PLACERS = ["single", "expert", "round-robin", "m-topo", "m-etf", "m-sct", "heft", "metis",
           "celeritas", "order-place", "dfs-topo", "auto"]


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-3000:]))
    return r.stdout


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), HERE] +
                                      ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e["OMP_NUM_THREADS"] = "1"
    return e


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2.0
            i = j + 1
        return r
    if len(xs) < 2:
        return float("nan")
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else float("nan")


def main():
    from fidelity_models import MODELS
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--placers", default=",".join(PLACERS))
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "fidelity_real"))
    ap.add_argument("--opplace", default=os.environ.get("OPPLACE",
                                                        os.path.join(ROOT, "build", "opplace")))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--cluster", help="a calibrated cluster to use for every model instead of "
                    "calibrating (by default each model's: calibrate --model)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    opp, py = a.opplace, a.python
    torchrun = [py, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone"]
    say = lambda m: print("fidelity_real: " + m, file=sys.stderr, flush=True)  # noqa: E731
    rows = []
    for name in a.models.split(","):
        factory, inputs = MODELS[name]
        ins = [x for i in inputs for x in ("--input", i)]
        c = a.cluster or os.path.join(a.out, name + ".cluster.json")
        if not a.cluster:
            say("%s: calibrating 2 ranks x 1 thread, shared compute with its own step" % name)
            sh(torchrun + ["-m", "opplace.torch", "calibrate", "--threads", "1", "--model",
                           factory, *ins, "-o", c], env=env())
        c0, cs = ablations(c, os.path.join(a.out, name))
        g = os.path.join(a.out, name + ".json")
        say("%s: export, op times measured on 1 thread" % name)
        sh([py, "-m", "opplace.torch", "export", factory, *ins, "--times", "measure",
            "--threads", "1", "--repeat", "5", "-o", g], env=env())
        seen = {}
        for algo in a.placers.split(","):
            p = os.path.join(a.out, "%s.%s.json" % (name, algo))
            extra = ["--budget-seconds", "5"] if algo == "auto" else []
            try:
                sh([opp, "place", g, "--cluster", c, "--algo", algo, "-o", p, "--quiet", *extra])
            except RuntimeError as e:
                say("%s %s: %s" % (name, algo, str(e).splitlines()[-1]))
                continue
            pd = json.load(open(p))
            key = json.dumps([pd["device_of"], pd.get("order")], sort_keys=True)
            if key in seen:
                seen[key]["placers"].append(algo)
                continue
            r = os.path.join(a.out, "%s.%s.run.json" % (name, algo))
            t0 = time.time()
            sh(torchrun + ["-m", "opplace.torch", "run", factory, *ins, "--graph", g,
                           "--placement", p, "--cluster", c, "--threads", "1",
                           "--steps", str(a.steps), "--warmup", str(a.warmup), "--json", r],
               env=env(), timeout=1800)
            res = json.load(open(r))
            executed = os.path.join(a.out, "%s.%s.executed.json" % (name, algo))
            json.dump(dict(pd, order=res["executed_order"]), open(executed, "w"))
            sim0, sims = (json.loads(sh([opp, "simulate", g, "--placement", executed,
                                         "--cluster", cx, "--json"]))["step_time_us"]
                          for cx in (c0, cs))
            row = {"model": name, "placers": [algo], "devices": len(set(pd["device_of"].values())),
                   "simulated_us": res["simulated_step_us"], "simulated_nohost_us": sim0,
                   "simulated_noshared_us": sims,
                   "measured_us": res["measured_step_us"], "steps_us": res["steps_us"],
                   "order": res["order"], "breakdown": res.get("breakdown", [])}
            seen[key] = row
            rows.append(row)
            say("%s %-12s simulated %9.0f us (no host cost %9.0f)  measured %9.0f us  (%.0f s)"
                % (name, algo, row["simulated_us"], sim0, row["measured_us"], time.time() - t0))
    res = os.path.join(a.out, "results.json")
    done = {r["model"] for r in rows}
    if os.path.exists(res):  # the other models' rows of an earlier run stay
        rows = [r for r in json.load(open(res))
                if r["model"] not in done and "simulated_noshared_us" in r] + rows
    json.dump(rows, open(res, "w"), indent=1)
    report(rows, a)


def ablations(c, stem):
    """The cluster c without its links' host costs (rule 5.9) and without
    its shared compute (rule 5.8): (path, path)."""
    doc = json.load(open(c))
    keys = ("send_us", "send_us_per_byte", "recv_us", "recv_us_per_byte")
    nohost = dict(doc, links=[{k: v for k, v in l.items() if k not in keys}
                              for l in doc.get("links", [])])
    noshared = {k: v for k, v in doc.items() if k != "shared"}
    out = (stem + ".cluster_nohost.json", stem + ".cluster_noshared.json")
    for path, d in zip(out, (nohost, noshared)):
        with open(path, "w") as f:
            json.dump(d, f)
    return out


def err(r, key="simulated_us"):
    return (r[key] - r["measured_us"]) / r["measured_us"]


def report(rows, a):
    variants = (("simulated_us", "all rules"), ("simulated_nohost_us", "without host costs (5.9)"),
                ("simulated_noshared_us", "without shared compute (5.8)"))
    print("| model | placers | devices | measured (ms) | simulated (ms) | error | %s |"
          % " | ".join("%s: error" % v for _, v in variants[1:]))
    print("|---|---|---:|---:|---:|---:|%s" % ("---:|" * (len(variants) - 1)))
    for r in rows:
        print("| %s | %s | %d | %.1f | %.1f | %+.1f %% | %s |" % (
            r["model"], ", ".join(r["placers"]), r["devices"], r["measured_us"] / 1e3,
            r["simulated_us"] / 1e3, 100 * err(r),
            " | ".join("%.1f: %+.1f %%" % (r[k] / 1e3, 100 * err(r, k)) for k, _ in variants[1:])))
    print()
    print("| model | one device: simulated / measured (ms) | Spearman | %s | simulated >= 20 %% "
          "faster than one device: measured faster? |"
          % " | ".join("Spearman %s" % v for _, v in variants[1:]))
    print("|---|---|---:|%s---|" % ("---:|" * (len(variants) - 1)))
    for m in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == m]
        one = next((r for r in rs if "single" in r["placers"]), None)
        promise = []
        if one:
            for r in rs:
                if r is not one and r["simulated_us"] <= 0.8 * one["simulated_us"]:
                    promise.append("%s: %s" % ("/".join(r["placers"]),
                                               "yes" if r["measured_us"] < one["measured_us"]
                                               else "NO"))
        meas = [r["measured_us"] for r in rs]
        print("| %s | %s | %s | %s | %s |" % (
            m, "%.1f / %.1f" % (one["simulated_us"] / 1e3, one["measured_us"] / 1e3) if one
            else "-", "%.2f" % spearman([r["simulated_us"] for r in rs], meas),
            " | ".join("%.2f" % spearman([r[k] for r in rs], meas) for k, _ in variants[1:]),
            "; ".join(promise) or "none promised"))
    print()
    print("Where the time went in the last timed step of each placement off by more than 15 %"
          " (per rank: its ops measured / the graph's times for them, waits for receives, the"
          " rest: posting, sending, the loop; its idle time after its last op; ms):")
    print()
    for r in rows:
        if abs(err(r)) <= 0.15:
            continue
        parts = ["rank %d ops %.1f / %.1f, waits %.1f, rest %.1f, idle %.1f" % (
            b["rank"], b["ops_us"] / 1e3, b["graph_ops_us"] / 1e3, b["recv_wait_us"] / 1e3,
            b["other_us"] / 1e3, b.get("idle_us", 0) / 1e3) for b in r.get("breakdown", [])]
        print("* %s %s (%+.0f %%): %s" % (r["model"], "/".join(r["placers"]), 100 * err(r),
                                        "; ".join(parts)))
    print()
    for k, v in variants:
        e = [abs(err(r, k)) for r in rows]
        print("%s: median |error| %.1f %%, worst %.1f %%" % (v, 100 * statistics.median(e),
                                                            100 * max(e)))
    print("%d distinct placements of %d models" % (len(rows), len({r["model"] for r in rows})))


if __name__ == "__main__":
    main()
