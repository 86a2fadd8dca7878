"""What one rank's ops pay on this machine for what its core did before and
what the other cores do (issue 31, bench/RESULTS.md "PyTorch: real runs"),
two effects that the one-device op times (one thread computing throughout)
and calibrate's probes do not see:

1. sleeping: a rank of a placed step sleeps in every wait for a transfer.
   One thread runs a branch model's op (64x512 @ 512x512 + ReLU) in bursts
   of `--ops` ops, each after a sleep of S ms; per S, the median time of a
   burst's first op and of its other ops, against bursts with no sleep.
2. the other core's work: in a placed step the ranks run different ops at
   once.  The same op's time while another process runs, on another core,
   nothing, the same op, an Adam update of a 512x512 parameter, or a
   linear layer's backward.
3. the weights the ops before left in the caches: a placed rank that
   alternates between layers (gnmt's wavefront) runs each LSTM cell after
   another layer's, where program order runs a layer's cells in a row.
   One thread cycles through K layers' cells of gnmt's LSTMCell(256, 256)
   (2 MiB of weights each; K = 1: as in program order), alone and while
   another process cycles through K cells of its own.

Every setting is interleaved with the others round by round (the machine's
speed drifts by 10-20 % within minutes).

usage: python bench/core_probe.py [--sleeps 0.2 1 4 10] [--ops 8 60] [--rounds 60]
           [--seconds 2] [--layers 1 2 4] [--only sleeping|beside|weights]
(one thread a process; run it alone on the machine)
"""
import argparse
import multiprocessing as mp
import statistics
import time

import torch

BACKGROUND = ("none", "matmul", "adam", "backward")


class Ops:
    """The probe's ops: a branch model's linear layer, forward and backward,
    and Adam updates of its weight."""

    def __init__(self) -> None:
        torch.set_num_threads(1)
        self.x = torch.randn(64, 512)
        self.ws = [torch.randn(512, 512) for _ in range(8)]
        self.ps = [torch.randn(512, 512, requires_grad=True) for _ in range(8)]
        for p in self.ps:
            p.grad = torch.randn(512, 512)
        self.opts = [torch.optim.Adam([p]) for p in self.ps]
        # gnmt's LSTMCell(256, 256) (fidelity_models): 2 MiB of weights
        self.cells = [torch.nn.LSTMCell(256, 256) for _ in range(8)]
        self.hx = (torch.randn(16, 256), torch.randn(16, 256), torch.randn(16, 256))

    def run(self, kind: str, i: int) -> None:
        if kind == "matmul":
            torch.relu(self.x @ self.ws[i % 8])
        elif kind == "adam":
            self.opts[i % 8].step()
        elif kind == "backward":
            g = self.x + 1.0
            g.t() @ self.x
            g @ self.ws[i % 8]
        elif kind.startswith("lstm:"):  # the cells of K layers in turn
            with torch.no_grad():
                self.cells[i % int(kind[5:])](self.hx[0], self.hx[1:])


def _background(kind: str, ready, stop) -> None:
    ops = Ops()
    for i in range(20):
        ops.run(kind, i)
    ready.set()
    i = 0
    while not stop.is_set():
        ops.run(kind, i)
        i += 1


