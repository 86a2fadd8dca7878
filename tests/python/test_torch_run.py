"""opplace.torch run: a placement executed by 2 processes (gloo on
loopback, 1 thread each) trains exactly like one device: the losses of 3
Adam steps equal one-process eager training (rtol 1e-5), and every
parameter equals one process running the same joint graph (rtol 1e-5);
the same with two torchrun "nodes"; bad input ends every rank with one
clear error."""
import json
import math
import os
import socket
import subprocess
import sys
import unittest

import torchtest as tt
import torch

if int(torch.__version__.split(".")[0]) < 2:
    print("SKIPPED: opplace.torch run needs torch 2.x (this is %s)" % torch.__version__)
    sys.exit(77)

import opplace.torch as ot  # noqa: E402
from opplace.torch.__main__ import _inputs  # noqa: E402

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
MODEL = "roundtrip_model:RoundTrip"
INPUTS = [("2x4:int64", [2, 4], torch.int64), ("2x3x8x8", [2, 3, 8, 8], torch.float32)]
SEED = 0
torch.set_num_threads(1)  # as the ranks: the same reduction order in every kernel


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(tt.ROOT, "python"), tt.HERE])
    e["OPPLACE"] = tt.OPPLACE
    e["OMP_NUM_THREADS"] = "1"
    return e


def run_args(d, placement, extra=()):
    args = ["-m", "opplace.torch", "run", MODEL, "--graph", os.path.join(d, "g.json"),
            "--placement", placement, "--cluster", os.path.join(d, "c.json"),
            "--steps", "3", "--warmup", "0", "--seed", str(SEED), "--timeout", "60"]
    for spec, _, _ in INPUTS:
        args += ["--input", spec]
    return args + list(extra)


def reference(steps=3):
    """One process, eager PyTorch, the runner's seeds, model and inputs."""
    from roundtrip_model import RoundTrip
    torch.manual_seed(SEED)
    model = RoundTrip()
    torch.manual_seed(SEED + 1)
    x = _inputs([(s, dt) for _, s, dt in INPUTS], "cpu")
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    # the capture records the portable kernels (no oneDNN RNN): the same here
    with torch.backends.mkldnn.flags(enabled=False):
        for _ in range(steps):
            opt.zero_grad()
            loss = ot.default_loss(model(*x))
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses, {n: p.detach() for n, p in model.named_parameters()}


def one_device_replay(steps=3):
    """One process runs the same joint graph, in program order, with one Adam
    per parameter: what the ranks together must compute exactly."""
    from roundtrip_model import RoundTrip
    from opplace.torch._capture import Replay, bind, capture
    torch.manual_seed(SEED)
    model = RoundTrip()
    torch.manual_seed(SEED + 1)
    x = _inputs([(s, dt) for _, s, dt in INPUTS], "cpu")
    cap = capture(model, x, ot.default_loss)
    params = {n: p.detach().clone().requires_grad_(True) for n, p in model.named_parameters()}
    buffers = {n: b.clone() for n, b in model.named_buffers()}
    opts = {n: torch.optim.Adam([p], lr=1e-3) for n, p in params.items()}
    rep = Replay(cap)
    losses = []
    for _ in range(steps):
        env = bind(cap, {n: p.detach() for n, p in params.items()}, buffers, x)
        with torch.no_grad():
            for g in cap.groups:
                if g.kind != "input":
                    rep.run_group(g.name, env)
        for n, p in params.items():
            p.grad = env[cap.grad_node[n]]
            opts[n].step()
        losses.append(env[cap.loss_node].item())
    return losses, {n: p.detach() for n, p in params.items()}


class RunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from roundtrip_model import RoundTrip
        cls.d = tt.tmpdir()
        torch.manual_seed(SEED)
        x = _inputs([(s, dt) for _, s, dt in INPUTS], "cpu")
        g = ot.export(RoundTrip(), x, os.path.join(cls.d, "g.json"), times="estimate:cpu")
        cls.graph = g
        cluster = {"format": "opplace-cluster", "version": 1,
                   "devices": [{"name": "cpu:%d" % i, "kind": "cpu",
                                "memory_bytes": 1 << 30} for i in range(2)],
                   "default_link": {"latency_us": 50.0, "us_per_byte": 1e-3}}
        with open(os.path.join(cls.d, "c.json"), "w") as f:
            json.dump(cluster, f)
        # a placement with its own order, from the engine
        tt.opplace("place", os.path.join(cls.d, "g.json"), "--cluster",
                   os.path.join(cls.d, "c.json"), "--algo", "m-etf",
                   "-o", os.path.join(cls.d, "p.json"))
        # one without an order that splits every colocation group alternately
        groups = sorted({o.get("colocate", o["name"]) for o in g["ops"]})
        dev = {grp: "cpu:%d" % (i % 2) for i, grp in enumerate(groups)}
        split = {"format": "opplace-placement", "version": 1, "graph": g["name"],
                 "device_of": {o["name"]: dev[o.get("colocate", o["name"])]
                               for o in g["ops"]}}
        with open(os.path.join(cls.d, "split.json"), "w") as f:
            json.dump(split, f)
        cls.ref_losses, _ = reference()
        cls.replay_losses, cls.ref_params = one_device_replay()

    def outputs(self):
        out = os.path.join(self.d, "out.json")
        params = os.path.join(self.d, "params.pt")
        for f in (out, params):
            if os.path.exists(f):
                os.remove(f)
        return ["--json", out, "--save-params", params, "--trace", os.path.join(self.d, "t.json")]

    def check_run(self, placement, launch):
        out = os.path.join(self.d, "out.json")
        params = os.path.join(self.d, "params.pt")
        r = subprocess.run(launch(run_args(self.d, placement, self.outputs())),
                           capture_output=True, text=True, env=env(), timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        res = tt.load(out)
        self.assertEqual(res["ranks"], 2)
        self.assertEqual(len(res["steps_us"]), 3)
        # the losses of eager one-device training
        torch.testing.assert_close(torch.tensor(res["losses"]), torch.tensor(self.ref_losses),
                                   rtol=1e-5, atol=1e-6)
        # the parameters of the same joint graph run by one process (eager
        # training differs in the last bits, and Adam turns conv.bias's gradient,
        # zero but for rounding under the batch norm, into lr-sized steps)
        torch.testing.assert_close(torch.tensor(res["losses"]), torch.tensor(self.replay_losses),
                                   rtol=1e-6, atol=1e-7)
        got = torch.load(params)
        self.assertEqual(sorted(got), sorted(self.ref_params))
        for n, p in self.ref_params.items():
            torch.testing.assert_close(got[n], p, rtol=1e-5, atol=1e-6, msg=n)
        trace = tt.load(os.path.join(self.d, "t.json"))
        ranks = {e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"}
        self.assertEqual(ranks, {0, 1})
        self.assertEqual(len(res["start_late_us"]), 3)
        b = res["breakdown"]
        self.assertEqual([x["rank"] for x in b], [0, 1])
        self.assertEqual(sum(x["ops"] for x in b), len(self.graph["ops"]))
        # the median step's time, rank by rank: every op once, parts within the step
        mid = res["median_step"]
        self.assertEqual(sorted(res["steps_us"])[(len(res["steps_us"]) - 1) // 2],
                         res["steps_us"][mid])
        self.assertEqual(b, res["steps_breakdown"][mid])
        for x in b:
            self.assertLessEqual(x["ops_us"] + x["recv_wait_us"] + x["send_us"] +
                                 x["other_us"] + x["idle_us"], res["steps_us"][mid] * 1.001)
            self.assertGreater(x["graph_ops_us"], 0)
            if os.path.exists("/proc/thread-self/schedstat"):  # Linux's scheduler accounting
                self.assertGreaterEqual(x["core_wait_us"], 0)
                # every rank of a 2-device step has transfers, which gloo's thread moves
                self.assertGreater(x["helper_cpu_us"], 0)
        return res

    def test_engine_placement_two_ranks(self):
        p = tt.load(os.path.join(self.d, "p.json"))
        self.assertEqual(len(set(p["device_of"].values())), 2, "the placement uses one device")
        res = self.check_run(os.path.join(self.d, "p.json"),
                             lambda a: TORCHRUN + ["--nproc-per-node", "2", "--master-port",
                                                   str(free_port())] + a)
        self.assertEqual(res["order"], "placement")
        self.assertGreater(res["simulated_step_us"], 0)

    def test_split_placement_program_order(self):
        res = self.check_run(os.path.join(self.d, "split.json"),
                             lambda a: TORCHRUN + ["--nproc-per-node", "2", "--master-port",
                                                   str(free_port())] + a)
        self.assertEqual(res["order"], "program")

    def test_interleaved_placements_and_measured_inputs(self):
        """Two placements in one job, their steps interleaved: each trains as
        one device does; --measure writes the graph and cluster with the op
        times and shared compute measured between the rounds, which the
        simulator takes."""
        out, meas = os.path.join(self.d, "il.json"), os.path.join(self.d, "measured")
        fitted = os.path.join(self.d, "fitted.json")
        a = run_args(self.d, os.path.join(self.d, "p.json"),
                     ["--placement", os.path.join(self.d, "split.json"), "--json", out,
                      "--measure", meas, "--fit-shared", fitted])
        r = subprocess.run(TORCHRUN + ["--nproc-per-node", "2", "--master-port",
                                       str(free_port())] + a,
                           capture_output=True, text=True, env=env(), timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        res = tt.load(out)
        self.assertTrue(res["interleaved"])
        self.assertEqual([os.path.basename(x["placement"]) for x in res["runs"]],
                         ["p.json", "split.json"])
        for x in res["runs"]:
            self.assertEqual(len(x["steps_us"]), 3)
            self.assertIsNone(x["measured_ci_us"])  # 3 steps: too few for a 95 % interval
            self.assertIn("%s: measured %.2f ms a step (too few steps for an interval, 3 steps)"
                          % (x["placement"], x["measured_step_us"] / 1e3), r.stderr)
            torch.testing.assert_close(torch.tensor(x["losses"]),
                                       torch.tensor(self.ref_losses), rtol=1e-5, atol=1e-6)
        g = tt.load(os.path.join(meas, "graph.json"))
        c = tt.load(os.path.join(meas, "cluster.json"))
        self.assertEqual([o["name"] for o in g["ops"]], [o["name"] for o in self.graph["ops"]])
        self.assertEqual(g["edges"], self.graph["edges"])
        self.assertIn("run --measure", g["torch"]["times_source"])
        moved = [o for o, e in zip(g["ops"], self.graph["ops"]) if o["time_us"] != e["time_us"]]
        self.assertEqual(len(moved), len(g["ops"]), "an op kept its estimated time")
        self.assertTrue(all(o["time_us"]["cpu"] >= 0 for o in g["ops"]))
        (grp,) = c["shared"]
        self.assertEqual(grp["devices"], ["cpu:0", "cpu:1"])
        self.assertTrue(0 < grp["all"] <= grp["alone"])
        self.assertEqual(c["devices"][0]["speed"], 1.0)
        self.assertGreater(c["devices"][1]["speed"], 0)
        self.assertEqual(c["default_link"], {"latency_us": 50.0, "us_per_byte": 1e-3})
        sim = json.loads(tt.opplace("simulate", os.path.join(meas, "graph.json"), "--placement",
                                    os.path.join(self.d, "p.json"), "--cluster",
                                    os.path.join(meas, "cluster.json"), "--json").stdout)
        self.assertGreater(sim["step_time_us"], 0)
        # --fit-shared: the measured cluster with rule 5.8's all / alone that fits
        # the two runs best of the grid (0.30 and 1.00 its ends)
        f = tt.load(fitted)
        fit = f["calibration"]["shared_fit"]
        self.assertEqual({k: v for k, v in f.items() if k not in ("shared", "calibration")},
                         {k: v for k, v in c.items() if k not in ("shared", "calibration")})
        (fg,) = f["shared"]
        self.assertEqual((fg["devices"], fg["alone"]), (grp["devices"], grp["alone"]))
        self.assertAlmostEqual(fg["all"] / fg["alone"], fit["all_over_alone"], places=12)
        self.assertAlmostEqual(fit["probe_all_over_alone"], grp["all"] / grp["alone"], places=12)
        self.assertEqual([x["measured_us"] for x in fit["runs"]],
                         [x["measured_step_us"] for x in res["runs"]])
        runs = []
        for x in res["runs"]:
            x["executed"] = os.path.join(self.d, "ex%d.json" % len(runs))
            with open(x["executed"], "w") as fh:
                json.dump(dict(tt.load(x["placement"]), order=x["executed_order"]), fh)
            runs.append(x)

        def sims(q):  # the executed schedules on the measured graph, all / alone q
            cq = dict(c, shared=[dict(grp, all=grp["alone"] * q)]) if q else c
            with open(os.path.join(self.d, "cq.json"), "w") as fh:
                json.dump(cq, fh)
            return [json.loads(tt.opplace(
                "simulate", os.path.join(meas, "graph.json"), "--placement", x["executed"],
                "--cluster", os.path.join(self.d, "cq.json"), "--json").stdout)["step_time_us"]
                for x in runs]

        def loss(q):
            return sum(math.log(s / x["measured_step_us"]) ** 2 for s, x in zip(sims(q), runs))
        self.assertEqual([x["simulated_probe_us"] for x in fit["runs"]], sims(None))
        best = loss(fit["all_over_alone"])
        for q in (0.3, 0.5, 0.7, 0.9, 1.0):
            self.assertLessEqual(best, loss(q) + 1e-12, q)
        self.assertIn("--fit-shared: rule 5.8's all/alone", r.stderr)
        # a trace shows one placement
        r = subprocess.run(TORCHRUN + ["--nproc-per-node", "2", "--master-port",
                                       str(free_port())] + a + ["--trace", "t.json"],
                           capture_output=True, text=True, env=env(), timeout=300)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--trace and --save-params take one --placement", r.stderr)

    def test_two_nodes(self):
        port = free_port()

        def node(rank, a):
            return TORCHRUN + ["--nnodes", "2", "--node-rank", str(rank), "--nproc-per-node",
                               "1", "--rdzv-backend", "c10d", "--rdzv-endpoint",
                               "127.0.0.1:%d" % port] + a
        args = run_args(self.d, os.path.join(self.d, "p.json"), self.outputs())
        other = subprocess.Popen(node(1, args), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True, env=env())
        try:
            self.check_run(os.path.join(self.d, "p.json"), lambda a: node(0, a))
        finally:
            _, err = other.communicate(timeout=300)
        self.assertEqual(other.returncode, 0, err[-2000:])

    def test_too_few_ranks(self):
        r = subprocess.run(TORCHRUN + ["--nproc-per-node", "1", "--master-port",
                                       str(free_port())] +
                           run_args(self.d, os.path.join(self.d, "p.json")),
                           capture_output=True, text=True, env=env(), timeout=300)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("2 devices but torchrun started 1 ranks", r.stderr)
        self.assertIn("--nproc-per-node 2", r.stderr)

    def test_a_rank_that_dies_ends_every_rank(self):
        import time
        a = run_args(self.d, os.path.join(self.d, "p.json"))
        a[a.index(MODEL)] = "roundtrip_model:dying"
        a[a.index("--steps") + 1] = "100000"  # would run for hours
        t0 = time.time()
        r = subprocess.run(TORCHRUN + ["--nproc-per-node", "2", "--master-port",
                                       str(free_port())] + a,
                           capture_output=True, text=True, env=env(), timeout=300)
        self.assertNotEqual(r.returncode, 0)
        self.assertLess(time.time() - t0, 120, "the surviving rank hung")
        self.assertIn("exitcode  : 3", r.stderr)

    def test_graph_of_another_model(self):
        other = os.path.join(self.d, "other.json")
        g = tt.load(os.path.join(self.d, "g.json"))
        g["ops"][3]["name"] += "_renamed"
        with open(other, "w") as f:
            json.dump(g, f)
        a = run_args(self.d, os.path.join(self.d, "p.json"))
        a[a.index("--graph") + 1] = other
        r = subprocess.run(TORCHRUN + ["--nproc-per-node", "2", "--master-port",
                                       str(free_port())] + a,
                           capture_output=True, text=True, env=env(), timeout=300)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("does not match the model", r.stderr)


class MedianIntervalTest(unittest.TestCase):
    def test_by_hand(self):
        """n = 10: P(X <= 1) = 11/1024 <= 0.025 < P(X <= 2) = 56/1024, so
        the interval is the 2nd and 9th smallest steps; n = 5 has none
        (P(X = 0) = 1/32 > 0.025)."""
        from opplace.torch._run import median_ci
        xs = [7.0, 3.0, 9.0, 1.0, 5.0, 8.0, 2.0, 6.0, 4.0, 10.0]
        self.assertEqual(median_ci(xs), (2.0, 9.0))
        self.assertIsNone(median_ci(xs[:5]))
        self.assertEqual(median_ci(xs[:6]), (1.0, 9.0))  # 1/64 <= 0.025: the extremes

    def test_coverage_by_brute_force(self):
        """Over every n up to 60, the interval's exact coverage (the
        binomial's mass between its order statistics) is at least 95 %,
        and one step narrower on each side it would not be."""
        from opplace.torch._run import median_ci
        for n in range(6, 61):
            lo, hi = median_ci([float(i) for i in range(1, n + 1)])
            j = int(lo)
            self.assertEqual(hi, n + 1 - j)

            def cover(j):  # P(j <= X <= n - j): x_(j) <= median < x_(n+1-j)
                return sum(math.comb(n, i) for i in range(j, n - j + 1)) / 2.0 ** n
            self.assertGreaterEqual(cover(j), 0.95)
            self.assertLess(cover(j + 1), 0.95)
        # past 1023 steps 2.0 ** n overflows a float: the normal approximation,
        # n / 2 -+ 1.96 sqrt(n) / 2 = 1200 -+ 48.0, within a step
        lo, hi = median_ci([float(i) for i in range(1, 2401)])
        self.assertLessEqual(abs(lo - (1200 - 48.0)), 1.5)
        self.assertLessEqual(abs(hi - (1201 + 48.0)), 1.5)


class BreakdownTest(unittest.TestCase):
    def test_parts_by_hand(self):
        """One rank's timeline, hand-computed: posting the receives (1.5 ms,
        not a slow send call), op a, a send of 50 us, one of 1.2 ms (slow: it
        lost its core), a wait, op c; the step ends 100 us after c."""
        from opplace.torch._run import POST_RECEIVES, breakdown
        tl = [(POST_RECEIVES, "send", 10.0, 1500.0), ("a", "op", 1510.0, 100.0),
              ("a", "send", 1610.0, 50.0), ("b", "send", 1660.0, 1200.0),
              ("c", "recv", 2860.0, 100.0), ("c", "op", 2960.0, 50.0)]
        graph = {"ops": [{"name": "a", "time_us": 80.0}, {"name": "c", "time_us": {"cpu": 40.0}}]}
        b, = breakdown([tl], graph, ["cpu"], 3100.0, [10.0], [(7.0, 9.0)])
        self.assertEqual(b, {"rank": 0, "ops": 2, "ops_us": 150.0, "graph_ops_us": 120.0,
                             "recv_wait_us": 100.0, "send_us": 2750.0, "slow_calls": 1,
                             "slow_calls_us": 1200.0, "other_us": 0.0, "idle_us": 100.0,
                             "core_wait_us": 7.0, "helper_cpu_us": 9.0})

    def test_ops_beside_another_rank_by_hand(self):
        """Two ranks on one clock: rank 0 runs a (0-100 us) and b (100-200),
        rank 1 waits, then runs c (60-130) and d (300-310).  a is covered 40
        of 100 us by c, b 30 of 100: neither ran half its time beside
        another rank's op; c ran all its 70 us beside a and b, d none.
        Without a shared clock the split is not made."""
        from opplace.torch._run import breakdown
        t0 = [("a", "op", 0.0, 100.0), ("b", "op", 100.0, 100.0)]
        t1 = [("c", "recv", 0.0, 60.0), ("c", "op", 60.0, 70.0), ("d", "op", 300.0, 10.0)]
        graph = {"ops": [{"name": "a", "time_us": 80.0}, {"name": "b", "time_us": 90.0},
                         {"name": "c", "time_us": 50.0}, {"name": "d", "time_us": 9.0}]}
        b0, b1 = breakdown([t0, t1], graph, ["cpu", "cpu"], 310.0, [0.0, 0.0], None, True)
        self.assertEqual((b0["ops_beside_us"], b0["graph_ops_beside_us"]), (0.0, 0.0))
        self.assertEqual((b1["ops_beside_us"], b1["graph_ops_beside_us"]), (70.0, 50.0))
        t1[1] = ("c", "op", 40.0, 70.0)  # now a is covered 60 of 100 us: beside
        b0, _ = breakdown([t0, t1], graph, ["cpu", "cpu"], 310.0, [0.0, 0.0], None, True)
        self.assertEqual((b0["ops_beside_us"], b0["graph_ops_beside_us"]), (100.0, 80.0))
        b0, _ = breakdown([t0, t1], graph, ["cpu", "cpu"], 310.0, [0.0, 0.0])
        self.assertNotIn("ops_beside_us", b0)


class FitSharedTest(unittest.TestCase):
    def test_known_ratio_and_brute_force(self):
        """Steps simulated as a + b / q (b: the work two ranks run at once)
        and measured at q = 0.63: the fit finds 0.63, the brute-force
        optimum over 0.30..1.00 by 0.01; a run the ratio does not touch
        changes nothing."""
        from opplace.torch._calibrate import fit_shared_ratio
        ab = [(100.0, 50.0), (20.0, 80.0), (300.0, 0.0)]

        def sim(i, q):
            return ab[i][0] + ab[i][1] / q
        measured = [sim(i, 0.63) for i in range(3)]
        self.assertEqual(fit_shared_ratio(measured, sim), 0.63)
        self.assertEqual(fit_shared_ratio(measured[:2], sim), 0.63)
        # noisy measurements: the fit is the least squared log error of the grid
        noisy = [m * f for m, f in zip(measured, (1.05, 0.97, 1.02))]
        grid = [round(0.30 + 0.01 * k, 2) for k in range(71)]
        brute = min(grid, key=lambda q: sum(math.log(sim(i, q) / m) ** 2
                                            for i, m in enumerate(noisy)))
        self.assertEqual(fit_shared_ratio(noisy, sim), brute)
        with self.assertRaisesRegex(ValueError, "no placement ran two devices"):
            fit_shared_ratio([310.0], lambda i, q: 300.0)

    def test_engine_by_hand(self):
        """formats.md's worked example of rule 5.8: a (10 us) on cpu:0 and b
        (30 us) on cpu:1 compute at once at rate q until a is done at 10/q,
        b's last 20 us alone: a step of 10/q + 20.  Measured at 41.28 us
        (q = 0.47) with the probe's 0.5 in the cluster (40 us), and both ops
        on cpu:0 measured at 41 (a step of 40 whatever q): the fitted
        cluster has all = 0.47 * alone, and says what it did."""
        from opplace.torch._calibrate import fit_cluster
        d = tt.tmpdir()
        g = {"format": "opplace-graph", "version": 1, "name": "two",
             "ops": [{"name": "a", "time_us": 10}, {"name": "b", "time_us": 30}], "edges": []}
        c = {"format": "opplace-cluster", "version": 1,
             "devices": [{"name": "cpu:%d" % i, "kind": "cpu", "memory_bytes": 1000000}
                         for i in range(2)],
             "default_link": {"latency_us": 10, "us_per_byte": 0.01},
             "shared": [{"devices": ["cpu:0", "cpu:1"], "alone": 2.0, "all": 1.0}]}
        gp = os.path.join(d, "two.json")
        with open(gp, "w") as f:
            json.dump(g, f)

        def placement(b):
            return {"format": "opplace-placement", "version": 1, "graph": "two",
                    "device_of": {"a": "cpu:0", "b": b}}
        runs = [("split", placement("cpu:1"), 10 / 0.47 + 20), ("one", placement("cpu:0"), 41.0)]
        out = fit_cluster(gp, c, runs, tt.OPPLACE)
        self.assertEqual(out["shared"], [{"devices": ["cpu:0", "cpu:1"], "alone": 2.0,
                                          "all": 2.0 * 0.47}])
        self.assertEqual(c["shared"][0]["all"], 1.0, "the given cluster changed")
        fit = out["calibration"]["shared_fit"]
        self.assertEqual((fit["all_over_alone"], fit["probe_all_over_alone"]), (0.47, 0.5))
        self.assertEqual([(r["placement"], r["simulated_probe_us"]) for r in fit["runs"]],
                         [("split", 40.0), ("one", 40.0)])
        self.assertAlmostEqual(fit["runs"][0]["simulated_fit_us"], 10 / 0.47 + 20, places=6)
        self.assertEqual(fit["runs"][1]["simulated_fit_us"], 40.0)
        with self.assertRaisesRegex(ValueError, "no shared group"):
            fit_cluster(gp, {k: v for k, v in c.items() if k != "shared"}, runs, tt.OPPLACE)
        with self.assertRaisesRegex(ValueError, "no placement ran two devices"):
            fit_cluster(gp, c, runs[1:], tt.OPPLACE)


class BareStepTest(unittest.TestCase):
    def test_same_parameters_and_state_as_opt_step(self):
        """The executor's update (_bare_step, torch.optim's step without its
        per-call wrappers) leaves every parameter and every state tensor
        bit for bit as opt.step() does, for each optimizer export offers
        (AdamW with its default weight decay), over 4 steps."""
        from opplace.torch._export import _optimizer_for
        from opplace.torch._run import _bare_step
        for name in ("adam", "adamw", "momentum", "sgd"):
            torch.manual_seed(1)
            w = torch.randn(5, 3)
            p, q = torch.nn.Parameter(w.clone()), torch.nn.Parameter(w.clone())
            ref, mine = _optimizer_for(name, [p]), _optimizer_for(name, [q])
            step = _bare_step(mine)
            for i in range(4):
                g = torch.randn(5, 3)
                p.grad, q.grad = g.clone(), g.clone()
                ref.step()
                with torch.no_grad():
                    step()
                p.grad = q.grad = None
            self.assertTrue(torch.equal(p, q), name)
            self.assertTrue(q.requires_grad, name)
            for (k, a), (k2, b) in zip(sorted(ref.state[p].items()), sorted(mine.state[q].items())):
                self.assertEqual(k, k2)
                self.assertTrue(torch.equal(torch.as_tensor(a), torch.as_tensor(b)), (name, k))
            if name != "sgd":  # plain SGD keeps no state
                self.assertTrue(mine.state[q], name)


if __name__ == "__main__":
    unittest.main()
