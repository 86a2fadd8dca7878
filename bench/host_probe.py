"""What a transfer costs the hosts on this machine, as calibrate measures it
(bench/RESULTS.md, "PyTorch: real runs"): 2 gloo ranks, both computing
between transfers; per transfer, the CPU time of the process's threads
other than the main one (gloo's), one way at a time (rank 0 sends, rank 1
receives) and both ways at once (calibrate's `_host_round`), by size; and
calibrate's send and receive costs both ways by the compute between
transfers (`--gaps`) and by transfers a round (`--n`).

usage: torchrun --nproc-per-node 2 --standalone bench/host_probe.py
           [--sizes 4096 65536 1048576] [--gaps 0.25 0.5 1 2 4] [--n 16 64]
           [--rounds 3]     (PYTHONPATH=python, OMP_NUM_THREADS=1)"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

from opplace.torch._calibrate import HOST_GAP_S, _host_round, _matmul_window


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536, 1 << 20])
    ap.add_argument("--gaps", type=float, nargs="+", default=[0.25, 0.5, 1, 2, 4], help="ms")
    ap.add_argument("--n", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    dist.init_process_group("gloo")
    me, peer = dist.get_rank(), 1 - dist.get_rank()
    torch.set_num_threads(1)
    say = print if me == 0 else (lambda *x, **k: None)
    n = 32
    for b in a.sizes:
        ow = [helpers_us(lambda: one_way(me, b, n), n) for _ in range(a.rounds + 1)][1:]
        bw = [helpers_us(lambda: _host_round(me, peer, b, n, "cpu", False, False, 60), n)
              for _ in range(a.rounds + 1)][1:]
        all_ = [None, None]
        dist.all_gather_object(all_, (statistics.median(ow), statistics.median(bw)))
        say("%8d B: gloo's threads per transfer, one way: sender %.0f us, receiver %.0f us; "
            "both ways: %.0f and %.0f us" % (b, all_[0][0], all_[1][0], all_[0][1], all_[1][1]),
            flush=True)
    for k in a.n:
        for gap in a.gaps:
            us = [_host_round(me, peer, 16384, k, "cpu", False, False, 60, gap / 1e3)
                  for _ in range(a.rounds + 1)][1:]
            say("16 KiB both ways, %d a round, %.2f ms of compute between: rank 0 send %.0f us, "
                "receive %.0f us" % (k, gap, statistics.median(u[0] for u in us),
                                     statistics.median(u[1] for u in us)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
