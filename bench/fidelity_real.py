"""Real runs against the simulator (issue 31): on this machine, 2 ranks x 1
thread under torchrun, a cluster calibrated by `opplace.torch calibrate
--model`, each model exported with op times measured on one CPU thread and
placed by every fast placer and auto; then one `opplace.torch run` job runs
every distinct placement of the model, their steps interleaved round by
round, and measures the simulator's inputs between the rounds (`--measure`:
op times on one device, device speeds, the compute the ranks share).

Per model and placement: the measured step (median of the timed rounds,
every rank starting each step at one instant; at least --steps rounds,
and as many as fit in --seconds: short steps get more), the simulated
step of the schedule the run executed with those in-situ inputs, and
ablations: with export's op times and calibrate's cluster (taken minutes
before), with calibrate's shared compute, without the links' host costs
(rule 5.9), without shared compute (rule 5.8), and with rule 5.8's
all/alone fitted as `run --fit-shared` fits it (the run job's own fit to
all of a model's placements is in the table) to the model's other
placements and to the other models' runs.  Per model the Spearman rank
correlation of simulated and measured steps, the measurements' own (odd
rounds against even ones), the ranks' ops that ran beside another rank's
against those that ran alone (`run --json`'s ops_beside_us), and whether
every placement simulated >= 20 % faster than one device was measured
faster than one device.

Other machines (issue 31 item 6): `--ranks N --threads T` runs N cpu ranks
of T threads each; `--gpus G` makes the first G ranks GPUs (calibrate
--gpus), and each model is then exported once per device kind (`--times
measure --device cuda` for the GPU's times) and the times merged, e.g.
`--ranks 2 --gpus 1` (cuda:0 + a cpu rank) and `--ranks 4 --threads 4`.

usage: python bench/fidelity_real.py [--models a,b] [--placers a,b]
           [--steps N] [--seconds S] [--warmup N] [--ranks N] [--threads T] [--gpus G]
           [--out DIR] [--reuse] [--report-only]
       (bench/fidelity_real.sh)
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
sys.path.insert(0, os.path.join(ROOT, "python"))
PLACERS = ["single", "expert", "round-robin", "m-topo", "m-etf", "m-sct", "heft", "metis",
           "celeritas", "order-place", "dfs-topo", "auto"]


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-3000:]))
    return r.stdout


def simulated_us(opp, graph, placement, cluster):
    """opplace simulate's step for the placement (paths)."""
    from opplace.torch._measure import simulate
    return simulate(graph, placement, cluster, opp)["step_time_us"]


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
    from opplace.torch._run import executed_placement
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--placers", default=",".join(PLACERS))
    ap.add_argument("--steps", type=int, default=20,
                    help="timed rounds, at least (default 20)")
    ap.add_argument("--seconds", type=float, default=60.0,
                    help="timed seconds per model (default 60): as many rounds beyond --steps "
                    "as fit, so that a model of short steps gets as steady a median as one of "
                    "long steps; 0: --steps rounds")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=2, help="torchrun ranks (default 2)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per cpu rank (1)")
    ap.add_argument("--gpus", type=int, help="the first G ranks on GPUs (default: none)")
    ap.add_argument("--reuse", action="store_true",
                    help="keep --out's calibrated clusters, exported graphs and placements "
                    "where present: only the real runs again")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "fidelity_real"))
    ap.add_argument("--opplace", default=os.environ.get("OPPLACE",
                                                        os.path.join(ROOT, "build", "opplace")))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    ap.add_argument("--cluster", help="a calibrated cluster to use for every model instead of "
                    "calibrating (by default each model's: calibrate --model)")
    ap.add_argument("--report-only", action="store_true",
                    help="only the tables again, from --out's results.json (and the fits "
                    "it adds to it)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.report_only:
        rows = json.load(open(os.path.join(a.out, "results.json")))
        idle_paid(rows, a.opplace)
        fit_shared(rows, a.opplace, a.out)
        json.dump(rows, open(os.path.join(a.out, "results.json"), "w"), indent=1)  # its fits
        report(rows, a)
        return
    opp, py = a.opplace, a.python
    torchrun = [py, "-m", "torch.distributed.run", "--nproc-per-node", str(a.ranks),
                "--standalone"]
    threads = ["--threads", str(a.threads)]
    gpus = ["--gpus", str(a.gpus)] if a.gpus is not None else []
    say = lambda m: print("fidelity_real: " + m, file=sys.stderr, flush=True)  # noqa: E731
    rows = []
    for name in a.models.split(","):
        factory, inputs = MODELS[name]
        ins = [x for i in inputs for x in ("--input", i)]
        c = a.cluster or os.path.join(a.out, name + ".cluster.json")
        if not a.cluster and not (a.reuse and os.path.exists(c)):
            say("%s: calibrating %d ranks x %d thread(s), shared compute with its own step"
                % (name, a.ranks, a.threads))
            sh(torchrun + ["-m", "opplace.torch", "calibrate", *threads, *gpus, "--model",
                           factory, *ins, "-o", c], env=env())
        g = os.path.join(a.out, name + ".json")
        if not (a.reuse and os.path.exists(g)):
            from opplace.torch._run import cluster_kinds
            export(py, factory, ins, a.threads,
                   list(dict.fromkeys(cluster_kinds(c, a.ranks))), g, say)
        seen, distinct = {}, []
        for algo in a.placers.split(","):
            p = os.path.join(a.out, "%s.%s.json" % (name, algo))
            extra = ["--budget-seconds", "5"] if algo == "auto" else []
            try:
                if not (a.reuse and os.path.exists(p)):
                    sh([opp, "place", g, "--cluster", c, "--algo", algo, "-o", p, "--quiet",
                        *extra])
            except RuntimeError as e:
                say("%s %s: %s" % (name, algo, str(e).splitlines()[-1]))
                continue
            pd = json.load(open(p))
            key = identity(pd)
            if key in seen:
                seen[key]["placers"].append(algo)
                continue
            seen[key] = {"model": name, "placers": [algo], "path": p, "placement": pd,
                         "devices": len(set(pd["device_of"].values()))}
            distinct.append(seen[key])
        # one job runs every distinct placement, their steps interleaved round by
        # round, and measures the simulator's inputs between the rounds (op times
        # on one device, the compute the ranks share): the machine's speed moves
        # by 10-20 % within minutes (RESULTS), and each placement and the inputs
        # of its simulation then see the same machine
        r = os.path.join(a.out, name + ".run.json")
        insitu = os.path.join(a.out, name + ".insitu")
        fitted = os.path.join(a.out, name + ".fitted.json")
        t0 = time.time()
        n = rounds(distinct, a.ranks, a.steps, a.seconds)
        say("%s: running %d placements for real, interleaved, %d rounds"
            % (name, len(distinct), n))
        sh(torchrun + ["-m", "opplace.torch", "run", factory, *ins, "--graph", g,
                       *[x for d in distinct for x in ("--placement", d["path"])],
                       "--cluster", c, *threads, "--steps", str(n),
                       "--warmup", str(a.warmup), "--measure", insitu, "--fit-shared", fitted,
                       "--json", r],
           env=env(), timeout=3600)
        ig, ic = os.path.join(insitu, "graph.json"), os.path.join(insitu, "cluster.json")
        c0, cs = ablations(ic, os.path.join(a.out, name))
        runs = json.load(open(r))
        runs = runs["runs"] if "runs" in runs else [runs]
        for d, res in zip(distinct, runs):
            executed = os.path.join(a.out, "%s.%s.executed.json" % (name, d["placers"][0]))
            d.pop("placement")
            json.dump(executed_placement(res), open(executed, "w"))
            sim = {}
            for key, graph, cx in (("simulated_us", ig, ic), ("simulated_export_us", g, c),
                                   ("simulated_calibrated_shared_us", ig, c),
                                   ("simulated_nohost_us", ig, c0),
                                   ("simulated_noshared_us", ig, cs)):
                sim[key] = simulated_us(opp, graph, executed, cx)
            times = {o["name"]: o["time_us"] for o in json.load(open(ig))["ops"]}
            d["insitu_ops_us"] = [sum(times[o][dev["kind"]]
                                      for o in res["executed_order"].get(dev["name"], []))
                                  / dev.get("speed", 1.0) for dev in json.load(open(ic))["devices"]]
            d.update(sim, measured_us=res["measured_step_us"], steps_us=res["steps_us"],
                     losses=res["losses"], order=res["order"],
                     breakdown=res.get("breakdown", []),
                     beside=[sum(b.get(k, 0.0) for st in res.get("steps_breakdown", [])
                                 for b in st)
                             for k in ("ops_beside_us", "graph_ops_beside_us", "ops_us",
                                       "graph_ops_us")])
            d.pop("path")
            d.update(executed=executed, graph=ig, cluster=ic, fitted_cluster=fitted,
                     shared_fit=json.load(open(fitted))["calibration"]["shared_fit"][
                         "all_over_alone"])
            rows.append(d)
            say("%s %-12s simulated %9.0f us (export's op times %9.0f)  measured %9.0f us"
                % (name, "/".join(d["placers"]), d["simulated_us"], d["simulated_export_us"],
                   d["measured_us"]))
        say("%s: %.0f s" % (name, time.time() - t0))
    res = os.path.join(a.out, "results.json")
    done = {r["model"] for r in rows}
    if os.path.exists(res):  # the other models' rows of an earlier run stay
        rows = [r for r in json.load(open(res))
                if r["model"] not in done and "simulated_export_us" in r] + rows
    idle_paid(rows, opp)
    fit_shared(rows, opp, a.out)
    json.dump(rows, open(res, "w"), indent=1)
    report(rows, a)


ROUND_LEAD_US = 3000.0  # each step's common start (opplace.torch run: start_together)
MAX_ROUNDS = 400


def identity(placement):
    """What makes two placements the same one to run: their devices and
    order, but where every op is on one device, the devices alone.  On
    one device every order of the ops is a step of the same ops, and the
    simulator times it as their sum whatever the order (formats.md 5: no
    transfer, no other device); measured, three such orders of the
    transformer in one job came within 1.3 % of one another, their steps
    spread over +-9 % (bench/RESULTS.md).  Run as separate placements,
    they only add pairs whose measured order is the machine's noise."""
    devices = set(placement["device_of"].values())
    order = placement.get("order") if len(devices) > 1 else None
    return json.dumps([placement["device_of"], order], sort_keys=True)


def rounds(distinct, ranks, steps, seconds):
    """Timed rounds for a model's placements: at least `steps`, and as many
    as fit in `seconds` by their simulated steps (the placers' own), one of
    each placement a round and `--measure`'s one-device step on every rank
    alone and then on all at once.  Steps of 20-30 ms on 2 busy vCPUs
    spread by +-30 % (a 4 ms scheduler tick is a sixth of one): the median
    of 20 of the multi-branch model's steps moves by 4.5-6.0 % (sd,
    bootstrap per placement: bench/median_noise.py), of the 209 that fit in
    60 s by 1.2-2.0 %; 28-52 rounds of the 100-200 ms models, by 1.0-3.8 %
    (bench/RESULTS.md, real runs: run H)."""
    if seconds <= 0:
        return steps
    us = [d["placement"].get("metrics", {}).get("step_time_us", 0.0) for d in distinct]
    one = max([u for u, d in zip(us, distinct) if d["devices"] == 1] or us)
    per_round = sum(us) + (ranks + 1) * one + ROUND_LEAD_US * (len(us) + ranks + 1)
    return max(steps, min(MAX_ROUNDS, int(seconds * 1e6 / per_round)))


def export(py, factory, ins, threads, kinds_, path, say):
    """The model's graph with op times measured on each device kind
    (cpu: `threads` threads; gpu: cuda), merged into one file."""
    from opplace.torch._run import with_op_times
    graphs = []
    for kind in kinds_:
        say("%s: export, op times measured on %s" % (
            factory, "cuda" if kind == "gpu" else "%d cpu thread(s)" % threads))
        out = path if len(kinds_) == 1 else "%s.%s.json" % (path[:-len(".json")], kind)
        sh([py, "-m", "opplace.torch", "export", factory, *ins, "--times", "measure",
            "--threads", str(threads), "--device", "cuda" if kind == "gpu" else "cpu",
            "--repeat", "5", "-o", out], env=env())
        graphs.append(json.load(open(out)))
    if len(graphs) > 1:
        merged = with_op_times(graphs[0], [(k, {o["name"]: o["time_us"][k] for o in gr["ops"]})
                                           for k, gr in zip(kinds_[1:], graphs[1:])],
                               "export --times measure on %s" % ", ".join(kinds_))
        with open(path, "w") as f:
            json.dump(merged, f, indent=1)


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


def idle_paid(rows, opp):
    """What rule 5.9's recv_idle_free does: each placement simulated with
    its in-situ cluster less that key (every receive paid, also at a rank
    that waits for it), `simulated_idlepaid_us`, where not yet done; a
    cluster without the key simulates so already."""
    for r in rows:
        if "simulated_idlepaid_us" in r:
            continue
        doc = json.load(open(r["cluster"]))
        if not doc.pop("recv_idle_free", False):
            r["simulated_idlepaid_us"] = r["simulated_us"]
            continue
        path = r["cluster"][:-len(".json")] + "_idlepaid.json"
        with open(path, "w") as f:
            json.dump(doc, f)
        r["simulated_idlepaid_us"] = simulated_us(opp, r["graph"], r["executed"], path)


def fit_shared(rows, opp, out):
    """How much of what is left rule 5.8 explains, fitted as `run
    --fit-shared` fits it (opplace.torch._calibrate.fit_shared_ratio): each
    placement simulated with its model's in-situ cluster but the ranks'
    shared compute (all / alone) fitted to the model's other placements
    (leave one out, `simulated_fit_us`: what a fit on some placements of a
    model predicts of another) and to the other models' runs (one value for
    the machine, `simulated_machine_us`); `shared_fit`, fitted to all of a
    model's runs, is the run job's own --fit-shared (main) where present."""
    from opplace.torch._calibrate import fit_shared_ratio, with_shared_ratio
    tmp = os.path.join(out, "fit_clusters")
    os.makedirs(tmp, exist_ok=True)

    def sim(r, q):
        key = "%.2f" % q
        if key not in r.setdefault("sims_by_q", {}):
            path = os.path.join(tmp, "%s.q%s.json" % (r["model"], key))
            if not os.path.exists(path):
                json.dump(with_shared_ratio(json.load(open(r["cluster"])), q), open(path, "w"))
            r["sims_by_q"][key] = simulated_us(opp, r["graph"], r["executed"], path)
        return r["sims_by_q"][key]

    def fit(rs):
        try:
            return fit_shared_ratio([r["measured_us"] for r in rs], lambda i, q: sim(rs[i], q))
        except ValueError:  # no run of two ranks computing at once to fit to
            return None
    machine = {m: fit([x for x in rows if x["model"] != m])
               for m in dict.fromkeys(r["model"] for r in rows)}
    for i, r in enumerate(rows):
        doc = json.load(open(r["cluster"]))
        r["shared_insitu"] = (doc["shared"][0]["all"] / doc["shared"][0]["alone"]
                              if doc.get("shared") else 1.0)
        q = fit([x for j, x in enumerate(rows) if x["model"] == r["model"] and j != i])
        r["shared_loo"] = q
        r["simulated_fit_us"] = sim(r, q) if q is not None else r["simulated_us"]
        q = r["shared_machine"] = machine[r["model"]]
        r["simulated_machine_us"] = sim(r, q) if q is not None else r["simulated_us"]
        if "fitted_cluster" not in r:  # an older run's: fitted here as run would
            r["shared_fit"] = fit([x for x in rows if x["model"] == r["model"]])
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)


