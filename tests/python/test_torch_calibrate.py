"""`torchrun -m opplace.torch calibrate` on 2 CPU ranks (gloo on loopback):
the cluster file it writes is valid for `opplace info` and `opplace simulate`,
its numbers are physically sane, its link fit is fit-comm's, the
simulator applies its shared-compute field as formats.md 5.8 says, and 3
ranks get every ordered pair's link and host costs.

torchrun needs PyTorch 2.x (Debian's 1.13 torchrun fails at start): set
OPPLACE_TORCH_PYTHON to a Python with torch 2 (e.g. a venv's bin/python), or
run this script with one; otherwise the test is skipped (exit 77)."""
import json
import os
import subprocess
import sys
import time

import torchtest as tt  # noqa: F401  (exits 77 without torch)
import torch

PY = os.environ.get("OPPLACE_TORCH_PYTHON") or sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))


def torch_major(py):
    if py == sys.executable:
        return int(torch.__version__.split(".")[0])
    r = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    return int(r.stdout.split(".")[0]) if r.returncode == 0 else 0


if torch_major(PY) < 2:
    print("SKIPPED: torchrun needs PyTorch 2.x; %s has torch %s. Set OPPLACE_TORCH_PYTHON to a "
          "Python with torch 2 (e.g. /tmp/v1/bin/python)" % (PY, torch.__version__))
    sys.exit(77)

ENV = dict(os.environ, PYTHONPATH=os.path.join(tt.ROOT, "python"), OMP_NUM_THREADS="1")


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def close(a, b, rel, what):
    check(abs(a - b) <= rel * max(abs(a), abs(b), 1e-300), "%s: %r vs %r" % (what, a, b))


def calibrate(d):
    out, csv = os.path.join(d, "cal.json"), os.path.join(d, "cal.csv")
    cmd = [PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
           "-m", "opplace.torch", "calibrate", "--threads", "1", "--sizes", "4", "64K", "1M",
           "4M", "--repeat", "3", "--seconds", "0.1", "--rounds", "2", "--timeout", "120",
           "--csv", csv, "-o", out]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=400)
    check(r.returncode == 0, "calibrate failed (%d):\n%s\n%s" % (r.returncode, r.stdout,
                                                                 r.stderr[-4000:]))
    print(r.stdout)
    print("calibrate took %.1f s" % (time.time() - t0))
    check("wrote " + out in r.stdout, "no 'wrote' line:\n" + r.stdout)
    return tt.load(out), out, csv


