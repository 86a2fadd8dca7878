"""How much of the real runs' under-prediction is the machine's noise meeting
the placement's joins (issue 31; bench/RESULTS.md, "PyTorch: real runs")?

A 2-rank step waits at every join for the slower rank, and on this VM a
rank's speed moves from step to step (one device's steps spread by -10 ..
+30 % about their median).  The median of a maximum is more than the
maximum of the medians, so a simulator fed median op times under-predicts
the median step of placements whose ranks compute at once, and not those
whose ranks take turns.  This script puts a number on it from a
`bench/fidelity_real.sh --out DIR` run, simulating nothing new on the
machine: each rank's speed in a step is a factor drawn from the model's
one-device steps (step / their median), the two ranks' factors joined by a
Gaussian copula whose correlation is that of the ranks' op-time ratios
step by step in the model's other 2-rank placements (leave one out); the
executed placement is simulated with the in-situ inputs at 49 lattice
points (7 x 7 quantiles) and the median of those steps set against the
measured step.

usage: .venv/bin/python bench/noise_max.py --out DIR [--rho R]   (R: one correlation
       for every model instead of the measured ones; 0 is independent ranks)
"""
import argparse
import json
import math
import os
import statistics
import tempfile
from statistics import NormalDist
from typing import Optional

from fidelity_real import simulated_us, spearman

LATTICE = 7


def quantile(xs: list, p: float) -> float:
    """The p-quantile of xs, linear between order statistics."""
    xs = sorted(xs)
    k = p * (len(xs) - 1)
    i = int(k)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (k - i) * (xs[i + 1] - xs[i])


def pearson(a: list, b: list) -> float:
    """Pearson's correlation; 0 where either side is constant."""
    try:
        return statistics.correlation(a, b)
    except statistics.StatisticsError:
        return 0.0


def rank_ratios(run: dict) -> Optional[tuple]:
    """Per timed step, each rank's op time against the graph's times for
    its ops; None unless both ranks ran ops."""
    steps = run.get("steps_breakdown") or []
    if not steps or any(b["graph_ops_us"] <= 0 for b in steps[0][:2]):
        return None
    return ([s[0]["ops_us"] / s[0]["graph_ops_us"] for s in steps],
            [s[1]["ops_us"] / s[1]["graph_ops_us"] for s in steps])


def rank_correlation(run: dict) -> Optional[float]:
    """Pearson's correlation of the ranks' op-time ratios over the steps."""
    ratios = rank_ratios(run)
    return pearson(*ratios) if ratios else None


def draws(factors: list, rho: float) -> list:
    """Both ranks' speed factors at the lattice's quantile pairs, joined by
    a Gaussian copula of correlation rho."""
    nd = NormalDist()
    us = [(i + 0.5) / LATTICE for i in range(LATTICE)]
    out = []
    for u0 in us:
        for u1 in us:
            z0 = nd.inv_cdf(u0)
            z1 = rho * z0 + math.sqrt(1 - rho * rho) * nd.inv_cdf(u1)
            out.append((quantile(factors, u0), quantile(factors, nd.cdf(z1))))
    return out


def noisy_median_us(opp: str, row: dict, pairs: list, tmp: str) -> float:
    """The median over the draws of the executed placement's simulated step,
    each draw dividing rank d's speed by its factor."""
    with open(row["cluster"]) as f:
        cluster = json.load(f)
    path = os.path.join(tmp, "noisy_cluster.json")
    steps = []
    for fs in pairs:
        c = json.loads(json.dumps(cluster))
        for dev, fd in zip(c["devices"], fs):
            dev["speed"] = dev.get("speed", 1.0) / fd
        with open(path, "w") as f:
            json.dump(c, f)
        steps.append(simulated_us(opp, row["graph"], row["executed"], path))
    return statistics.median(steps)


def model_rows(out: str, rows: list, model: str) -> list:
    """The model's rows with their run's record (same order as run.json)."""
    mine = [r for r in rows if r["model"] == model]
    with open(os.path.join(out, model + ".run.json")) as f:
        runs = json.load(f)
    runs = runs["runs"] if "runs" in runs else [runs]
    return list(zip(mine, runs))


def summary(errs: list) -> str:
    e = sorted(abs(x) for x in errs)
    return "%.1f / %.1f %%" % (100 * statistics.median(e), 100 * e[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="a bench/fidelity_real.sh --out DIR")
    ap.add_argument("--rho", type=float, help="one rank correlation for every model")
    ap.add_argument("--opplace", default=os.environ.get("OPPLACE", os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "opplace")))
    a = ap.parse_args()
    with open(os.path.join(a.out, "results.json")) as f:
        rows = json.load(f)
    before, after, ranks = [], [], []
    print("| model | placement | measured ms | simulated | with noise at the joins | rho |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for model in sorted({r["model"] for r in rows}):
            pairs = model_rows(a.out, rows, model)
            one = [run for r, run in pairs if r["devices"] == 1][0]
            med = statistics.median(one["steps_us"])
            factors = [s / med for s in one["steps_us"]]
            corr = [rank_correlation(run) for _, run in pairs]
            sims = []
            for k, (r, _) in enumerate(pairs):
                others = [c for j, c in enumerate(corr) if j != k and c is not None]
                rho = a.rho if a.rho is not None else (
                    statistics.median(others) if others else 0.0)
                sim = noisy_median_us(a.opplace, r, draws(factors, rho), tmp)
                e0 = r["simulated_us"] / r["measured_us"] - 1
                e1 = sim / r["measured_us"] - 1
                before.append(e0)
                after.append(e1)
                sims.append((r["measured_us"], r["simulated_us"], sim))
                print("| %s | %s | %.1f | %+.1f %% | %+.1f %% | %.2f |"
                      % (model, "/".join(r["placers"]), r["measured_us"] / 1e3, 100 * e0,
                         100 * e1, rho), flush=True)
            ms, s0, s1 = zip(*sims)
            ranks.append("%s %.2f -> %.2f" % (model, spearman(s0, ms), spearman(s1, ms)))
    print("\nSpearman, simulated -> with noise at the joins: " + ", ".join(ranks))
    print("median |error| / worst: simulated %s, with noise at the joins %s (%d placements)"
          % (summary(before), summary(after), len(before)))


if __name__ == "__main__":
    main()