def concordance(sim, meas, apart=0.05):
    """(pairs the simulator orders as measured, pairs): over the pairs whose
    measured steps differ by more than `apart` (closer pairs are within this
    machine's noise, where Spearman's ranks are the noise's)."""
    pairs = [(i, j) for i in range(len(meas)) for j in range(i + 1, len(meas))
             if abs(meas[i] - meas[j]) > apart * min(meas[i], meas[j])]
    same = sum(1 for i, j in pairs if (sim[i] - sim[j]) * (meas[i] - meas[j]) > 0)
    return same, len(pairs)


def split_half(rs):
    """Spearman of the measured steps with themselves: the placements'
    medians over the odd rounds against those over the even ones.  How
    well the measurements tell the placements apart (each half has half
    the rounds, so somewhat worse than the whole): no simulator's ranking
    agrees with the measured one better than the measurements agree with
    themselves, beyond chance."""
    if any(len(r.get("steps_us", [])) < 2 for r in rs):
        return float("nan")
    half = [[statistics.median(r["steps_us"][k::2]) for r in rs] for k in (0, 1)]
    return spearman(*half)


def noise_ceiling(split):
    """The largest Spearman a ranking can reach against measurements whose
    halves agree `split` (split_half): the whole's reliability by the
    Spearman-Brown formula, 2 s / (1 + s), and its square root, the
    correlation of the measured ranks with their own noiseless values
    (Spearman's correction for attenuation; the simulator has no noise).
    A simulator at the ceiling ranks as well as the machine allows; 0
    where the halves disagree."""
    if split != split:  # nan: too few rounds
        return split
    whole = 2 * split / (1 + split) if split > -1 else -1.0
    return max(whole, 0.0) ** 0.5


