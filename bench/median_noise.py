"""How steady fidelity_real's measured medians are: for each placement of a
run's results.json (`bash bench/fidelity_real.sh --out DIR`), the standard
deviation of the median step over 20 of its timed rounds and over all of
them, by bootstrap (resampling the rounds with replacement; rounds that
drift together make it a lower bound).

usage: python bench/median_noise.py DIR [--rounds 20] [--samples 2000]
"""
import argparse
import json
import os
import random
import statistics


def sd_of_median(steps: list, n: int, samples: int, rng: random.Random) -> float:
    meds = [statistics.median(rng.choices(steps, k=n)) for _ in range(samples)]
    return statistics.pstdev(meds) / statistics.median(steps)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--samples", type=int, default=2000)
    a = ap.parse_args()
    rng = random.Random(1)
    print("| model | placers | rounds | sd of the median over %d rounds | over all |" % a.rounds)
    print("|---|---|---:|---:|---:|")
    for r in json.load(open(os.path.join(a.dir, "results.json"))):
        s = r["steps_us"]
        print("| %s | %s | %d | %.1f %% | %.1f %% |" % (
            r["model"], ", ".join(r["placers"]), len(s),
            100 * sd_of_median(s, a.rounds, a.samples, rng),
            100 * sd_of_median(s, len(s), a.samples, rng)))


if __name__ == "__main__":
    main()
