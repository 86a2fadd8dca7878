"""The executor's own cost against eager PyTorch (issue 31): one training
step of a model on one device, eager (forward, backward, one Adam over every
parameter) against the executor `opplace.torch run` uses for each rank
(the captured joint graph replayed op by op, one Adam per parameter, each
update an op a placement can put on any device), the same executor calling
torch.optim's `opt.step()` per update (before `_bare_step`), their steps
interleaved, and the executor's step split into its parameter updates and
its other ops (as `export --times measure` times them: each op from the
end of the one before).

usage: PYTHONPATH=python:bench python bench/executor_overhead.py
           [--device cpu|cuda] [--threads 1] [--steps 30]
(one thread by default; run it alone on the machine)
"""
import argparse
import statistics
import sys
import time

import torch

from fidelity_models import Branches, inception
from opplace.torch._capture import capture
from opplace.torch import _run
from opplace.torch._run import PlacedStep, _now_us, measure_op_times, time_one_device_step


def median_us(fs: list, steps: int, sync) -> list:
    """The median time of each of fs, their calls interleaved."""
    for _ in range(5):
        for f in fs:
            f()
    sync()
    ts: list = [[] for _ in fs]
    for _ in range(steps):
        for f, t in zip(fs, ts):
            t0 = time.perf_counter()
            f()
            sync()
            t.append(time.perf_counter() - t0)
    return [statistics.median(t) * 1e6 for t in ts]


def row(name: str, model: torch.nn.Module, example: tuple, dev: torch.device, steps: int):
    model = model.to(dev)
    example = tuple(x.to(dev) for x in example)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def eager():
        opt.zero_grad(set_to_none=True)
        model(*example).sum().backward()
        opt.step()
    cap = capture(model, example, lambda y: y.sum())

    def adam(ps):
        return torch.optim.Adam(ps, lr=1e-3)
    step = PlacedStep.one_device(cap, model, adam, dev)
    bare = _run._bare_step
    _run._bare_step = lambda opt: opt.step  # the executor as it was
    try:
        plain = PlacedStep.one_device(cap, model, adam, dev)
    finally:
        _run._bare_step = bare
    e, x, xp = median_us([eager, lambda: time_one_device_step(step, example, False, {}),
                          lambda: time_one_device_step(plain, example, False, {})], steps, sync)
    times, _ = measure_op_times(cap, model, example, "adam", dev, steps, _now_us)
    upd = [v for k, v in times.items() if k.startswith("u/")]
    other = [v for k, v in times.items() if not k.startswith("u/")]
    print("| %s | %.2f | %.2f (%.2fx) | %.2f (%.2fx) | %d: %.2f (%.0f us each) "
          "| %d: %.2f (%.0f us each) |" % (
              name, e / 1e3, x / 1e3, x / e, xp / 1e3, xp / e, len(upd), sum(upd) / 1e3,
              statistics.mean(upd), len(other), sum(other) / 1e3, statistics.mean(other)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    print("| model | eager step (ms) | executor step (ms, / eager) | with opt.step() per update "
          "(ms, / eager) | updates: ms | other ops: ms |")
    print("|---|---:|---:|---:|---|---|")
    for dim in (8, 64, 512):
        row("branches, width %d" % dim, Branches(dim=dim), (torch.randn(64, dim),), dev,
            a.steps)
    row("inception (8x3x64x64)", inception(), (torch.randn(8, 3, 64, 64),), dev, a.steps)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