def test_file_is_valid_and_sane(doc, path, d):
    devs = doc["devices"]
    check([x["name"] for x in devs] == ["cpu:0", "cpu:1"], "devices %r" % devs)
    node_mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for x in devs:
        check(x["kind"] == "cpu", "kind %r" % x)
        close(x["memory_bytes"] * 2, node_mem, 1e-3, "memory: the node's divided by 2 ranks")
    links = {(l["src"], l["dst"]): l for l in doc["links"]}
    check(set(links) == {("cpu:0", "cpu:1"), ("cpu:1", "cpu:0")}, "links %r" % links)
    for (s, t), l in links.items():
        check(0 < l["latency_us"] < 1e6, "%s->%s latency %r us" % (s, t, l["latency_us"]))
        upb = l["us_per_byte"]
        # loopback through memory: between 10 MB/s and 1 TB/s
        check(1e-6 <= upb <= 1e-1, "%s->%s: %r us/byte = %.3g GB/s is not physical" % (
            s, t, upb, 1e-3 / upb if upb else float("inf")))
    for (s, t), l in links.items():  # formats.md 5.9: each end's host cost per transfer
        for k in ("send_us", "recv_us"):
            check(0 <= l.get(k, 0) < 1e5, "%s->%s %s %r" % (s, t, k, l.get(k)))
        for k in ("send_us_per_byte", "recv_us_per_byte"):
            check(0 <= l.get(k, 0) <= 1e-1, "%s->%s %s %r" % (s, t, k, l.get(k)))
        check(any(l.get(k, 0) > 0 for k in ("send_us", "send_us_per_byte")),
              "%s->%s: sending costs its host nothing? %r" % (s, t, l))
    check(doc.get("recv_idle_free") is True, "receives measured on computing ranks, so an idle "
          "one's are free (formats.md 5.9): %r" % doc.get("recv_idle_free"))
    check("48x48 matmuls" in doc["calibration"]["host"]["work"], doc["calibration"]["host"])
    rows = doc["calibration"]["host"]["rows"]
    check({(r["src"], r["dst"], r["side"]) for r in rows} ==
          {(a, b, side) for a, b in links for side in ("send", "recv")},
          "host rows: every pair, both ends: %r" % rows)
    (g,) = doc["shared"]
    check(g["devices"] == ["cpu:0", "cpu:1"], "shared %r" % g)
    check(0 < g["all"] <= g["alone"], "shared all/alone %r" % g)
    # The raw windows are 0.1 s on a VM whose speed drifts by 10 % or more
    # between them, so all at once can measure faster than alone: the file
    # keeps the raw numbers and clamps the shared rate to <= 1.  Held here:
    # the clamp, and that both are rates of the same probe (a units or rank
    # mix-up is off by far more than noise).
    (m,) = doc["calibration"]["shared_measured"]
    check(m["devices"] == g["devices"] and m["alone"] == g["alone"], "raw %r vs %r" % (m, g))
    check(g["all"] == min(m["all"], m["alone"]), "shared all is the raw all clamped: %r %r" % (g, m))
    check(0.2 < m["all"] / m["alone"] < 1.5, "measured all/alone %r" % m)
    cm = {c["device"]: c for c in doc["calibration"]["compute"]}
    close(m["alone"], sum(cm[n]["alone"] for n in g["devices"]) / len(g["devices"]), 1e-12,
          "shared alone: the mean of its ranks'")
    for c in doc["calibration"]["compute"]:
        check(0.1 < c["alone"] < 1e4 and 0.1 < c["all"] < 1e4, "GFLOP/s %r" % c)
    r = tt.opplace("info", write_two_op_graph(d), "--cluster", path)
    check("lower bound" in r.stdout, r.stdout)


def write_two_op_graph(d):
    g = os.path.join(d, "two.json")
    with open(g, "w") as f:
        json.dump({"format": "opplace-graph", "version": 1, "name": "two",
                   "ops": [{"name": "a", "time_us": 10, "kind": "cpu"},
                           {"name": "b", "time_us": 30, "kind": "cpu"}],
                   "edges": []}, f)
    return g


def test_simulates_shared_compute(doc, path, d):
    """a (10 us) on cpu:0 and b (30 us) on cpu:1 start together at rate
    r = all/alone (formats.md 5.8): a ends at 10/r, b has done 10 and runs
    its last 20 alone: 10/r + 20."""
    g = write_two_op_graph(d)
    p = os.path.join(d, "p.json")
    with open(p, "w") as f:
        json.dump({"format": "opplace-placement", "version": 1, "graph": "two",
                   "device_of": {"a": "cpu:0", "b": "cpu:1"}}, f)
    out = json.loads(tt.opplace("simulate", g, "--cluster", path, "--placement", p,
                                "--json").stdout)
    (grp,) = doc["shared"]
    rate = grp["all"] / grp["alone"]
    close(out["step_time_us"], 10 / rate + 20, 1e-9, "simulated step with shared compute")


