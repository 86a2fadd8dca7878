"""torchrun --nproc-per-node N -m opplace.torch calibrate -o cluster.json

Measures the machine the ranks run on and writes an opplace-cluster file
(docs/formats.md section 2):

- devices: rank i is device i; a rank on a GPU (the first --gpus local ranks
  of each node, default: as many as the node has) is `gpu:k` with the card's
  memory, any other `cpu:k` with the node's memory divided by its cpu ranks;
- links: for each ordered pair of ranks, point-to-point transfers over a
  range of sizes, fitted to latency_us + us_per_byte * bytes by least
  squares (the model and the fit of `opplace fit-comm`; --csv writes the
  measurements in its CSV, device names in the kind columns);
- each link's host cost per transfer at its two ends (formats.md 5.9):
  transfers both ways at once between each pair, both ranks computing
  between them, as in a step of `run` (with --model, the model's own step):
  the sender's wall time in its send calls, and the rest of the wall time
  the transfers add to the computing as the receiver's, which an idle rank
  does not pay (the key recv_idle_free);
- shared (formats.md 5.8): a fixed single-precision matmul stream timed on
  each cpu rank alone and on all ranks at once (barrier-synchronised);
  cpu ranks of one node form a group with the measured throughputs.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import time
from typing import Callable, List, Optional, Protocol, Sequence, Tuple

import torch
import torch.distributed as dist

from . import _dist

DEFAULT_SIZES = [4, 1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22, 1 << 24]


def _log(rank: int, msg: str) -> None:
    if rank == 0:
        print("opplace.torch calibrate: " + msg, file=sys.stderr, flush=True)


def _size(text: str) -> int:
    """'4', '64K', '1M', '16MiB' -> bytes."""
    t = text.strip().upper().replace("IB", "").replace("B", "")
    mult = 1
    if t and t[-1] in "KMG":
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[t[-1]]
        t = t[:-1]
    try:
        n = int(float(t) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError("size %r: give bytes, e.g. 4, 64K, 1M" % text)
    if n < 4 or n > 1 << 31:
        raise argparse.ArgumentTypeError("size %r: must be from 4 bytes to 2 GiB" % text)
    return n


# ---------------------------------------------------------------- fitting


def linear_fit(x: Sequence[float], y: Sequence[float]) -> Tuple[float, float, float]:
    """Ordinary least squares y = a + b x: (a, b, R^2), as op_linear_fit
    (src/cost/comm_fit.c) computes it for `opplace fit-comm`."""
    n = len(x)
    if n < 2 or len(set(x)) < 2:
        raise ValueError("a linear fit needs at least 2 distinct sizes")
    mx, my = sum(x) / n, sum(y) / n
    sxx = sum((v - mx) ** 2 for v in x)
    sxy = sum((u - mx) * (v - my) for u, v in zip(x, y))
    b = sxy / sxx
    a = my - b * mx
    ss_tot = sum((v - my) ** 2 for v in y)
    ss_res = sum((v - a - b * u) ** 2 for u, v in zip(x, y))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return a, b, r2


# ---------------------------------------------------------------- devices


def _node_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    raise _dist.DistError("cannot read this machine's memory size")


def _my_device(local_rank: int, gpus: Optional[int]) -> Tuple[str, str, int]:
    """(kind, torch device, memory_bytes) of this rank; cpu memory is
    filled in later (the node's divided by its cpu ranks)."""
    n_cuda = torch.cuda.device_count() if torch.cuda.is_available() else 0
    g = n_cuda if gpus is None else gpus
    if local_rank < g:
        if local_rank >= n_cuda:
            raise _dist.DistError("--gpus %d: local rank %d has no CUDA device (this node has "
                                  "%d)" % (g, local_rank, n_cuda))
        torch.cuda.set_device(local_rank)
        mem = torch.cuda.get_device_properties(local_rank).total_memory
        return "gpu", "cuda:%d" % local_rank, int(mem)
    return "cpu", "cpu", 0


def describe_ranks(infos: List[dict]) -> List[dict]:
    """Device entries of the cluster file, rank order: names kind:k with k
    counted per kind; a cpu rank gets its node's memory / its node's cpu ranks."""
    per_node_cpu = {}
    for r in infos:
        if r["kind"] == "cpu":
            per_node_cpu[r["host"]] = per_node_cpu.get(r["host"], 0) + 1
    count = {}
    out = []
    for r in infos:
        k = count.get(r["kind"], 0)
        count[r["kind"]] = k + 1
        mem = r["mem"] if r["kind"] == "gpu" else r["node_mem"] // per_node_cpu[r["host"]]
        out.append({"name": "%s:%d" % (r["kind"], k), "kind": r["kind"], "memory_bytes": int(mem),
                    "speed": 1.0})
    return out


# ---------------------------------------------------------------- transfers


def _send(t: torch.Tensor, dst: int, staged: bool, group) -> None:
    """staged: a GPU tensor over gloo goes through the CPU, as the executor sends it."""
    dist.send(t.cpu() if staged else t, dst, group=group)


def _recv(t: torch.Tensor, src: int, staged: bool, group) -> None:
    if staged:
        buf = torch.empty(t.shape, dtype=t.dtype)
        dist.recv(buf, src, group=group)
        t.copy_(buf)
    else:
        dist.recv(t, src, group=group)


def _pingpong(me: int, s: int, d: int, nbytes: int, reps: int, dev: str, staged: bool,
              ack: torch.Tensor, group=None) -> List[float]:
    """s sends nbytes to d, d answers with 4 bytes; s times each round (us)."""
    buf = torch.zeros(max(nbytes // 4, 1), dtype=torch.float32, device=dev)
    times = []
    for i in range(reps + 1):  # the first round warms up
        if me == s:
            if dev.startswith("cuda"):
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            _send(buf, d, staged, group)
            _recv(ack, d, staged, group)
            if dev.startswith("cuda"):
                torch.cuda.synchronize()
            if i:
                times.append((time.perf_counter() - t0) * 1e6)
        elif me == d:
            _recv(buf, s, staged, group)
            _send(ack, s, staged, group)
    return times


def measure_links(me: int, world: int, sizes: Sequence[int], reps: int, dev: str,
                  staged: bool, timeout_s: float, names: Sequence[str],
                  group=None) -> List[dict]:
    """Every ordered pair's one-way transfer time per size (median of reps):
    round trip of (size there, 4 bytes back) less half the 4-byte round trip."""
    ack = torch.zeros(1, dtype=torch.float32, device=dev)
    rows = []
    for s in range(world):
        for d in range(world):
            if s == d:
                continue
            _dist.barrier(timeout_s, "calibrate: transfers %s->%s" % (names[s], names[d]))
            # warm up the pair's connection and buffers at the largest size
            _pingpong(me, s, d, max(sizes), 2, dev, staged, ack, group)
            base = _pingpong(me, s, d, 4, reps, dev, staged, ack, group)
            meds = [_pingpong(me, s, d, b, reps, dev, staged, ack, group) for b in sizes]
            if me == s:
                half = statistics.median(base) / 2.0
                for b, ts in zip(sizes, meds):
                    rtt = statistics.median(ts)
                    # a disturbed 4-byte round trip (a busy machine) can exceed this
                    # one: then half of this round trip, not a one-way time of 0
                    rows.append({"src": names[s], "dst": names[d], "bytes": b,
                                 "time_us": rtt - half if rtt > 2 * half else rtt / 2,
                                 "half_rtt_us": half})
    return rows


HOST_GAP_S = 5e-4  # compute between two transfers of the matmul host-cost rounds
HOST_TRANSFERS = 64  # transfers each way a host-cost round


class HostWork(Protocol):
    """The compute between a host-cost round's transfers: run(hook) computes
    once and calls hook (when given) after each of its n pieces."""
    n: int
    what: str

    def run(self, hook: Optional[Callable[[], None]]) -> None: ...


class MatmulWork:
    """The compute between a host-cost round's transfers: n pieces of
    gap_s of 48 x 48 matmuls (operands in the L1 cache)."""

    def __init__(self, n: int = HOST_TRANSFERS, gap_s: float = HOST_GAP_S):
        self.n, self.gap_s = n, gap_s
        self.what = "%d x %g ms of 48x48 matmuls" % (n, gap_s * 1e3)

    def run(self, hook: Optional[Callable[[], None]]) -> None:
        for _ in range(self.n):
            _matmul_window(48, self.gap_s, "cpu")
            if hook is not None:
                hook()


class _Pieces:
    """A replay that calls hook() after every `every` op groups it runs."""

    def __init__(self, replay, every: int):
        self.replay, self.every, self.k = replay, every, 0
        self.hook: Optional[Callable[[], None]] = None

    def run_group(self, name: str, env: dict) -> None:
        self.replay.run_group(name, env)
        self.k += 1
        if self.hook is not None and self.k % self.every == 0:
            self.hook()


class StepWork:
    """The compute between a host-cost round's transfers: the model's own
    one-device training step (`model_step`), a transfer after every
    `every` op groups, about `per_round` in all."""

    def __init__(self, step, x: tuple, per_round: int = HOST_TRANSFERS):
        self.step, self.x, self.replay = step, x, step.replay
        counter = _Pieces(step.replay, 1)  # no hook yet: it counts the op groups
        step.replay = counter
        step(x)
        groups = counter.k
        counter.every = max(1, groups // per_round)
        self.pieces, self.n = counter, groups // counter.every
        self.what = "the model's step, a transfer every %d of its %d op groups" % (
            counter.every, groups)

    def run(self, hook: Optional[Callable[[], None]]) -> None:
        self.pieces.k, self.pieces.hook = 0, hook
        try:
            self.step(self.x)
        finally:
            self.pieces.hook = None
        if self.x and self.x[0].device.type == "cuda":
            torch.cuda.synchronize()

    def close(self) -> None:
        """The step as it was (no call per op group)."""
        self.step.replay = self.replay


def _host_round(peer: int, nbytes: int, dev: str, staged: bool, work: HostWork, transfers: bool,
                timeout_s: float) -> Tuple[float, float]:
    """(wall s, s inside the send calls) of one round of `work` on this
    rank and its peer at once; with `transfers`, made as the executor makes
    them within a step: both have posted their irecvs into buffers they
    keep, isend one transfer of nbytes to each other after each piece of
    the work (a GPU tensor staged through host memory) and wait for
    everything at the end."""
    x = torch.zeros(max(nbytes // 4, 1), dtype=torch.float32, device=dev)
    bufs = [torch.zeros(x.shape, dtype=x.dtype) for _ in range(work.n)] if transfers else []
    sends: list = []
    inside = [0.0]

    def send() -> None:
        w0 = time.perf_counter()
        sends.append(dist.isend(x.cpu() if staged else x, peer, tag=len(sends)))
        inside[0] += time.perf_counter() - w0
    _dist.barrier(timeout_s, "calibrate: host costs")
    t0 = time.perf_counter()
    recvs = [dist.irecv(b, peer, tag=i) for i, b in enumerate(bufs)]
    work.run(send if transfers else None)
    for w in recvs + sends:
        w.wait()
    if staged:
        for b in bufs:
            b.to(dev)
    return time.perf_counter() - t0, inside[0]


def measure_host(me: int, world: int, sizes: Sequence[int], dev: str, staged: bool,
                 work: HostWork, names: Sequence[str], timeout_s: float,
                 rounds: int = 3) -> List[dict]:
    """This rank's host cost per transfer, as sender and as receiver, for
    every pair of ranks it is in, both ways at once, and every size: rounds
    of the work alone and with work.n transfers each way, alternating
    (after one of each that warms up), both ranks of the pair at once.
    Sending costs the wall time inside the send calls; receiving, the rest
    of the wall time the transfers add to the work (median with less
    median without), per transfer: gloo's threads taking the cores that
    compute, and what they leave of the work's caches, which the threads'
    CPU time does not show (the model's step lost 1.6-2.1x a matmul's per
    transfer here, bench/RESULTS.md).  A transfer that reaches an idle
    rank costs it nothing of this (the cluster's recv_idle_free)."""
    rows = []
    for s in range(world):
        for d in range(s + 1, world):
            for b in sizes:
                if me not in (s, d):
                    for _ in range(2 * (rounds + 1)):
                        _dist.barrier(timeout_s, "calibrate: host costs")
                    continue
                peer = d if me == s else s
                alone, busy = [], []
                for _ in range(rounds + 1):
                    alone.append(_host_round(peer, b, dev, staged, work, False, timeout_s))
                    busy.append(_host_round(peer, b, dev, staged, work, True, timeout_s))
                alone, busy = alone[1:], busy[1:]
                send = statistics.median(u[1] for u in busy) * 1e6 / work.n
                extra = (statistics.median(u[0] for u in busy) -
                         statistics.median(u[0] for u in alone)) * 1e6 / work.n
                rows.append({"src": names[me], "dst": names[peer], "bytes": b, "side": "send",
                             "host_us": send})
                rows.append({"src": names[peer], "dst": names[me], "bytes": b, "side": "recv",
                             "host_us": max(extra - send, 0.0)})
    return rows


def fit_host(rows: Sequence[dict], names: Sequence[str]) -> dict:
    """(src, dst) -> {send_us, send_us_per_byte, recv_us, recv_us_per_byte}:
    each end's cost per transfer fitted to a + b * bytes (negative parts,
    noise, are 0)."""
    out = {}
    for s in names:
        for d in names:
            if s == d:
                continue
            h = {}
            for side in ("send", "recv"):
                pts = [r for r in rows if r["src"] == s and r["dst"] == d and r["side"] == side]
                if len(pts) < 2:
                    continue
                a, b, _ = linear_fit([r["bytes"] for r in pts], [r["host_us"] for r in pts])
                h[side + "_us"] = max(a, 0.0)
                h[side + "_us_per_byte"] = max(b, 0.0)
            if h:
                out[(s, d)] = h
    return out


MIN_US_PER_BYTE = 1e-6  # 1 TB/s: a fitted slope below it is the samples' noise


def fit_links(rows: Sequence[dict], names: Sequence[str]) -> List[dict]:
    """One link per ordered pair from its rows; an intercept <= 0 (noise at
    small sizes) is replaced by half the pair's 4-byte round trip, the
    one-way time of the smallest message, and a slope below MIN_US_PER_BYTE
    (faster than any wire: a disturbed large transfer) by the largest
    transfer's time per byte; "fit" keeps the fit itself."""
    links = []
    for s in names:
        for d in names:
            pts = [r for r in rows if r["src"] == s and r["dst"] == d]
            if s == d or not pts:
                continue
            a, b, r2 = linear_fit([r["bytes"] for r in pts], [r["time_us"] for r in pts])
            lat = a if a > 0 else max(pts[0]["half_rtt_us"], 1e-3)
            upb = b
            if upb < MIN_US_PER_BYTE:  # faster than any wire (disturbed samples):
                # the largest transfer's time per byte
                big = max(pts, key=lambda r: r["bytes"])
                upb = max(big["time_us"] - lat, big["time_us"] / 2) / big["bytes"]
            # the link takes the repaired numbers, "fit" keeps fit-comm's own
            links.append({"src": s, "dst": d, "latency_us": lat, "us_per_byte": upb,
                          "fit": {"latency_us": a, "us_per_byte": b, "r2": r2,
                                  "samples": len(pts), "half_rtt_us": pts[0]["half_rtt_us"]}})
    return links


def write_csv(path: str, rows: Sequence[dict]) -> None:
    """formats.md section 4, with device names in the kind columns."""
    with open(path, "w") as f:
        f.write("src_kind,dst_kind,bytes,time_us\n")
        for r in rows:
            f.write("%s,%s,%d,%.17g\n" % (r["src"], r["dst"], r["bytes"], r["time_us"]))


# ---------------------------------------------------------------- shared compute


def _matmul_window(n: int, seconds: float, dev: str) -> float:
    """GFLOP/s of a stream of n x n fp32 matmuls for `seconds`."""
    a = torch.randn(n, n, device=dev)
    b = torch.randn(n, n, device=dev)
    c = torch.empty(n, n, device=dev)
    torch.mm(a, b, out=c)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    k = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while True:
        for _ in range(8):
            torch.mm(a, b, out=c)
        k += 8
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        if t >= end:
            break
    return 2.0 * n ** 3 * k / (t - t0) / 1e9


def tiny_op_us(dev: str, calls: int = 2000) -> float:
    """Mean time of one 1-element torch.add from Python: the per-op issue
    cost of one host thread (reported, not written as dispatch_us: measured
    op times already include it)."""
    a = torch.ones(1, device=dev)
    c = torch.empty(1, device=dev)
    for _ in range(100):
        torch.add(a, a, out=c)
    t0 = time.perf_counter()
    for _ in range(calls):
        torch.add(a, a, out=c)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / calls


def model_step(spec: str, inputs: Sequence[tuple], loss: str, dev: str) -> Tuple[object, tuple]:
    """(step, inputs): the model's whole training step on this rank's
    device, run by the executor of `opplace.torch run` with every op on one
    device, warmed up (the optimizer's state, the allocator's blocks)."""
    from .__main__ import _build_model, _inputs, _loss
    from ._capture import capture
    from ._export import _optimizer_for
    from ._run import PlacedStep
    torch.manual_seed(0)
    model = _build_model(spec, {}, False).to(dev)
    model.train()
    x = _inputs(inputs, dev)
    cap = capture(model, x, _loss(loss))
    step = PlacedStep.one_device(cap, model, lambda ps: _optimizer_for("adam", ps),
                                 torch.device(dev))
    step(x)
    return step, x


def step_window(step, x: tuple, dev: str) -> Callable[[float], float]:
    """A window function (seconds -> training steps per second) of the
    step: what the ranks share, measured on the work they will do."""
    def window(seconds: float) -> float:
        k, t0 = 0, time.perf_counter()
        while True:
            step(x)
            k += 1
            if dev.startswith("cuda"):
                torch.cuda.synchronize()
            t = time.perf_counter()
            if t - t0 >= seconds:
                return k / (t - t0)
    return window


def measure_compute(me: int, world: int, window: Callable[[float], float], seconds: float,
                    rounds: int, timeout_s: float) -> Tuple[float, float]:
    """(alone, all) throughput of this rank (window(seconds): the probe's
    rate): medians over rounds of a window with every other rank idle at a
    barrier, and of one with every rank computing at once."""
    alone, together = [], []
    for _ in range(rounds):
        for r in range(world):
            _dist.barrier(timeout_s, "calibrate: compute alone")
            if me == r:
                alone.append(window(seconds))
        if world == 1:
            together.append(alone[-1])  # one rank: all at once is alone
            continue
        _dist.barrier(timeout_s, "calibrate: compute together")
        together.append(window(seconds))
    return statistics.median(alone), statistics.median(together)


def shared_groups(infos: Sequence[dict], names: Sequence[str]) -> List[dict]:
    """cpu ranks of one node share compute: a group per node with >= 2 of
    them, alone and all the means of its ranks' throughputs (all <= alone:
    sharing never speeds a device up; the raw numbers stay in
    calibration)."""
    groups = []
    hosts = []
    for r in infos:
        if r["kind"] == "cpu" and r["host"] not in hosts:
            hosts.append(r["host"])
    for h in hosts:
        ranks = [i for i, r in enumerate(infos) if r["kind"] == "cpu" and r["host"] == h]
        if len(ranks) < 2:
            continue
        alone = statistics.mean(infos[i]["alone"] for i in ranks)
        every = statistics.mean(infos[i]["all"] for i in ranks)
        groups.append({"devices": [names[i] for i in ranks], "alone": alone,
                       "all": min(every, alone), "host": h, "measured_all": every})
    return groups


SHARED_FIT_RANGE = (0.30, 1.00)  # all / alone a fit may give (matmul streams on 2 vCPUs: 0.43-0.46)


def with_shared_ratio(cluster: dict, q: float) -> dict:
    """cluster with every shared group's all set to q * its alone
    (formats.md 5.8); ValueError where it has no group."""
    if not cluster.get("shared"):
        raise ValueError("the cluster has no shared group (formats.md 5.8) to fit: calibrate "
                         "it on the machine the ranks run on (opplace.torch calibrate), or run "
                         "with --measure")
    out = json.loads(json.dumps(cluster))
    for g in out["shared"]:
        g["all"] = g["alone"] * q
    return out


def fit_shared_ratio(measured: Sequence[float], simulate: Callable[[int, float], float]) -> float:
    """The all / alone of rule 5.8 under which the simulated steps of
    placements that ran for real fit their measured steps best (least
    squared log error): over SHARED_FIT_RANGE by 0.05, then by 0.01 around
    the best; of equal fits the larger (less sharing).  simulate(i, q) is
    run i's simulated step with every group's all = q * alone.  ValueError
    where no run's simulation depends on q: no placement had two members of
    a group computing at once, so the runs say nothing of what they share."""
    lo, hi = SHARED_FIT_RANGE

    def loss(q: float) -> float:
        return sum(math.log(simulate(i, q) / m) ** 2 for i, m in enumerate(measured))
    if all(abs(simulate(i, lo) - simulate(i, hi)) <= 1e-9 * simulate(i, hi)
           for i in range(len(measured))):
        raise ValueError("no placement ran two devices of a shared group at once: its steps "
                         "say nothing of the compute they share; fit with placements that "
                         "use several devices")
    coarse = [round(lo + 0.05 * k, 2) for k in range(int(round((hi - lo) / 0.05)) + 1)]
    best = min(coarse, key=lambda q: (loss(q), -q))
    fine = [round(best + 0.01 * k, 2) for k in range(-4, 5)
            if lo - 1e-9 <= best + 0.01 * k <= hi + 1e-9]
    return min(fine, key=lambda q: (loss(q), -q))


def fit_cluster(graph_path: str, cluster: dict, runs: Sequence[Tuple[str, dict, float]],
                binary: Optional[str] = None) -> dict:
    """cluster with rule 5.8's all / alone fitted to placements that ran
    for real (runs: (name, placement as executed, measured step in us)) on
    the graph's op times, and what the fit did (`calibration.shared_fit`):
    the probe's all / alone (calibrate's or run --measure's: every rank's
    one-device step at once) against the fitted one, and each run's
    simulated step before and after.  The probe runs the same ops side by
    side; a placed step runs different ones beside each other, waits and
    transfers between them, and on 2 vCPUs loses more than the probe says
    (bench/RESULTS.md, real runs)."""
    from ._measure import simulate
    memo: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, (_, p, _) in enumerate(runs):
            paths.append(os.path.join(tmp, "p%d.json" % i))
            _write_json(paths[-1], p)

        def sim(i: int, q: Optional[float]) -> float:
            key = (i, q)
            if key not in memo:
                c = os.path.join(tmp, "c%s.json" % ("probe" if q is None else "%.2f" % q))
                if not os.path.exists(c):
                    _write_json(c, cluster if q is None else with_shared_ratio(cluster, q))
                memo[key] = float(simulate(graph_path, paths[i], c, binary)["step_time_us"])
            return memo[key]
        with_shared_ratio(cluster, 1.0)  # the error of a cluster without a group first
        q = fit_shared_ratio([m for _, _, m in runs], sim)
        before = [sim(i, None) for i in range(len(runs))]
        after = [sim(i, q) for i in range(len(runs))]
    out = with_shared_ratio(cluster, q)
    g = cluster["shared"][0]
    out.setdefault("calibration", {})["shared_fit"] = {
        "by": "opplace.torch run --fit-shared: rule 5.8's all / alone fitted to the measured "
              "steps of the placements run (least squared log error)",
        "graph": graph_path, "all_over_alone": q, "probe_all_over_alone": g["all"] / g["alone"],
        "runs": [{"placement": n, "measured_us": m, "simulated_probe_us": b,
                  "simulated_fit_us": a} for (n, _, m), b, a in zip(runs, before, after)]}
    return out


# ---------------------------------------------------------------- main


def parse(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="torchrun --nproc-per-node N -m opplace.torch calibrate",
        description="Measure the ranks' devices, the transfers between them and the compute "
                    "they share; write an opplace-cluster file (docs/formats.md).")
    ap.add_argument("-o", "--output", required=True, help="cluster file to write")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per cpu rank (1)")
    ap.add_argument("--sizes", type=_size, nargs="+", default=DEFAULT_SIZES, metavar="BYTES",
                    help="transfer sizes (default 4 1K 16K 128K 1M 4M 16M)")
    ap.add_argument("--repeat", type=int, default=7, help="timed round trips per size (7)")
    ap.add_argument("--matmul", type=int, default=128, help="n of the n x n fp32 matmul (128)")
    ap.add_argument("--model", metavar="MODULE:FACTORY",
                    help="measure what the ranks share with this model's training step (every "
                         "op on one device, as `run` executes it) instead of a matmul stream: "
                         "the work they will share")
    ap.add_argument("--input", action="append", default=[], metavar="SHAPE[:DTYPE]",
                    help="--model's inputs, as for `run` (repeat for several)")
    ap.add_argument("--loss", default="sum", choices=["sum", "cross_entropy", "mse"],
                    help="--model's loss (sum)")
    ap.add_argument("--seconds", type=float, default=0.3,
                    help="length of one compute window (0.3 s)")
    ap.add_argument("--rounds", type=int, default=3, help="compute windows per phase (3)")
    ap.add_argument("--gpus", type=int, default=None,
                    help="local ranks 0..G-1 run a GPU (default: every CUDA device the node has)")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds any rank waits for another before all stop (300)")
    ap.add_argument("--csv", help="also write the measured transfers (fit-comm's CSV)")
    a = ap.parse_args(argv)
    if a.threads < 1 or a.repeat < 1 or a.matmul < 1 or a.rounds < 1 or a.seconds <= 0:
        ap.error("--threads, --repeat, --matmul, --rounds and --seconds must be positive")
    if len(set(a.sizes)) < 2:
        ap.error("--sizes: give at least 2 distinct sizes (a line needs two points)")
    if a.input and not a.model:
        ap.error("--input is for --model")
    if a.model and not a.input:
        ap.error("--model needs its example inputs (--input SHAPE[:DTYPE], as for run)")
    from .__main__ import _parse_input
    try:
        a.input = [_parse_input(x) for x in a.input]
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    return a


def run(a: argparse.Namespace) -> Optional[dict]:
    info = _dist.env_ranks()
    kind, dev, mem = _my_device(info.local_rank, a.gpus)
    if kind == "cpu":
        torch.set_num_threads(a.threads)
    # gloo for the barriers and the gathered results; an extra nccl group
    # carries the transfers when every rank has a GPU
    info = _dist.init(a.timeout, backend="gloo")
    me, world = info.rank, info.world
    mine = {"kind": kind, "mem": mem, "host": socket.gethostname(),
            "node_mem": _node_memory_bytes(), "cores": len(os.sched_getaffinity(0))}
    infos: List[Optional[dict]] = [None] * world
    dist.all_gather_object(infos, mine)
    kinds = [r["kind"] for r in infos]
    if all(k == "gpu" for k in kinds) and world > 1:
        # NCCL for the transfers a GPU cluster will use
        nccl = dist.new_group(backend="nccl")
    else:
        nccl = None
    devices = describe_ranks(infos)
    names = [d["name"] for d in devices]
    _log(me, "%d rank(s): %s; %d torch thread(s) per cpu rank" % (
        world, ", ".join("%s on %s" % (n, r["host"]) for n, r in zip(names, infos)), a.threads))
    rows: List[dict] = []
    host_rows: List[dict] = []
    step, host_work = None, None
    if a.model:
        step, x = model_step(a.model, a.input, a.loss, dev)
    if world > 1:
        _log(me, "transfers: %d ordered pairs x %d sizes x %d round trips" % (
            world * (world - 1), len(a.sizes), a.repeat))
        staged = kind == "gpu" and nccl is None
        rows_mine = measure_links(me, world, a.sizes, a.repeat, dev, staged, a.timeout, names,
                                  nccl)
        gathered: List[Optional[list]] = [None] * world
        dist.all_gather_object(gathered, rows_mine)
        rows = [r for g in gathered for r in g]
        work = StepWork(step, x) if step is not None else MatmulWork()
        _log(me, "host cost of transfers: the wall time %d transfers each way add to %s"
             % (work.n, work.what))
        host_mine = measure_host(me, world, [b for b in a.sizes if b <= 1 << 22], dev, staged,
                                 work, names, a.timeout)
        host_work = work.what
        if step is not None:
            work.close()
        gathered = [None] * world
        dist.all_gather_object(gathered, host_mine)
        host_rows = [r for g in gathered for r in g]
    if a.model:
        probe = "training steps/s of %s, every op on one device" % a.model
        window = step_window(step, x, dev)
    else:
        probe = "GFLOP/s of %dx%d fp32 matmuls" % (a.matmul, a.matmul)
        window = lambda sec: _matmul_window(a.matmul, sec, dev)  # noqa: E731
    _log(me, "compute: %s, %g s windows, %d round(s), each rank alone then all at once"
         % (probe, a.seconds, a.rounds))
    alone, together = measure_compute(me, world, window, a.seconds, a.rounds, a.timeout)
    tiny = tiny_op_us(dev)
    perf: List[Optional[tuple]] = [None] * world
    dist.all_gather_object(perf, (alone, together, tiny))
    for r, (al, tg, ty) in zip(infos, perf):
        r["alone"], r["all"], r["tiny_op_us"] = al, tg, ty
    doc = None
    if me == 0:
        links = fit_links(rows, names)
        groups = shared_groups(infos, names)
        host = fit_host(host_rows, names)
        doc = {"format": "opplace-cluster", "version": 1, "devices": devices,
               "links": [dict({k: l[k] for k in ("src", "dst", "latency_us", "us_per_byte")},
                              **host.get((l["src"], l["dst"]), {})) for l in links]}
        if host:  # measured while computing: a receive at an idle rank is free
            doc["recv_idle_free"] = True
        if groups:
            doc["shared"] = [{k: g[k] for k in ("devices", "alone", "all")} for g in groups]
        doc["calibration"] = {
            "tool": "opplace.torch calibrate", "threads": a.threads, "sizes": list(a.sizes),
            "repeat": a.repeat, "matmul_n": a.matmul, "window_s": a.seconds,
            "compute_probe": probe,
            "rounds": a.rounds, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "fits": [dict(src=l["src"], dst=l["dst"], **l["fit"]) for l in links],
            "compute": [{"device": n, "host": r["host"], "alone": r["alone"],
                         "all": r["all"]} for n, r in zip(names, infos)],
            "tiny_op_us": {n: r["tiny_op_us"] for n, r in zip(names, infos)},
            "host": {"send": "wall time in the send calls",
                     "recv": "the rest of the wall time the transfers add to the work",
                     "pattern": "both ways at once", "work": host_work, "rows": host_rows},
            "shared_measured": [{"devices": g["devices"], "alone": g["alone"],
                                 "all": g["measured_all"]} for g in groups]}
        _write_json(a.output, doc)
        if a.csv:
            write_csv(a.csv, rows)
        _report(doc, a.output)
    _dist.barrier(a.timeout, "calibrate: end")
    _dist.shutdown(nccl)
    return doc


def _write_json(path: str, doc: dict) -> None:
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def _report(doc: dict, path: str) -> None:
    cal = doc["calibration"]
    print("devices:")
    for d in doc["devices"]:
        print("  %-8s %-4s %8.2f GiB" % (d["name"], d["kind"], d["memory_bytes"] / 2 ** 30))
    if cal["fits"]:
        print("links (fit of the per-size medians):")
        print("  %-16s %12s %14s %10s %8s" % ("pair", "latency_us", "us_per_byte", "GB/s",
                                               "R^2"))
        for f, l in zip(cal["fits"], doc["links"]):
            bw = 1e-3 / l["us_per_byte"] if l["us_per_byte"] > 0 else float("inf")
            print("  %-16s %12.3f %14.4g %10.3f %8.4f" % (
                "%s->%s" % (f["src"], f["dst"]), l["latency_us"], l["us_per_byte"], bw, f["r2"]))
    if any("send_us" in l or "recv_us" in l for l in doc["links"]):
        print("host cost per transfer (sender: wall time in its send calls; receiver: the rest "
              "of the wall time the transfers add to %s, both ways, both ranks at once; free "
              "at an idle rank; formats.md 5.9):" % cal["host"]["work"])
        print("  %-16s %10s %14s %10s %14s" % ("pair", "send_us", "send_us/B", "recv_us",
                                                "recv_us/B"))
        for l in doc["links"]:
            print("  %-16s %10.2f %14.4g %10.2f %14.4g" % (
                "%s->%s" % (l["src"], l["dst"]), l.get("send_us", 0), l.get("send_us_per_byte", 0),
                l.get("recv_us", 0), l.get("recv_us_per_byte", 0)))
    print("compute (%s, %d thread(s)):" % (cal["compute_probe"], cal["threads"]))
    for c in cal["compute"]:
        print("  %-8s alone %8.2f   all at once %8.2f   (%.2f)" % (
            c["device"], c["alone"], c["all"], c["all"] / c["alone"]))
    print("per-op issue cost (1-element add from Python): %s" % ", ".join(
        "%s %.2f us" % kv for kv in cal["tiny_op_us"].items()))
    for g in doc.get("shared", []):
        print("shared: %s: alone %.2f, all %.2f (all/alone %.3f)" % (
            ", ".join(g["devices"]), g["alone"], g["all"], g["all"] / g["alone"]))
    print("wrote %s" % path)
    sys.stdout.flush()


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parse(argv)
    try:
        _dist.env_ranks()
    except _dist.DistError as e:
        print("opplace.torch calibrate: %s" % e, file=sys.stderr)
        return 2
    with _dist.guard("calibrate"):
        run(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
