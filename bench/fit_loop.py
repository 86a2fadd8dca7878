"""The user's loop with `run --fit-shared`, in separate jobs (issue 31):
for each model, on this machine, 2 ranks x 1 thread under torchrun,

1. calibrate the cluster (`calibrate --model`: the probe's shared compute)
   and export the graph (`--times measure --threads 1`);
2. place it with a few fast placers (--fit) and run those placements in
   one job with `--measure DIR/fit --fit-shared DIR/MODEL.fitted.json`;
3. place it with auto twice: on the measured graph with the probe's
   cluster, and with the fitted one;
4. run one device and both auto placements in a new job (`--measure
   DIR/check`, minutes after the fit).

Per placement of step 4: the measured step against what the user had in
hand before running it (the simulation on step 2's measured graph with
the probe's cluster and with the fitted one) and against the simulation
with step 4's own measured inputs and the fitted all/alone (what the
machine's drift since step 2 leaves out); per model, whether placing
with the fitted cluster chose a faster placement than with the probe's.
Run it alone on the machine (about 4 minutes).

usage: .venv/bin/python bench/fit_loop.py [--models gnmt,branches] [--fit heft,m-etf,round-robin]
                                 [--steps N] [--out DIR]
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

from fidelity_real import env, export, sh, simulated_us  # noqa: E402


def loop(name, a, torchrun, say):
    from fidelity_models import MODELS
    from opplace.torch._calibrate import with_shared_ratio
    factory, inputs = MODELS[name]
    ins = [x for i in inputs for x in ("--input", i)]
    run = torchrun + ["-m", "opplace.torch", "run", factory, *ins, "--threads", "1",
                      "--warmup", "3"]
    stem = os.path.join(a.out, name)
    c, g = stem + ".cluster.json", stem + ".json"
    say("%s: calibrate, export" % name)
    sh(torchrun + ["-m", "opplace.torch", "calibrate", "--threads", "1", "--model", factory,
                   *ins, "-o", c], env=env())
    export(a.python, factory, ins, 1, ["cpu"], g, say)
    fit = []
    for algo in a.fit.split(","):
        p = "%s.%s.json" % (stem, algo)
        sh([a.opplace, "place", g, "--cluster", c, "--algo", algo, "-o", p, "--quiet"])
        fit.append(p)
    m1, fitted = stem + ".fit", stem + ".fitted.json"
    say("%s: %s for real, --fit-shared" % (name, a.fit))
    sh(run + ["--graph", g, "--cluster", c, *[x for p in fit for x in ("--placement", p)],
              "--steps", str(a.steps), "--measure", m1, "--fit-shared", fitted,
              "--json", stem + ".fit.run.json"], env=env(), timeout=3600)
    g1, c1 = os.path.join(m1, "graph.json"), os.path.join(m1, "cluster.json")
    q = json.load(open(fitted))["calibration"]["shared_fit"]["all_over_alone"]
    check = {"single": "%s.single.json" % stem, "auto (probe)": "%s.auto_probe.json" % stem,
             "auto (fitted)": "%s.auto_fitted.json" % stem}
    for (label, p), cx in zip(check.items(), (c1, c1, fitted)):
        algo = "single" if label == "single" else "auto"
        sh([a.opplace, "place", g1, "--cluster", cx, "--algo", algo, "-o", p, "--quiet",
            *(["--budget-seconds", "5"] if algo == "auto" else [])])
    m2, r2 = stem + ".check", stem + ".check.run.json"
    say("%s: one device and both auto placements for real" % name)
    sh(run + ["--graph", g1, "--cluster", c1, *[x for p in check.values()
                                                  for x in ("--placement", p)],
              "--steps", str(a.steps), "--measure", m2, "--json", r2], env=env(), timeout=3600)
    g2, c2 = os.path.join(m2, "graph.json"), os.path.join(m2, "cluster.json")
    c2fit = stem + ".check.fitted.json"
    json.dump(with_shared_ratio(json.load(open(c2)), q), open(c2fit, "w"))
    rows = []
    from opplace.torch._run import executed_placement
    for (label, p), res in zip(check.items(), json.load(open(r2))["runs"]):
        ex = "%s.executed.json" % p[:-len(".json")]
        json.dump(executed_placement(res), open(ex, "w"))
        rows.append({"model": name, "placement": label, "measured_us": res["measured_step_us"],
                     "probe_before_us": simulated_us(a.opplace, g1, ex, c1),
                     "fitted_before_us": simulated_us(a.opplace, g1, ex, fitted),
                     "fitted_insitu_us": simulated_us(a.opplace, g2, ex, c2fit),
                     "shared_probe": json.load(open(fitted))["calibration"]["shared_fit"][
                         "probe_all_over_alone"], "shared_fit": q})
    return rows


def report(rows):
    print("| model | placement | measured (ms) | before it ran: probe's cluster | before it ran: "
          "fitted cluster | its own inputs, fitted all/alone |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %s | %.1f | %s | %s | %s |" % (
            r["model"], r["placement"], r["measured_us"] / 1e3,
            *("%.1f (%+.1f %%)" % (r[k] / 1e3, 100 * (r[k] / r["measured_us"] - 1))
              for k in ("probe_before_us", "fitted_before_us", "fitted_insitu_us"))))
    print()
    for m in dict.fromkeys(r["model"] for r in rows):
        rs = {r["placement"]: r for r in rows if r["model"] == m}
        one = rs["single"]["measured_us"]
        print("%s: all/alone probe %.2f, fitted %.2f; auto (probe) %.2fx and auto (fitted) "
              "%.2fx one device's measured step" % (
                  m, rs["single"]["shared_probe"], rs["single"]["shared_fit"],
                  one / rs["auto (probe)"]["measured_us"],
                  one / rs["auto (fitted)"]["measured_us"]))
    e = {k: [abs(r[k] / r["measured_us"] - 1) for r in rows]
         for k in ("probe_before_us", "fitted_before_us", "fitted_insitu_us")}
    for k, v in e.items():
        print("%s: median |error| %.1f %%, worst %.1f %%" % (k, 100 * statistics.median(v),
                                                            100 * max(v)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gnmt,branches")
    ap.add_argument("--fit", default="heft,m-etf,round-robin",
                    help="placers whose placements the fit runs (default heft,m-etf,round-robin)")
    ap.add_argument("--steps", type=int, default=20, help="timed rounds of each job (20)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "fit_loop"))
    ap.add_argument("--opplace", default=os.environ.get("OPPLACE",
                                                        os.path.join(ROOT, "build", "opplace")))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torchrun = [a.python, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone"]
    say = lambda m: print("fit_loop: " + m, file=sys.stderr, flush=True)  # noqa: E731
    rows = [r for name in a.models.split(",") for r in loop(name, a, torchrun, say)]
    json.dump(rows, open(os.path.join(a.out, "results.json"), "w"), indent=1)
    report(rows)


if __name__ == "__main__":
    main()