def test_fit_is_fit_comm(doc, csv, d):
    """The Python least squares equals `opplace fit-comm` on the same CSV
    (device names in its kind columns), pair by pair."""
    from opplace.torch._calibrate import linear_fit
    # formats.md section 4's example
    a, b, r2 = linear_fit([0, 1000, 2000], [10, 20, 30.5])
    close(a, 9.916666666666666, 1e-9, "example latency")
    close(b, 0.01025, 1e-9, "example us_per_byte")
    check(abs(r2 - 0.9998) < 1e-4, "example R^2 %r" % r2)
    fits = os.path.join(d, "fits.json")
    tt.opplace("fit-comm", csv, "-o", fits)
    theirs = {(f["src_kind"], f["dst_kind"]): f for f in tt.load(fits)["links_by_kind"]}
    mine = doc["calibration"]["fits"]
    check(len(mine) == 2 and len(theirs) == 2, "fits %r / %r" % (mine, theirs))
    for f in mine:
        t = theirs[(f["src"], f["dst"])]
        close(f["us_per_byte"], t["us_per_byte"], 1e-6, "us_per_byte %s->%s" % (f["src"], f["dst"]))
        check(abs(f["latency_us"] - t["latency_us"]) <= 1e-6 * max(1.0, abs(t["latency_us"])),
              "latency %s->%s: %r vs %r" % (f["src"], f["dst"], f["latency_us"], t["latency_us"]))
        check(t["samples"] == f["samples"] == 4, "samples %r" % t)
    # the written link is the fit, or half the 4-byte round trip when noise
    # made the intercept negative, or the largest transfer's time per byte when
    # noise made the slope faster than any wire
    from opplace.torch._calibrate import MIN_US_PER_BYTE
    for f, l in zip(mine, doc["links"]):
        check(f["half_rtt_us"] > 0, "half round trip %r" % f)
        want = f["latency_us"] if f["latency_us"] > 0 else max(f["half_rtt_us"], 1e-3)
        close(l["latency_us"], want, 1e-9, "written latency")
        if f["us_per_byte"] >= MIN_US_PER_BYTE:
            close(l["us_per_byte"], f["us_per_byte"], 1e-12, "written us_per_byte")
        else:  # a disturbed sample: the largest transfer's time per byte
            check(l["us_per_byte"] > 0, "written us_per_byte %r" % l["us_per_byte"])


