"""opplace.torch._dist: which rank runs which device, the measured trace in
the layout of `opplace simulate --report t.json`, and (under torchrun, 2
gloo ranks) one rank's exception ending every rank with one message, long
before the wait's timeout.

The torchrun parts need PyTorch 2.x: set OPPLACE_TORCH_PYTHON to a Python
with torch 2, or run this script with one; with Debian's torch 1.13 only
the parts without torchrun run."""
import json
import os
import subprocess
import sys
import time

import torchtest as tt  # noqa: F401  (exits 77 without torch)
import torch

from opplace.torch import _dist as D

PY = os.environ.get("OPPLACE_TORCH_PYTHON") or sys.executable
HERE = os.path.dirname(os.path.abspath(__file__))
ENV = dict(os.environ, PYTHONPATH=os.path.join(tt.ROOT, "python"), OMP_NUM_THREADS="1")


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def cluster(kinds):
    return {"format": "opplace-cluster", "version": 1,
            "devices": [{"name": "%s:%d" % (k, i), "kind": k, "memory_bytes": 1}
                        for i, k in enumerate(kinds)]}


def test_rank_devices():
    rd = D.rank_devices(cluster(["cpu", "cpu"]), 2, threads=1, rank=1)
    check(rd.names == ["cpu:0", "cpu:1"] and rd.device == "cpu" and rd.backend == "gloo", rd)
    check(torch.get_num_threads() == 1, "threads not set")
    check(D.backend_for(["gpu", "gpu"]) == "nccl" and D.backend_for(["gpu", "cpu"]) == "gloo",
          "backend_for")
    for kinds, world, want in ((["cpu"] * 3, 2, "has 3 devices but torchrun started 2 ranks"),
                               (["cpu"], 2, "started 2 ranks but the cluster has only 1"),
                               (["tpu", "cpu"], 2, "kind 'tpu'")):
        try:
            D.rank_devices(cluster(kinds), world)
        except D.DistError as e:
            check(want in str(e), "message %r lacks %r" % (str(e), want))
        else:
            raise AssertionError("%r on %d ranks accepted" % (kinds, world))
    if not torch.cuda.is_available():
        try:
            D.rank_devices(cluster(["gpu", "cpu"]), 2, rank=0, local_rank=0)
        except D.DistError as e:
            check("0 CUDA device" in str(e), str(e))
        else:
            raise AssertionError("a gpu rank without CUDA accepted")


def test_trace_layout():
    """The same schedule as the simulator's trace of a -> b across two
    devices: same metadata, the op and transfer on the same tracks."""
    d = tt.tmpdir()
    paths = {}
    for name, doc in (("g", {"format": "opplace-graph", "version": 1, "name": "ab",
                             "ops": [{"name": "a", "time_us": 10, "output_bytes": 1000},
                                     {"name": "b", "time_us": 30}],
                             "edges": [{"src": "a", "dst": "b"}]}),
                      ("c", dict(cluster(["cpu", "cpu"]),
                                 default_link={"latency_us": 10, "us_per_byte": 0.01})),
                      ("p", {"format": "opplace-placement", "version": 1, "graph": "ab",
                             "device_of": {"a": "cpu:0", "b": "cpu:1"}})):
        paths[name] = os.path.join(d, name + ".json")
        with open(paths[name], "w") as f:
            json.dump(doc, f)
    c = tt.load(paths["c"])
    for x in c["devices"]:
        x["memory_bytes"] = 10 ** 6
    with open(paths["c"], "w") as f:
        json.dump(c, f)
    sim = os.path.join(d, "sim.json")
    tt.opplace("simulate", paths["g"], "--cluster", paths["c"], "--placement", paths["p"],
               "--report", sim)
    sim = tt.load(sim)["traceEvents"]
    timelines = [[("a", "op", 1000.0, 10.0), ("a", "send", 1010.0, 20.0, {"peer": 1,
                                                                         "bytes": 1000})],
                 [("a", "recv", 1005.0, 25.0, {"peer": 0}), ("b", "op", 1030.0, 30.0)]]
    out = os.path.join(d, "measured.json")
    D.write_trace(out, timelines, ["cpu:0", "cpu:1"])
    got = tt.load(out)
    check(got["displayTimeUnit"] == "ms", got)
    meas = got["traceEvents"]
    meta = lambda evs: sorted(json.dumps(e, sort_keys=True) for e in evs if e["ph"] == "M")
    check(meta(meas) == meta(sim), "metadata differs:\n%s\n%s" % (meta(meas), meta(sim)))
    # every simulated op and transfer has its measured twin on the same track
    # with the same keys and category; times are shifted to start at 0
    for e in sim:
        if e["ph"] != "X":
            continue
        twin = [m for m in meas if m["ph"] == "X" and m["name"] == e["name"]
                and m["pid"] == e["pid"] and m["tid"] == e["tid"]]
        check(len(twin) == 1, "no twin of %r in %r" % (e, meas))
        check(set(twin[0]) == set(e) and twin[0]["cat"] == e["cat"], "%r vs %r" % (twin[0], e))
    by = {(m["name"], m["cat"]): m for m in meas if m["ph"] == "X"}
    check(by[("a", "Op")]["ts"] == 0 and by[("b", "Op")]["ts"] == 30, by)
    check(by[("a", "transfer")]["args"] == {"peer": 1, "bytes": 1000, "to": "cpu:1"}, by)
    check(by[("a", "recv")]["pid"] == 1 and by[("a", "recv")]["tid"] == 1, by)
    # opplace reads it back beside its simulation (--measured)
    html = os.path.join(d, "r.html")
    tt.opplace("simulate", paths["g"], "--cluster", paths["c"], "--placement", paths["p"],
               "--report", html, "--measured", out)
    page = open(html).read()
    check("<td>measured step</td><td>60.0 us</td>" in page, "measured step not in the page")
    check("<td>transfers measured</td><td>1 (simulated 1)</td>" in page, "transfer not read")
    try:
        D.write_trace(out, [[("x", "compute", 0, 1)], []], ["cpu:0", "cpu:1"])
    except ValueError as e:
        check("op, send or recv" in str(e), str(e))
    else:
        raise AssertionError("category 'compute' accepted")


