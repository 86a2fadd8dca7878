"""What-if on a fidelity_real run's files (it runs nothing on the machine):
every placement re-simulated with its in-situ cluster's transfer host costs
(formats.md rule 5.9) scaled by k, the receives' alone or both ends', and
with or without recv_idle_free; per model, the median and worst |error|
against the measured step, and the Spearman of the placements.

usage: python3 bench/whatif_host.py DIR [DIR ...] [--ks 1 2 3] [--recv-only]
           [--idle] [--opplace build/opplace]   (DIR: fidelity_real.sh --out DIR)"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), HERE]
from fidelity_real import simulated_us, spearman  # noqa: E402

SEND = ("send_us", "send_us_per_byte")
RECV = ("recv_us", "recv_us_per_byte")


def scaled(path: str, k: float, keys, idle: bool, tmp: str) -> str:
    doc = json.load(open(path))
    for link in doc.get("links", []):
        for key in keys:
            if key in link:
                link[key] *= k
    if idle:
        doc["recv_idle_free"] = True
    else:
        doc.pop("recv_idle_free", None)
    out = os.path.join(tmp, "%s.k%g.json" % (os.path.basename(path)[:-5], k))
    json.dump(doc, open(out, "w"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--ks", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    ap.add_argument("--recv-only", action="store_true", help="scale the receives' costs only")
    ap.add_argument("--idle", action="store_true", help="with recv_idle_free")
    ap.add_argument("--opplace", default=os.path.join(HERE, "..", "build", "opplace"))
    a = ap.parse_args()
    keys = RECV if a.recv_only else SEND + RECV
    print("| run | model | %s |" % " | ".join("k = %g: median / worst %%, Spearman" % k
                                               for k in a.ks))
    print("|---|---|%s" % ("---|" * len(a.ks)))
    with tempfile.TemporaryDirectory() as tmp:
        for d in a.dirs:
            rows = json.load(open(os.path.join(d, "results.json")))
            for m in dict.fromkeys(r["model"] for r in rows):
                rs = [r for r in rows if r["model"] == m]
                cells = []
                for k in a.ks:
                    sims = [simulated_us(a.opplace, r["graph"], r["executed"],
                                         scaled(r["cluster"], k, keys, a.idle, tmp)) for r in rs]
                    errs = [abs(s / r["measured_us"] - 1) for s, r in zip(sims, rs)]
                    cells.append("%.1f / %.1f, %.2f" % (
                        100 * statistics.median(errs), 100 * max(errs),
                        spearman(sims, [r["measured_us"] for r in rs])))
                print("| %s | %s | %s |" % (os.path.basename(os.path.normpath(d)), m,
                                            " | ".join(cells)), flush=True)


if __name__ == "__main__":
    main()