def test_without_torchrun_says_how():
    env = {k: v for k, v in ENV.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    r = subprocess.run([PY, "-m", "opplace.torch", "calibrate", "-o", "/dev/null"],
                       capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 2 and "torchrun" in r.stderr, "rc %d: %s" % (r.returncode, r.stderr))


def test_model_probe(d):
    """--model: the ranks' shared compute measured with the model's own
    training step (steps per second, alone and all at once)."""
    out = os.path.join(d, "calm.json")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([ENV["PYTHONPATH"], HERE]))
    cmd = [PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
           "-m", "opplace.torch", "calibrate", "--threads", "1", "--sizes", "4", "1K",
           "--repeat", "1", "--seconds", "0.2", "--rounds", "1", "--timeout", "120",
           "--model", "roundtrip_model:RoundTrip", "--input", "2x4:int64",
           "--input", "2x3x8x8", "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=400)
    check(r.returncode == 0, "calibrate --model failed (%d):\n%s" % (r.returncode,
                                                                     r.stderr[-4000:]))
    doc = tt.load(out)
    cal = doc["calibration"]
    check("training steps/s of roundtrip_model:RoundTrip" in cal["compute_probe"], cal)
    check(cal["host"]["work"].startswith("the model's step, a transfer every "), cal["host"])
    for c in cal["compute"]:  # the round-trip model: a step in well under a second
        check(1 < c["alone"] < 1e5 and 1 < c["all"] < 1e5, "steps/s %r" % c)
    (g,) = doc["shared"]
    check(0 < g["all"] <= g["alone"], "shared %r" % g)
    r = subprocess.run([PY, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                        "--standalone", "-m", "opplace.torch", "calibrate", "--model",
                        "roundtrip_model:RoundTrip", "-o", out], capture_output=True, text=True,
                       env=env, timeout=120)
    check(r.returncode != 0 and "--model needs its example inputs" in r.stderr, r.stderr[-2000:])


STEP_WORK = r"""
import sys, torch
from opplace.torch.__main__ import _parse_input
from opplace.torch._calibrate import StepWork, model_step
ins = [_parse_input(s) for s in ("2x4:int64", "2x3x8x8")]
plain, x = model_step("roundtrip_model:RoundTrip", ins, "sum", "cpu")
step, x2 = model_step("roundtrip_model:RoundTrip", ins, "sum", "cpu")
replay = step.replay
work = StepWork(step, x2, per_round=5)
calls = []
work.run(lambda: calls.append(1))
work.run(None)
work.run(lambda: calls.append(2))
work.close()
for _ in range(4):
    plain(x)
a, b = plain(x), step(x2)
print(work.n, work.pieces.every, work.pieces.k, len(calls), calls.count(2), step.replay is replay,
      float(a), float(b))
"""


def test_step_work():
    """StepWork, the host-cost probe's compute with --model: the model's
    step with a transfer hook after every `every` op groups, n = groups //
    every hooks a run, none without a hook, and the step unchanged (its
    losses equal a plain step's run as often; close() gives the replay
    back)."""
    env = dict(ENV, PYTHONPATH=os.pathsep.join([ENV["PYTHONPATH"], HERE]))
    r = subprocess.run([PY, "-c", STEP_WORK], capture_output=True, text=True, env=env,
                       timeout=300)
    check(r.returncode == 0, "StepWork failed:\n%s" % r.stderr[-3000:])
    n, every, groups, calls, second, same, a, b = r.stdout.split()
    n, every, groups = int(n), int(every), int(groups)
    check(groups >= 5 and every == max(1, groups // 5) and n == groups // every,
          "n %d, every %d, groups %d" % (n, every, groups))
    check(int(calls) == 2 * n and int(second) == n, "hook calls %s of %d" % (calls, 2 * n))
    check(same == "True", "close() restores the replay")
    check(float(a) == float(b), "the hooked step's loss %s, a plain step's %s" % (b, a))


def test_three_ranks(d):
    """3 ranks: every ordered pair gets a link with both ends' host costs,
    measured by the pair's two ranks both ways at once while the third
    waits at the same barriers (a miscount there hangs until --timeout)."""
    out = os.path.join(d, "cal3.json")
    r = subprocess.run([PY, "-m", "torch.distributed.run", "--nproc-per-node", "3",
                        "--standalone", "-m", "opplace.torch", "calibrate", "--threads", "1",
                        "--sizes", "4", "64K", "--repeat", "1", "--seconds", "0.05",
                        "--rounds", "1", "--timeout", "60", "-o", out],
                       capture_output=True, text=True, env=ENV, timeout=300)
    check(r.returncode == 0, "calibrate, 3 ranks, failed (%d):\n%s" % (r.returncode,
                                                                     r.stderr[-3000:]))
    doc = tt.load(out)
    names = ["cpu:0", "cpu:1", "cpu:2"]
    pairs = {(s, t) for s in names for t in names if s != t}
    check({(l["src"], l["dst"]) for l in doc["links"]} == pairs, "links %r" % doc["links"])
    for l in doc["links"]:
        check(all(k in l for k in ("send_us", "send_us_per_byte", "recv_us",
                                   "recv_us_per_byte")), "host costs of %r" % l)
    rows = [(x["src"], x["dst"], x["side"], x["bytes"]) for x in doc["calibration"]["host"]["rows"]]
    check(sorted(rows) == sorted((s, t, side, b) for s, t in pairs for side in ("send", "recv")
                                 for b in (4, 65536)),
          "host rows: each ordered pair, both ends, each size, once: %r" % rows)


def main():
    d = tt.tmpdir()
    test_without_torchrun_says_how()
    test_step_work()
    doc, path, csv = calibrate(d)
    test_file_is_valid_and_sane(doc, path, d)
    test_simulates_shared_compute(doc, path, d)
    test_fit_is_fit_comm(doc, csv, d)
    test_model_probe(d)
    test_three_ranks(d)
    print("ok")


if __name__ == "__main__":
    main()
