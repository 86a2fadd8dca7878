"""What a transfer costs the hosts on this machine, as calibrate measures it
(bench/RESULTS.md, "PyTorch: real runs"): 2 gloo ranks, both computing
between transfers; per transfer, the CPU time of the process's threads
other than the main one (gloo's), one way at a time (rank 0 sends, rank 1
receives) and both ways at once (calibrate's `_host_round`), by size;
calibrate's send and receive costs both ways by the compute between
transfers (`--gaps`) and by transfers a round (`--n`); and with `--model`,
calibrate's costs with the model's own step as the compute against its
matmul pieces, by size.

usage: torchrun --nproc-per-node 2 --standalone bench/host_probe.py
           [--sizes 4096 65536 1048576] [--gaps 0.25 0.5 1 2 4] [--n 16 64]
           [--rounds 3] [--model MODULE:FACTORY --input SHAPE ...]
           (PYTHONPATH=python:bench, OMP_NUM_THREADS=1)"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

from opplace.torch._calibrate import (HOST_GAP_S, MatmulWork, StepWork, _host_round,
                                      _matmul_window, measure_host, model_step)


def one_way(me: int, nbytes: int, n: int) -> None:
    """Rank 0 isends n transfers, one every HOST_GAP_S of compute; rank 1
    has posted its receives and computes as long."""
    x = torch.zeros(nbytes // 4)
    dist.barrier()
    if me == 0:
        works = []
        for i in range(n):
            _matmul_window(48, HOST_GAP_S, "cpu")
            works.append(dist.isend(x, 1, tag=i))
    else:
        bufs = [torch.zeros(nbytes // 4) for _ in range(n)]
        works = [dist.irecv(b, 0, tag=i) for i, b in enumerate(bufs)]
        _matmul_window(48, n * HOST_GAP_S, "cpu")
    for w in works:
        w.wait()


def helpers_us(fn, n: int) -> float:
    """CPU time per transfer of the threads other than this one while fn runs."""
    p, t = time.process_time(), time.thread_time()
    fn()
    return ((time.process_time() - p) - (time.thread_time() - t)) * 1e6 / n


def costs(me: int, b: int, work, rounds: int) -> tuple:
    """calibrate's (send, receive) cost per transfer of b bytes on this
    rank's end, the compute between transfers `work`."""
    rows = measure_host(me, 2, [b], "cpu", False, work, ["cpu:0", "cpu:1"], 60, rounds)
    return tuple(next(r["host_us"] for r in rows if r["side"] == side)
                 for side in ("send", "recv"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 1 << 20])
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.25, 0.5, 1, 2, 4], help="ms")
    ap.add_argument("--n", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", help="MODULE:FACTORY: calibrate's costs with its step as the "
                                    "compute, against matmul pieces (skips the other tables)")
    ap.add_argument("--input", action="append", default=[], help="--model's inputs")
    a = ap.parse_args()
    dist.init_process_group("gloo")
    me, peer = dist.get_rank(), 1 - dist.get_rank()
    torch.set_num_threads(1)
    say = print if me == 0 else (lambda *x, **k: None)
    if a.model:
        from opplace.torch.__main__ import _parse_input
        step, x = model_step(a.model, [_parse_input(i) for i in a.input], "sum", "cpu")
        work, mm = StepWork(step, x), MatmulWork()
        say("%s: %s" % (a.model, work.what), flush=True)
        for b in a.sizes:
            m, s = costs(me, b, mm, a.rounds), costs(me, b, work, a.rounds)
            both = [None, None]
            dist.all_gather_object(both, (m, s))
            for r, (m, s) in enumerate(both):
                say("%8d B, rank %d: matmul pieces: send %.0f + receive %.0f = %.0f us; the "
                    "model's step: send %.0f + receive %.0f = %.0f us (%.2fx)"
                    % (b, r, m[0], m[1], sum(m), s[0], s[1], sum(s),
                       sum(s) / sum(m) if sum(m) > 0 else float("nan")), flush=True)
        dist.destroy_process_group()
        return
    n = 32
    for b in a.sizes:
        ow = [helpers_us(lambda: one_way(me, b, n), n) for _ in range(a.rounds + 1)][1:]
        bw = [helpers_us(lambda: _host_round(peer, b, "cpu", False, MatmulWork(n), True, 60), n)
              for _ in range(a.rounds + 1)][1:]
        all_ = [None, None]
        dist.all_gather_object(all_, (statistics.median(ow), statistics.median(bw)))
        say("%8d B: gloo's threads per transfer, one way: sender %.0f us, receiver %.0f us; "
            "both ways: %.0f and %.0f us" % (b, all_[0][0], all_[1][0], all_[0][1], all_[1][1]),
            flush=True)
    for k in a.n:
        for gap in a.gaps:
            send, recv = costs(me, 16384, MatmulWork(k, gap / 1e3), a.rounds)
            say("16 KiB both ways, %d a round, %.2f ms of compute between: rank 0 send %.0f us, "
                "receive %.0f us" % (k, gap, send, recv), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
