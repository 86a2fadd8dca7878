# opplace-test: torch1.13
"""Placements of exported graphs are realizable in PyTorch: in the
placement of EVERY algorithm of `opplace algos`, every backward op shares its
forward op's device and every update its parameter holder's device."""
import os
import time
import unittest

import torchtest as tt
import torch

import opplace.torch as ot

# these tests hold the torch.fx capture (module granularity) to its contract on
# every torch version; the aten capture has its own (test_torch_capture.py)
def ot_export(*args, **kwargs):
    return ot.export(*args, capture="fx", **kwargs)
from opplace.torch.examples import gpt
from roundtrip_model import RoundTrip, example


class ColocationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.dir = tt.tmpdir()
        cls.graphs = {}
        p = os.path.join(cls.dir, "roundtrip.json")
        ot_export(RoundTrip(), example(), p)
        cls.graphs["roundtrip"] = p
        p = os.path.join(cls.dir, "gpt.json")
        ot_export(gpt(layers=2, d_model=64, heads=4, vocab=500, seq=32),
                  (torch.zeros(4, 32, dtype=torch.long),), p)
        cls.graphs["gpt"] = p

    def test_every_algorithm(self):
        algos = tt.algorithms()
        self.assertGreaterEqual(len(algos), 10)
        for gname, path in self.graphs.items():
            graph = tt.load(path)
            n_groups = len({o["colocate"] for o in graph["ops"] if o.get("colocate")})
            self.assertGreater(n_groups, 5)
            for algo in algos:
                with self.subTest(graph=gname, algo=algo):
                    out = os.path.join(self.dir, "%s_%s.json" % (gname, algo))
                    t0 = time.time()
                    # pesto: 4 s, as CBC 2.10 crashes (SIGSEGV in
                    # CglPreProcess::postProcess) in most runs with a 1 s limit
                    budget = 4 if algo == "pesto" else 1
                    tt.opplace("place", path, "--preset", "v100-nvlink", "--gpus", 4,
                               "--algo", algo, "--budget-seconds", budget, "--quiet", "-o", out)
                    placement = tt.load(out)
                    self.assertEqual(tt.check_realizable(graph, placement), [], algo)
                    print("%s %s: %.1f s, %d devices" % (
                        gname, algo, time.time() - t0,
                        len(set(placement["device_of"].values()))))


if __name__ == "__main__":
    unittest.main()
