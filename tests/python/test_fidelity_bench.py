#!/usr/bin/env python3
"""The real-run fidelity benchmark's own judgement (bench/fidelity_real.py):
which placements it runs as one, and the statistics its table reports,
against hand-computed values and the simulator's rules."""
import json
import math
import os
import sys
import tempfile
import unittest

import torchtest as tt

sys.path.insert(0, os.path.join(tt.ROOT, "bench"))
import fidelity_real as fr  # noqa: E402
import noise_max as nm  # noqa: E402

# a diamond: a feeds b and c, both feed d
GRAPH = {"format": "opplace-graph", "version": 1, "name": "diamond",
         "ops": [{"name": n, "time_us": t, "output_bytes": 1000}
                 for n, t in (("a", 10.0), ("b", 30.0), ("c", 20.0), ("d", 5.0))],
         "edges": [{"src": s, "dst": d} for s, d in (("a", "b"), ("a", "c"),
                                                     ("b", "d"), ("c", "d"))]}
CLUSTER = {"format": "opplace-cluster", "version": 1,
           "devices": [{"name": "cpu:%d" % i, "kind": "cpu", "memory_bytes": 1 << 30}
                       for i in range(2)],
           "default_link": {"latency_us": 4.0, "us_per_byte": 0.001}}


def placement(device_of, order, graph="diamond"):
    return {"format": "opplace-placement", "version": 1, "graph": graph,
            "device_of": device_of, "order": order}


ONE = {n: "cpu:0" for n in "abcd"}
TWO = {"a": "cpu:0", "b": "cpu:0", "c": "cpu:0", "d": "cpu:1"}


class IdentityTest(unittest.TestCase):
    def test_one_device_orders_are_one_placement(self):
        x = placement(ONE, {"cpu:0": ["a", "b", "c", "d"]})
        y = placement(ONE, {"cpu:0": ["a", "c", "b", "d"]})
        self.assertEqual(fr.identity(x), fr.identity(y))
        self.assertEqual(fr.identity(x), fr.identity(placement(ONE, None)))

    def test_devices_and_two_device_orders_tell_placements_apart(self):
        other = placement({n: "cpu:1" for n in "abcd"}, {"cpu:1": ["a", "b", "c", "d"]})
        self.assertNotEqual(fr.identity(placement(ONE, None)), fr.identity(other))
        x, y = (placement(TWO, {"cpu:0": o, "cpu:1": ["d"]}) for o in (list("abc"), list("acb")))
        self.assertNotEqual(fr.identity(x), fr.identity(y))
        self.assertNotEqual(fr.identity(x), fr.identity(placement(TWO, None)))

    def test_the_simulator_agrees(self):
        """What identity relies on, by formats.md 5's rules: on one device
        every order of the diamond simulates to its ops' sum, 65 us; on two
        the order moves the step.  a (10), b (30), c (20) on cpu:0 and e
        (40, needing c) on cpu:1, a transfer of 1000 B taking 4 + 1 us:
        a, b, c puts c at 40-60, e at 65-105; a, c, b puts c at 10-30, e at
        35-75 while b runs 30-60: 75 us."""
        def sim(graph, p):
            with tempfile.TemporaryDirectory() as tmp:
                paths = []
                for name, doc in (("g", graph), ("c", CLUSTER), ("p", p)):
                    paths.append(os.path.join(tmp, name + ".json"))
                    with open(paths[-1], "w") as f:
                        json.dump(doc, f)
                out = tt.opplace("simulate", paths[0], "--placement", paths[2],
                                 "--cluster", paths[1], "--json").stdout
            return json.loads(out)["step_time_us"]
        for order in (list("abcd"), list("acbd")):
            self.assertAlmostEqual(sim(GRAPH, placement(ONE, {"cpu:0": order})), 65.0)
        fork = {"format": "opplace-graph", "version": 1, "name": "fork",
                "ops": [{"name": n, "time_us": t, "output_bytes": 1000}
                        for n, t in (("a", 10.0), ("b", 30.0), ("c", 20.0), ("e", 40.0))],
                "edges": [{"src": s, "dst": d} for s, d in (("a", "b"), ("a", "c"),
                                                            ("c", "e"))]}
        two = {"a": "cpu:0", "b": "cpu:0", "c": "cpu:0", "e": "cpu:1"}
        steps = [sim(fork, placement(two, {"cpu:0": o, "cpu:1": ["e"]}, "fork"))
                 for o in (list("abc"), list("acb"))]
        self.assertAlmostEqual(steps[0], 105.0)
        self.assertAlmostEqual(steps[1], 75.0)
        self.assertNotEqual(fr.identity(placement(two, {"cpu:0": list("abc"), "cpu:1": ["e"]})),
                            fr.identity(placement(two, {"cpu:0": list("acb"), "cpu:1": ["e"]})))


