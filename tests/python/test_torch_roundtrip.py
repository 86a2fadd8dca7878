# opplace-test: torch1.13
"""opplace.torch round trip: export -> opplace place -> apply ->
training that equals single-device training."""
import copy
import json
import os
import unittest

import torchtest as tt
import torch
import torch.nn as nn

import opplace.torch as ot

# these tests hold the torch.fx capture (module granularity) to its contract on
# every torch version; the aten capture has its own (test_torch_capture.py)
def ot_export(*args, **kwargs):
    return ot.export(*args, capture="fx", **kwargs)
from opplace.torch._trace import TraceFailure
from roundtrip_model import RoundTrip, example


def train(module, inputs, steps=3):
    opt = torch.optim.Adam(module.parameters(), lr=1e-2)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = module(*inputs).float().pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


class RoundTripTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.dir = tt.tmpdir()
        cls.model = RoundTrip()
        cls.graph_path = os.path.join(cls.dir, "g.json")
        ot_export(cls.model, example(), cls.graph_path)
        cls.graph = tt.load(cls.graph_path)
        cls.ops = {o["name"]: o for o in cls.graph["ops"]}

    def test_graph_structure(self):
        ops = self.ops
        # forward op names are the fx node names; the shared LSTM cell is
        # called at every step, every call in the module's group
        for n in ("tokens", "image", "embed", "lstm", "conv", "bn", "norm", "head", "cell",
                  "cell_3", "loss"):
            self.assertIn(n, ops)
        self.assertNotIn("cell_4", ops)
        self.assertEqual({ops["cell_%d" % i]["colocate"] for i in (1, 2, 3)}, {"param:cell"})
        # tied weight: one update, in the embedding's group; the head gets a copy
        self.assertIn("u/embed.weight", ops)
        self.assertNotIn("u/head.weight", ops)
        self.assertEqual(ops["u/embed.weight"]["colocate"], ops["embed"]["colocate"])
        edges = {(e["src"], e["dst"]): e["bytes"] for e in self.graph["edges"]}
        self.assertEqual(edges[("embed", "head")], 50 * 16 * 4)
        # param bytes by hand: the head holds only its bias; Adam state on updates
        self.assertEqual(ops["head"]["param_bytes"], 50 * 4)
        self.assertEqual(ops["embed"]["param_bytes"], 50 * 16 * 4)
        self.assertEqual(ops["conv"]["param_bytes"], (8 * 3 * 3 * 3 + 8) * 4)
        self.assertEqual(ops["u/conv.weight"]["param_bytes"], 2 * 8 * 3 * 3 * 3 * 4)
        # every backward op is colocated with its forward op, every update
        # with its parameter's holder
        n_b = 0
        for name, o in ops.items():
            if name.startswith("b/"):
                n_b += 1
                owner = name[2:].rsplit("/", 1)[0]
                self.assertIsNotNone(o.get("colocate"), name)
                self.assertEqual(o["colocate"], ops[owner]["colocate"], name)
            if name.startswith("u/"):
                self.assertTrue(o["colocate"].startswith("param:"), name)
        self.assertGreater(n_b, 20)
        # one update per trainable parameter (the tied one once)
        n_params = len(list(self.model.named_parameters()))
        self.assertEqual(sum(1 for n in ops if n.startswith("u/")), n_params)
        # estimate:v100 times are GPU times, and say so
        self.assertEqual(set(ops["conv"]["time_us"]), {"gpu"})
        self.assertEqual(self.graph["torch"]["time_kind"], "gpu")

    def _round_trip(self, algo, extra=()):
        pl = os.path.join(self.dir, "p_%s.json" % algo)
        tt.opplace("place", self.graph_path, "--preset", "v100-nvlink", "--gpus", 4,
                   "--algo", algo, "-o", pl, "--quiet", *extra)
        placement = tt.load(pl)
        self.assertEqual(tt.check_realizable(self.graph, placement), [])
        ref = copy.deepcopy(self.model)
        before = {n: p.detach().clone() for n, p in self.model.named_parameters()}
        placed = ot.apply(self.model, self.graph_path, pl, {d: "cpu" for d in
                                                           set(placement["device_of"].values())})
        # the user's model is untouched (apply copies by default)
        for n, p in self.model.named_parameters():
            self.assertTrue(torch.equal(p, before[n]))
        self.assertEqual([n for n, _ in placed.named_parameters()],
                         [n for n, _ in self.model.named_parameters()])
        inputs = example()
        with torch.no_grad():
            torch.testing.assert_close(placed(*inputs), ref(*inputs), rtol=1e-5, atol=1e-6)
        got = train(placed, inputs)
        want = train(ref, inputs)
        torch.testing.assert_close(torch.tensor(got), torch.tensor(want), rtol=1e-5, atol=1e-6)
        for (n, p), (n2, q) in zip(placed.named_parameters(), ref.named_parameters()):
            self.assertEqual(n, n2)
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=n)
        # every parameter lives on its placed device: its update op's
        for n, p in placed.named_parameters():
            self.assertEqual(placed.opplace_devices[n], placement["device_of"]["u/" + n], n)
            self.assertEqual(p.device, torch.device("cpu"))
        self.assertEqual(set(placed.opplace_devices), {n for n, _ in self.model.named_parameters()})
        # the tied weight is still one tensor
        self.assertIs(placed.head.weight, placed.embed.weight)
        return placement

    def test_round_robin(self):
        placement = self._round_trip("round-robin")
        self.assertGreaterEqual(len(set(placement["device_of"].values())), 3)

    def test_auto(self):
        self._round_trip("auto", ("--budget-seconds", 2))

    def test_measured_times_are_cpu_times(self):
        path = os.path.join(self.dir, "m.json")
        ot_export(self.model, example(), path, times="measure", repeat=1)
        g = tt.load(path)
        self.assertEqual({k for o in g["ops"] for k in o["time_us"]}, {"cpu"})
        self.assertGreater(sum(o["time_us"]["cpu"] for o in g["ops"]), 0)
        # on a GPU-only cluster the graph is refused, never silently used
        r = tt.opplace("info", path, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("can run on no device", r.stderr)
        r = tt.opplace("info", path, "--preset", "v100-nvlink", "--gpus", 1, "--cpu")
        self.assertEqual(r.returncode, 0)

    def test_linear_by_hand(self):
        m = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
        path = os.path.join(self.dir, "lin.json")
        g = ot_export(m, (torch.randn(5, 4),), path, times="estimate:v100", optimizer="sgd")
        ops = {o["name"]: o for o in g["ops"]}
        self.assertEqual(ops["0"]["param_bytes"], (4 * 3 + 3) * 4)
        self.assertEqual(ops["u/0.weight"]["param_bytes"], 0)  # sgd: no state
        # roofline: 5 us launch + max(2*5*3*4 FLOPs / 15.7e12, bytes / 900e9)
        self.assertAlmostEqual(ops["0"]["time_us"]["gpu"], 5.0, places=2)
        edges = {(e["src"], e["dst"]): e["bytes"] for e in g["edges"]}
        self.assertEqual(edges[("0", "1")], 5 * 3 * 4)
        inp = [o["name"] for o in g["ops"] if o["type"] == "Input"]
        self.assertEqual(len(inp), 1)
        self.assertEqual(edges[(inp[0], "0")], 5 * 4 * 4)

    def test_two_kinds_of_estimates(self):
        m = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        g = ot_export(m, (torch.randn(8, 64),), os.path.join(self.dir, "k.json"),
                      times="estimate:v100,cpu")
        ops = {o["name"]: o for o in g["ops"]}
        t = ops["0"]["time_us"]
        self.assertEqual(set(t), {"gpu", "cpu"})
        # roofline by hand: 2*8*64*64 FLOPs; bytes in + out + weights
        flops = 2 * 8 * 64 * 64
        nbytes = (8 * 64 + 8 * 64 + 64 * 64 + 64) * 4
        self.assertAlmostEqual(t["gpu"], 5.0 + max(flops / 15.7e12, nbytes / 900e9) * 1e6, places=3)
        self.assertAlmostEqual(t["cpu"], 2.0 + max(flops / 1.3248e12, nbytes / 76.8e9) * 1e6,
                               places=3)
        with self.assertRaises(ValueError):
            ot_export(m, (torch.randn(8, 64),), os.path.join(self.dir, "k2.json"),
                      times="estimate:v100,a100")

    def test_order_is_followed_and_measure(self):
        """A single-device placement with an order that runs the conv
        branch first: apply issues the forward ops in that order."""
        g = self.graph
        order = [o["name"] for o in g["ops"]]
        conv_first = ["image", "conv", "bn"]
        fwd = [n for n in order if n in conv_first] + [n for n in order if n not in conv_first]
        placement = {"format": "opplace-placement", "version": 1, "graph": g["name"],
                     "device_of": {n: "gpu:0" for n in order}, "order": {"gpu:0": fwd}}
        pl = os.path.join(self.dir, "ordered.json")
        with open(pl, "w") as f:
            json.dump(placement, f)
        tt.opplace("simulate", self.graph_path, "--placement", pl, "--preset", "v100-nvlink",
                   "--gpus", 1)
        placed = ot.apply(self.model, self.graph_path, pl, {"gpu:0": "cpu"})
        issued = [placed._opplace_names[n.name] for n in placed._opplace_nodes]
        ops = [n for n in issued if n in self.ops]
        self.assertEqual(ops[:3], ["image", "conv", "bn"])
        self.assertLess(ops.index("conv"), ops.index("embed"))
        ref = copy.deepcopy(self.model)
        torch.testing.assert_close(train(placed, example()), train(ref, example()),
                                   rtol=1e-5, atol=1e-6)
        # measure(): the simulated step is opplace's, the measured one positive
        r = ot.measure(self.model, example(), self.graph_path, pl, "cpu",
                       self._cluster(), steps=2, warmup=1)
        sim = json.loads(tt.opplace("simulate", self.graph_path, "--placement", pl,
                                    "--cluster", self._cluster(), "--json").stdout)
        self.assertEqual(r["simulated_step_us"], sim["step_time_us"])
        self.assertGreater(r["measured_step_us"], 0)
        self.assertEqual(len(r["step_us"]), 2)

    def _cluster(self):
        path = os.path.join(self.dir, "c.json")
        tt.opplace("cluster", "--preset", "v100-nvlink", "--gpus", 1, "-o", path)
        return path

    def test_trace_failure_is_clear(self):
        class Branchy(nn.Module):
            def __init__(self):
                super().__init__()
                self.inner = nn.Sequential(nn.Linear(4, 4), Gate())

            def forward(self, x):
                return self.inner(x)

        class Gate(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

            def forward(self, x):
                if x.sum() > 0:  # data-dependent: cannot be traced on meta tensors
                    return self.lin(x)
                return x

        with self.assertRaises(TraceFailure) as cm:
            ot_export(Branchy(), (torch.randn(2, 4),), os.path.join(self.dir, "b.json"))
        msg = str(cm.exception)
        self.assertIn("Branchy", msg)
        self.assertIn("inner.1", msg)
        self.assertIn("What to do", msg)

    def test_cli_export(self):
        path = os.path.join(self.dir, "cli.json")
        env = dict(os.environ, PYTHONPATH=os.path.join(tt.ROOT, "python") + os.pathsep + tt.HERE)
        import subprocess
        import sys
        r = subprocess.run([sys.executable, "-m", "opplace.torch", "export",
                            "roundtrip_model:RoundTrip", "--input", "2x4:int64",
                            "--input", "2x3x8x8", "--capture", "fx", "-o", path],
                           capture_output=True, text=True,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("on the meta device", r.stderr)
        g = tt.load(path)
        self.assertEqual(len(g["ops"]), len(self.graph["ops"]))
        r = subprocess.run([sys.executable, "-m", "opplace.torch", "export",
                            "roundtrip_model:NoSuch", "--input", "2x4", "-o", path],
                           capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("has no 'NoSuch'", r.stderr)


if __name__ == "__main__":
    unittest.main()