def beside_alone(rs):
    """Over the timed steps of a model's placements: its ranks' ops that
    ran beside another rank's op and those that ran alone, each against
    the graph's times for them (export's: a drift of the machine since
    then scales both), and the all / alone of rule 5.8 that the two imply
    (alone's ratio over beside's); None without both kinds of op."""
    t = [sum(r.get("beside", [0.0] * 4)[k] for r in rs) for k in range(4)]
    if min(t[1], t[3] - t[1]) <= 0:
        return None
    b, a = t[0] / t[1], (t[2] - t[0]) / (t[3] - t[1])
    return b, a, a / b


def err(r, key="simulated_us"):
    return (r[key] - r["measured_us"]) / r["measured_us"]


def summary(rows):
    """RESULTS' per-model table: one device and auto, simulated against
    measured, the fastest measured, the 2-device errors with the probe's
    shared compute and fitted to the model's other placements, Spearman
    both ways, the measurements' own and the Spearman it allows, pairs
    ordered alike, promised gains real."""
    print("| model | distinct placements | one device: simulated / measured ms | auto: "
          "simulated / measured | fastest measured (ms) | 2-device error range (median) | "
          "fitted: 2-device error range (median) | Spearman | fitted: Spearman | measured "
          "against itself (odd / even rounds) | Spearman the measurements allow | pairs > 5 % "
          "apart, ordered alike | promised >= 20 % gain, measured faster |")
    print("|---|---:|---|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for m in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == m]
        one = next(r for r in rs if "single" in r["placers"])
        auto = next(r for r in rs if "auto" in r["placers"])
        fast = min(rs, key=lambda r: r["measured_us"])
        two = [r for r in rs if r["devices"] > 1]
        meas = [r["measured_us"] for r in rs]
        promised = [r for r in rs
                    if r is not one and r["simulated_us"] <= 0.8 * one["simulated_us"]]
        real = sum(r["measured_us"] < one["measured_us"] for r in promised)

        def pair(r):
            return "%.1f / %.1f (%+.0f %%)" % (r["simulated_us"] / 1e3, r["measured_us"] / 1e3,
                                               100 * err(r))

        def spread(key):
            e = [100 * err(r, key) for r in two]
            return "%+.0f .. %+.0f %% (%+.0f)" % (min(e), max(e), statistics.median(e))
        half = split_half(rs)
        print("| %s | %d | %s | %s | %s %.1f | %s | %s | %.2f | %.2f | %.2f | %.2f | %d of %d "
              "| %s |" % (
            m, len(rs), pair(one), pair(auto), "/".join(fast["placers"]),
            fast["measured_us"] / 1e3, spread("simulated_us"), spread("simulated_fit_us"),
            spearman([r["simulated_us"] for r in rs], meas),
            spearman([r["simulated_fit_us"] for r in rs], meas), half, noise_ceiling(half),
            *concordance([r["simulated_us"] for r in rs], meas),
            "%d of %d" % (real, len(promised)) if promised else "none promised"))


def report(rows, a):
    variants = (("simulated_us", "all rules"),
                ("simulated_export_us", "export's op times and calibrate's cluster (before)"),
                ("simulated_calibrated_shared_us", "calibrate's shared compute (5.8)"),
                ("simulated_nohost_us", "without host costs (5.9)"),
                ("simulated_noshared_us", "without shared compute (5.8)"),
                ("simulated_idlepaid_us", "receives paid at a waiting rank too (5.9 without "
                 "recv_idle_free)"),
                ("simulated_fit_us", "shared compute fitted to the model's other placements "
                 "(run --fit-shared, leave one out)"),
                ("simulated_machine_us", "shared compute fitted to the other models' runs"))
    print("| model | placers | devices | measured (ms) | simulated (ms) | error | %s |"
          % " | ".join("%s: error" % v for _, v in variants[1:]))
    print("|---|---|---:|---:|---:|---:|%s" % ("---:|" * (len(variants) - 1)))
    for r in rows:
        print("| %s | %s | %d | %.1f | %.1f | %+.1f %% | %s |" % (
            r["model"], ", ".join(r["placers"]), r["devices"], r["measured_us"] / 1e3,
            r["simulated_us"] / 1e3, 100 * err(r),
            " | ".join("%.1f: %+.1f %%" % (r[k] / 1e3, 100 * err(r, k)) for k, _ in variants[1:])))
    print()
    print("| model | one device: simulated / measured (ms) | shared all / alone: in situ, fitted, "
          "fitted to the other models | in placed steps: ops beside another rank's / alone, "
          "against their op times (all / alone implied) "
          "| pairs > 5 %% apart measured, ordered alike "
          "| Spearman | measured against itself (odd / even rounds) | %s "
          "| simulated >= 20 %% faster than one device: measured faster? |"
          % " | ".join("Spearman %s" % v for _, v in variants[1:]))
    print("|---|---|---|---|---|---:|---:|%s---|" % ("---:|" * (len(variants) - 1)))
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
        ba = beside_alone([r for r in rs if r["devices"] > 1])
        print("| %s | %s | %s | %s | %d of %d | %s | %.2f | %s | %s |" % (
            m, "%.1f / %.1f" % (one["simulated_us"] / 1e3, one["measured_us"] / 1e3) if one
            else "-", ", ".join("-" if rs[0].get(k) is None else "%.2f" % rs[0][k]
                                for k in ("shared_insitu", "shared_fit", "shared_machine")),
            "%.2f / %.2f (%.2f)" % ba if ba else "-",
            *concordance([r["simulated_us"] for r in rs], meas),
            "%.2f" % spearman([r["simulated_us"] for r in rs], meas), split_half(rs),
            " | ".join("%.2f" % spearman([r[k] for r in rs], meas) for k, _ in variants[1:]),
            "; ".join(promise) or "none promised"))
    print()
    summary(rows)
    print()
    print("Where the time went in the median step of each placement off by more than 15 %"
          " (per rank: its ops measured / their in-situ one-device times, waits for receives,"
          " posting receives and sending (the send calls of 1 ms or more: calls that lost"
          " the core), the rest of the loop, its idle time after its last"
          " op; where Linux counts them, the time its thread waited for a core and the CPU"
          " time of its process's other threads, gloo's; ms):")
    print()
    for r in rows:
        if abs(err(r)) <= 0.15:
            continue
        parts = ["rank %d ops %.1f / %.1f, waits %.1f, send %.1f%s, rest %.1f, idle %.1f%s" % (
            b["rank"], b["ops_us"] / 1e3, alone / 1e3, b["recv_wait_us"] / 1e3,
            b.get("send_us", 0) / 1e3,
            " (%d calls over 1 ms: %.1f)" % (b["slow_calls"], b["slow_calls_us"] / 1e3)
            if b.get("slow_calls") else "", b["other_us"] / 1e3, b.get("idle_us", 0) / 1e3,
            ", core wait %.1f, gloo %.1f" % (b["core_wait_us"] / 1e3, b["helper_cpu_us"] / 1e3)
            if "core_wait_us" in b else "")
            for b, alone in zip(r.get("breakdown", []), r.get("insitu_ops_us", []))]
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