def sleeping(ops: Ops, sleeps: list, bursts: list, rounds: int) -> None:
    def burst(n: int, sleep_ms: float) -> list:
        if sleep_ms > 0:
            time.sleep(sleep_ms / 1e3)
        out = []
        for i in range(n):
            t0 = time.perf_counter()
            ops.run("matmul", i)
            out.append((time.perf_counter() - t0) * 1e6)
        return out

    for _ in range(50):
        burst(8, 0)
    settings = [(n, s) for n in bursts for s in [0.0] + sleeps]
    first: dict = {k: [] for k in settings}
    rest: dict = {k: [] for k in settings}
    for _ in range(rounds):
        for k in settings:
            ts = burst(*k)
            first[k].append(ts[0])
            rest[k].extend(ts[1:])
    print("| ops a burst | sleep before it (ms) | busy share | first op (us) | other ops (us) "
          "| first / no sleep | others / no sleep |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in bursts:
        f0, r0 = statistics.median(first[(n, 0.0)]), statistics.median(rest[(n, 0.0)])
        for s in [0.0] + sleeps:
            f, r = statistics.median(first[(n, s)]), statistics.median(rest[(n, s)])
            busy = (f + r * (n - 1)) / (f + r * (n - 1) + s * 1e3)
            print("| %d | %g | %.0f %% | %.0f | %.0f | %.2f | %.2f |"
                  % (n, s, 100 * busy, f, r, f / f0, r / r0))


def _per_op_us(ops: Ops, kind: str, background: str, seconds: float, warm: int) -> float:
    """Microseconds an op of `kind` takes over `seconds` (after `warm` of
    them), while another process runs `background` ops ("none": nothing)."""
    proc, stop = None, None
    if background != "none":
        ctx = mp.get_context("spawn")
        ready, stop = ctx.Event(), ctx.Event()
        proc = ctx.Process(target=_background, args=(background, ready, stop))
        proc.start()
        ready.wait(120)  # its start-up (torch's import) and warm-up
    for i in range(warm):
        ops.run(kind, i)
    t0, k = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        ops.run(kind, k)
        k += 1
    us = (time.perf_counter() - t0) * 1e6 / k
    if proc:
        stop.set()
        proc.join()
    return us


def beside(ops: Ops, seconds: float, rounds: int) -> None:
    times: dict = {b: [] for b in BACKGROUND}
    for _ in range(rounds):
        for b in BACKGROUND:
            times[b].append(_per_op_us(ops, "matmul", b, seconds, 0))
    base = statistics.median(times["none"])
    print("\n| the other core runs | this core's op (us) | / nothing beside |")
    print("|---|---:|---:|")
    for b in BACKGROUND:
        m = statistics.median(times[b])
        print("| %s | %.0f | %.2f |" % (b, m, m / base))


def weights(ops: Ops, layers: list, seconds: float, rounds: int) -> None:
    """Each K of `layers`: the median time of an LSTM cell's forward when
    one thread cycles through K layers' cells, alone and while another
    process cycles through K cells of its own (what two ranks of a placed
    step that each alternate between K layers do)."""
    settings = [(k, b) for k in layers for b in ("none", "lstm:%d" % k)]
    times: dict = {s: [] for s in settings}
    for _ in range(rounds):
        for k, b in settings:  # every layer's weights touched once first
            times[(k, b)].append(_per_op_us(ops, "lstm:%d" % k, b, seconds, 2 * k))
    base = statistics.median(times[(layers[0], "none")])
    print("\n| layers cycled (2 MiB of weights each) | the other core | LSTM cell (us) "
          "| / one layer alone |")
    print("|---:|---|---:|---:|")
    for k, b in settings:
        m = statistics.median(times[(k, b)])
        other = "nothing" if b == "none" else "%d cell%s of its own" % (k, "s" * (k > 1))
        print("| %d | %s | %.0f | %.2f |" % (k, other, m, m / base))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleeps", type=float, nargs="+", default=[0.2, 1.0, 4.0, 10.0],
                    help="sleeps before a burst, ms")
    ap.add_argument("--ops", type=int, nargs="+", default=[8, 60], help="ops a burst")
    ap.add_argument("--rounds", type=int, default=60, help="rounds of the sleep table")
    ap.add_argument("--seconds", type=float, default=2.0,
                    help="each setting's time a round in the second and third tables "
                    "(3 rounds)")
    ap.add_argument("--layers", type=int, nargs="+", default=[1, 2, 4],
                    help="layers cycled in the third table (the first is its baseline)")
    ap.add_argument("--only", choices=("sleeping", "beside", "weights"),
                    help="one table only")
    a = ap.parse_args()
    ops = Ops()
    if a.only in (None, "sleeping"):
        sleeping(ops, a.sleeps, a.ops, a.rounds)
    if a.only in (None, "beside"):
        beside(ops, a.seconds, 3)
    if a.only in (None, "weights"):
        weights(ops, a.layers, a.seconds, 3)


if __name__ == "__main__":
    main()