class StatisticsTest(unittest.TestCase):
    def test_noise_ceiling(self):
        # halves agreeing 0.6: the whole's reliability 1.2 / 1.6 = 0.75, ceiling sqrt(0.75)
        self.assertAlmostEqual(fr.noise_ceiling(0.6), math.sqrt(0.75))
        self.assertAlmostEqual(fr.noise_ceiling(1.0), 1.0)
        self.assertEqual(fr.noise_ceiling(0.0), 0.0)
        self.assertEqual(fr.noise_ceiling(-0.5), 0.0)
        self.assertEqual(fr.noise_ceiling(-1.0), 0.0)
        self.assertTrue(math.isnan(fr.noise_ceiling(float("nan"))))

    def test_spearman_by_hand(self):
        self.assertAlmostEqual(fr.spearman([1, 2, 3, 4], [10, 20, 30, 40]), 1.0)
        self.assertAlmostEqual(fr.spearman([1, 2, 3, 4], [40, 30, 20, 10]), -1.0)
        # ranks 0 1 2 3 against 1 0 3 2: 1 - 6 * 4 / (4 * 15) = 0.6
        self.assertAlmostEqual(fr.spearman([1, 2, 3, 4], [2, 1, 4, 3]), 0.6)
        # a tie takes the mean rank: x ranks 0.5 0.5 2, y 0 1 2 -> 0.866
        self.assertAlmostEqual(fr.spearman([5, 5, 7], [1, 2, 3]), math.sqrt(3) / 2)
        self.assertTrue(math.isnan(fr.spearman([1], [1])))

    def test_concordance_counts_only_pairs_apart(self):
        meas = [100.0, 103.0, 120.0]  # 100-103 within 5 %: not counted
        self.assertEqual(fr.concordance([1.0, 0.5, 2.0], meas), (2, 2))
        self.assertEqual(fr.concordance([2.0, 3.0, 1.0], meas), (0, 2))

    def test_split_half(self):
        rows = [{"steps_us": [10, 11, 10, 11]}, {"steps_us": [20, 21, 20, 21]},
                {"steps_us": [30, 29, 30, 29]}]
        self.assertAlmostEqual(fr.split_half(rows), 1.0)
        self.assertTrue(math.isnan(fr.split_half([{"steps_us": [1]}, {"steps_us": [2]}])))


class NoiseAtJoinsTest(unittest.TestCase):
    """bench/noise_max.py against hand computation: x and y, 10 us each and
    independent; the ranks' factors from two one-device steps (0.5 and 1.5
    of their median: the quantile function 0.5 + u), at the 7 x 7 lattice
    u = 1/14, 3/14, ..., 13/14."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        graph = {"format": "opplace-graph", "version": 1, "name": "xy", "edges": [],
                 "ops": [{"name": n, "time_us": 10.0, "output_bytes": 8} for n in "xy"]}
        self.row = {}
        for key, doc in (("graph", graph), ("cluster", CLUSTER)):
            self.row[key] = os.path.join(self.tmp.name, key + ".json")
            with open(self.row[key], "w") as f:
                json.dump(doc, f)

    def tearDown(self):
        self.tmp.cleanup()

    def median(self, device_of, order, rho):
        path = os.path.join(self.tmp.name, "p.json")
        with open(path, "w") as f:
            json.dump(placement(device_of, order, "xy"), f)
        return nm.noisy_median_us(tt.OPPLACE, dict(self.row, executed=path),
                                  nm.draws([0.5, 1.5], rho), self.tmp.name)

    def test_quantile_and_pearson_by_hand(self):
        self.assertAlmostEqual(nm.quantile([3, 1, 2, 4], 0.5), 2.5)
        self.assertAlmostEqual(nm.quantile([0.5, 1.5], 9 / 14), 0.5 + 9 / 14)
        self.assertAlmostEqual(nm.pearson([1, 2, 3], [2, 4, 6]), 1.0)
        self.assertAlmostEqual(nm.pearson([1, 2, 3], [3, 2, 1]), -1.0)
        self.assertEqual(len(nm.draws([0.5, 1.5], 0.3)), 49)

    def test_independent_ranks_wait_for_the_slower(self):
        """Side by side the step is 10 max(f0, f1): max(u0, u1) <= u_k for
        (k + 1)^2 of the 49 pairs, so the median (the 25th) is at k = 4,
        10 (0.5 + 9/14) = 11.43 us, where the median factor gives 10."""
        side = self.median({"x": "cpu:0", "y": "cpu:1"}, {"cpu:0": ["x"], "cpu:1": ["y"]}, 0.0)
        self.assertAlmostEqual(side, 10 * (0.5 + 9 / 14), places=6)

    def test_one_device_and_ranks_in_step_keep_the_median(self):
        """On one device the step is 20 f0, whose median is 20; ranks whose
        speeds move together (rho 1) give 10 max(f, f): 10."""
        one = self.median({"x": "cpu:0", "y": "cpu:0"}, {"cpu:0": ["x", "y"]}, 0.0)
        self.assertAlmostEqual(one, 20.0, places=6)
        side = self.median({"x": "cpu:0", "y": "cpu:1"}, {"cpu:0": ["x"], "cpu:1": ["y"]}, 1.0)
        self.assertAlmostEqual(side, 10.0, places=6)


if __name__ == "__main__":
    unittest.main()