def torchrun(*args, timeout=300):
    cmd = [PY, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
           os.path.join(HERE, "dist_worker.py")] + list(args)
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)
    return r, time.time() - t0


def test_failure_ends_every_rank():
    r, took = torchrun("fail", "-", "100")
    err = r.stderr
    check(r.returncode != 0, "torchrun succeeded:\n" + err)
    check(err.count("opplace.torch: rank 1: step: ValueError: boom on purpose") == 1, err)
    check("rank 0 was not stopped" not in r.stdout, r.stdout)
    # the wait's timeout is 100 s: rank 0 stopped because rank 1 failed
    check(took < 60, "took %.0f s: rank 0 waited for its timeout" % took)
    print("failure: every rank ended in %.1f s" % took)


def test_trace_under_torchrun():
    out = os.path.join(tt.tmpdir(), "t.json")
    r, _ = torchrun("trace", out)
    check(r.returncode == 0, "trace run failed:\n%s\n%s" % (r.stdout, r.stderr[-3000:]))
    ev = [e for e in tt.load(out)["traceEvents"] if e["ph"] == "X"]
    got = sorted((e["pid"], e["tid"], e["name"], e["cat"]) for e in ev)
    check(got == [(1, 0, "a", "MatMul"), (1, 1, "a", "recv"), (1, 1, "b", "Op"),
                  (2, 0, "a", "transfer")], got)
    check(min(e["ts"] for e in ev) == 0 and all(e["dur"] >= 0 for e in ev), ev)


def test_start_together():
    """Both ranks start each step at one instant of the shared clock, never
    before it; a rank that comes late says by how much."""
    out = os.path.join(tt.tmpdir(), "start.json")
    r, _ = torchrun("start", out)
    check(r.returncode == 0, "start run failed:\n%s\n%s" % (r.stdout, r.stderr[-3000:]))
    every = tt.load(out)
    for k in range(5):
        (s0, late0, at0), (s1, late1, at1) = every[0][k], every[1][k]
        check(s0 == s1, "step %d: starts %r and %r differ" % (k, s0, s1))
        check(at0 >= s0 and at1 >= s1 and late0 >= 0 and late1 >= 0, every)
    check(every[1][2][1] > 40000, "rank 1 slept 50 ms before step 2's start but was late by "
          "%r us" % every[1][2][1])


def main():
    test_rank_devices()
    test_trace_layout()
    r = subprocess.run([PY, "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    if r.returncode != 0 or int(r.stdout.split(".")[0]) < 2:
        print("torchrun parts skipped: %s has no torch 2 (set OPPLACE_TORCH_PYTHON)" % PY)
    else:
        test_failure_ends_every_rank()
        test_trace_under_torchrun()
        test_start_together()
    print("ok")


if __name__ == "__main__":
    main()
