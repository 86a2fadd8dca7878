"""Run a placement for real: one process per device (torchrun), each
executing its ops of the joint graph (forward, backward and optimizer
updates) in the placement's order, and sending every tensor that crosses
devices with torch.distributed's point-to-point operations.

Deadlock-free by construction: every send is non-blocking (isend, issued as
soon as the value exists); every receive is posted at the start of the step
(irecv, tagged with the transfer's number, in the order its sender produces
the values) and waited for only when an op needs it; and each rank runs its
ops in the placement's order, which the simulator has already run as a
schedule of the same dependencies.  Every wait has a timeout.  The group is
gloo's on every rank (a GPU rank stages its tensors through host memory):
NCCL runs a pair's sends and receives on one stream, in the order they are
posted, so receives posted early would wait behind the other direction.
"""
from __future__ import annotations

import bisect
import dataclasses
import datetime
import json
import os
import statistics
import threading
import time
from fractions import Fraction
from typing import Any, Callable, Optional, Tuple

import torch
import torch.distributed as dist
import torch.fx as fx
import torch.nn as nn

from . import _dist
from ._capture import Capture, Replay, capture
from ._dist import now_us as _now_us


POST_RECEIVES = "post receives"  # the timeline's name for posting a step's receives


def _bare_step(opt: torch.optim.Optimizer) -> Callable[[], Any]:
    """opt.step without torch.optim's wrappers around every call (the
    profiler's record_function, the step hooks, the switch of grad mode):
    the same arithmetic in the same order, under no_grad, as the wrappers
    call it for an optimizer that is not differentiable.  One
    optimizer per parameter pays them once per update: 75-82 us an update
    of a small parameter through opt.step, 51-58 us so (bench/RESULTS.md,
    the executor's own cost).  The optimizers are the executor's own: no
    user's hook is skipped."""
    f = type(opt).step
    while hasattr(f, "__wrapped__"):
        f = f.__wrapped__

    def step() -> Any:
        with torch.no_grad():
            return f(opt)
    return step


class RunError(RuntimeError):
    """Bad input or a failed peer: one clear message, the same on every rank."""


@dataclasses.dataclass
class Transfer:
    tid: int
    key: Any              # fx node (a value) or ("param", name)
    src: int
    dst: int
    shape: tuple
    dtype: torch.dtype
    after: str            # the op after which the sender sends it ("" = step start)
    needed_by: str        # the first op on dst that needs it


@dataclasses.dataclass
class Plan:
    rank_of: dict         # op name -> rank
    order: dict           # rank -> [op names]
    transfers: list       # Transfer, in each sender's production order
    home: dict            # param/buffer name -> rank
    loss_rank: int
    input_rank: dict      # input name -> rank


def _load(path: str, fmt: str) -> dict:
    from ._apply import _load as load
    return load(path, fmt, RunError)


def _val(n: fx.Node) -> Any:
    return n.meta.get("val")


def plan(cap: Capture, graph: dict, placement: dict, cluster: dict, world: int,
         paths: tuple = ("graph", "placement", "cluster")) -> Plan:
    """Who runs what, in which order, and every transfer of one step."""
    gpath, ppath, cpath = paths
    devices = [d["name"] for d in cluster.get("devices", [])]
    index = {d: i for i, d in enumerate(devices)}
    device_of = placement.get("device_of")
    if not isinstance(device_of, dict):
        raise RunError("%s: key 'device_of' missing or not an object" % ppath)
    gnames = {o["name"] for o in graph.get("ops", [])}
    cnames = {g.name for g in cap.groups} | {"u/" + p for p in cap.grad_node}
    if gnames != cnames:
        extra = sorted(gnames - cnames)[:3]
        missing = sorted(cnames - gnames)[:3]
        raise RunError("%s does not match the model: ops only in the file %s, ops only in the "
                       "model's step %s; export the graph again from this model and inputs"
                       % (gpath, extra, missing))
    for op in gnames:
        d = device_of.get(op)
        if d is None:
            raise RunError("%s: 'device_of' has no device for op '%s' of %s" % (ppath, op, gpath))
        if d not in index:
            raise RunError("%s: op '%s' is placed on '%s', which %s does not list (devices: %s)"
                           % (ppath, op, d, cpath, ", ".join(devices)))
        if index[d] >= world:
            raise RunError("%s places op '%s' on '%s' (device %d of %s) but only %d ranks run; "
                           "start torchrun with --nproc-per-node %d (rank i runs device i)"
                           % (ppath, op, d, index[d], cpath, world,
                              1 + max(index[device_of[o]] for o in gnames)))
    rank_of = {op: index[device_of[op]] for op in gnames}
    pos = program_position(cap)
    order = {r: [] for r in range(world)}
    given = placement.get("order") or {}
    for d, names in given.items():
        if d in index and index[d] < world:
            order[index[d]] = [n for n in names if n in rank_of and rank_of[n] == index[d]]
    for r in range(world):
        mine = [op for op in gnames if rank_of[op] == r]
        if sorted(order[r]) != sorted(mine):
            order[r] = sorted(mine, key=lambda n: pos[n])  # no (complete) order: program order
    home = {}
    for nm, g in cap.holder.items():
        home[nm] = rank_of[g.name]
    for p in cap.grad_node:
        home[p] = rank_of["u/" + p]
    input_rank = {n: rank_of[n] for n in cap.input_names}
    transfers = _transfers(cap, rank_of, order, home)
    return Plan(rank_of, order, transfers, home, rank_of["loss"], input_rank)


def program_position(cap: Capture) -> dict:
    """Each op's position in the program: its first aten node; an update
    right after the op computing its gradient."""
    pos = {g.name: float(g.first) for g in cap.groups}
    for p in cap.grad_node:
        pos["u/" + p] = cap.group_of[cap.grad_node[p]].first + 0.5
    return pos


def one_device_plan(cap: Capture) -> Plan:
    """Every op on rank 0, in program order, nothing to send."""
    pos = program_position(cap)
    ops = sorted(pos, key=lambda n: pos[n])
    home = {nm: 0 for nm in cap.holder}
    home.update({p: 0 for p in cap.grad_node})
    return Plan({op: 0 for op in ops}, {0: ops}, [], home, 0,
                {n: 0 for n in cap.input_names})


def _transfers(cap: Capture, rank_of: dict, order: dict, home: dict) -> list:
    ph_name = {v: k for k, v in cap.placeholders.items()}
    step_pos = {op: i for r, ops in order.items() for i, op in enumerate(ops)}
    need: dict = {}   # (key, dst) -> (first consumer position, consumer op, src, after)
    for g in cap.groups:
        r = rank_of[g.name]
        for n in g.nodes:
            for a in n.all_input_nodes:
                if a.op == "placeholder":
                    nm = ph_name[a]
                    if nm in cap.input_names:
                        src, after, key = rank_of[nm], nm, a
                    else:
                        src, after, key = home[nm], "", ("param", nm)
                else:
                    src, after, key = rank_of[cap.group_of[a].name], cap.group_of[a].name, a
                if src == r:
                    continue
                k = (key, r)
                if k not in need or step_pos[g.name] < need[k][0]:
                    need[k] = (step_pos[g.name], g.name, src, after)
    for p, gn in cap.grad_node.items():
        src, dst = rank_of[cap.group_of[gn].name], rank_of["u/" + p]
        if src != dst:
            need[(gn, dst)] = (step_pos["u/" + p], "u/" + p, src, cap.group_of[gn].name)
    out = []
    for (key, dst), (_, consumer, src, after) in need.items():
        if isinstance(key, tuple):
            shape, dtype, _ = cap.param_meta.get(key[1], (None, None, None))
            if shape is None:  # a buffer
                v = _val(cap.placeholders[key[1]])
                shape, dtype = tuple(v.shape), v.dtype
        else:
            v = _val(key)
            if not isinstance(v, torch.Tensor):
                raise RunError("value '%s' crossing from rank %d to %d is not a tensor (%s)"
                               % (key.name, src, dst, type(v).__name__))
            shape, dtype = tuple(v.shape), v.dtype
        out.append(Transfer(0, key, src, dst, shape, dtype, after, consumer))

    def production(t: Transfer):
        idx = -1 if t.after == "" else step_pos[t.after]
        node_idx = t.key.meta.get("_idx", 0) if isinstance(t.key, fx.Node) else 0
        name = t.key[1] if isinstance(t.key, tuple) else t.key.name
        return (t.src, idx, node_idx, name, t.dst)
    for i, n in enumerate(cap.gm.graph.nodes):
        n.meta["_idx"] = i
    out.sort(key=production)
    for i, t in enumerate(out):
        t.tid = i
    return out


# ----------------------------------------------------------------- a step

class PlacedStep:
    """One training step of a placed model on this rank.  Every rank
    builds it with the same model (same weights) and files; then
    `loss = step(inputs)` runs forward, backward and the updates of this
    rank's parameters.  `inputs` are read on the rank holding the graph's
    input ops (others may pass None); the loss is returned on the rank
    holding 'loss' (None elsewhere)."""

    def __init__(self, model: nn.Module, example_inputs: tuple, graph_path: str,
                 placement_path: str, cluster_path: str, loss_fn: Callable,
                 optimizer: Callable[[list], torch.optim.Optimizer], device: torch.device,
                 timeout_s: float = 300.0, say: Callable[[str], None] = lambda m: None,
                 cap: Optional[Capture] = None):
        """`cap`: the model's captured step, if already captured (several
        placements of one model share it; each step keeps its own copy of
        the parameters it owns, so the model itself is never changed)."""
        graph = _load(graph_path, "opplace-graph")
        placement = _load(placement_path, "opplace-placement")
        cluster = _load(cluster_path, "opplace-cluster")
        if (graph.get("torch") or {}).get("capture") != "aten":
            raise RunError("%s was not made by the aten capture (torch.capture is %r); export "
                           "it again with torch 2.x (capture='aten')"
                           % (graph_path, (graph.get("torch") or {}).get("capture")))
        if cap is None:
            t0 = time.perf_counter()
            cap = capture(model, tuple(example_inputs), loss_fn, say=say)
            say("captured the step in %.1f s" % (time.perf_counter() - t0))
        world = dist.get_world_size()
        self._setup(cap, plan(cap, graph, placement, cluster, world,
                              (graph_path, placement_path, cluster_path)),
                    model, optimizer, device, dist.get_rank(), world, timeout_s)

    @classmethod
    def one_device(cls, cap: Capture, model: nn.Module,
                   optimizer: Callable[[list], torch.optim.Optimizer],
                   device: torch.device) -> "PlacedStep":
        """The whole step in this process, on `device`, in program order:
        the executor the ranks run, with no peer (torch.distributed is not
        needed).  Export's measured op times come from it."""
        self = cls.__new__(cls)
        self._setup(cap, one_device_plan(cap), model, optimizer, device, 0, 1, 300.0)
        return self

    def _setup(self, cap: Capture, plan_: Plan, model: nn.Module, optimizer, device,
               rank: int, world: int, timeout_s: float) -> None:
        self.rank, self.world, self.device = rank, world, device
        self.timeout = datetime.timedelta(seconds=timeout_s)
        self.cap, self.plan = cap, plan_
        self.replay = Replay(self.cap)
        self.mutated = _mutated_values(self.cap)
        self._own_state(model, optimizer)
        self.incoming = [t for t in self.plan.transfers if t.dst == self.rank]
        self.outgoing = {}
        for t in self.plan.transfers:
            if t.src == self.rank:
                self.outgoing.setdefault(t.after, []).append(t)
        self.needs = {}
        for t in self.incoming:
            self.needs.setdefault(t.needed_by, []).append(t)
        self.recv_bufs: Optional[dict] = None
        self.timeline: list = []
        self.record = False
        self.clock: Callable[[], float] = _now_us
        self.sync = device.type == "cuda" and world == 1  # per-op times need the kernels done
        # an op's time from the end of the one before (the executor's own cost
        # per op included: the op times then add up to the step); measure only
        self.contiguous = False

    def _own_state(self, model: nn.Module, optimizer) -> None:
        named_p = dict(model.named_parameters())
        named_b = dict(model.named_buffers())
        self.params: dict[str, torch.Tensor] = {}
        self.buffers: dict[str, torch.Tensor] = {}
        for name, r in self.plan.home.items():
            if r != self.rank:
                continue
            if name in named_p:
                self.params[name] = named_p[name].detach().to(self.device).clone()
            elif name in named_b:
                self.buffers[name] = named_b[name].detach().to(self.device).clone()
        for name, p in named_p.items():  # parameters no op reads
            if name not in self.plan.home and self.rank == 0:
                self.params[name] = p.detach().to(self.device).clone()
        self.opt_step = {}  # parameter -> its optimizer's step (one optimizer each)
        for name in self.cap.grad_node:
            if name in self.params:
                self.params[name].requires_grad_(True)
                self.opt_step[name] = _bare_step(optimizer([self.params[name]]))

    @staticmethod
    def _wire(x: torch.Tensor) -> torch.Tensor:
        """The tensor as gloo sends it: in host memory, contiguous."""
        return x.cpu() if x.device.type != "cpu" else x.contiguous()

    def _post_receives(self) -> dict:
        """One irecv per incoming transfer, into buffers kept from step to
        step (every op of the last step on this rank is done with them): a
        fresh buffer's first touch, page faults in gloo's receiving thread,
        cost 2.7 ms per 4 MiB, three times the copy itself."""
        if self.recv_bufs is None:
            self.recv_bufs = {t.tid: torch.empty(t.shape, dtype=t.dtype, device="cpu")
                              for t in self.incoming}
        return {t.tid: (dist.irecv(self.recv_bufs[t.tid], src=t.src, tag=t.tid),
                        self.recv_bufs[t.tid], t) for t in self.incoming}

    def _wait(self, work, what: str, peer: int) -> None:
        try:
            ok = work.wait(self.timeout)
        except Exception as e:
            raise RunError("rank %d: waiting for %s with rank %d failed: %s (did rank %d fail? "
                           "see its error)" % (self.rank, what, peer, str(e).split("\n")[0], peer))
        if ok is False:
            raise RunError("rank %d: timed out after %.0f s waiting for %s with rank %d"
                           % (self.rank, self.timeout.total_seconds(), what, peer))

    def _send(self, t: Transfer, value: torch.Tensor, sends: list) -> None:
        x = self._wire(value)
        if isinstance(t.key, fx.Node) and t.key in self.mutated and x is value:
            x = x.clone()  # a later in-place op must not change what is in flight
        b0 = self.clock() if self.record else 0.0
        sends.append((dist.isend(x, dst=t.dst, tag=t.tid), x, t))
        if self.record:
            self.timeline.append((_key_name(t.key), "send", b0, self.clock() - b0))

    def __call__(self, inputs: Optional[tuple]) -> Optional[torch.Tensor]:
        cap, plan_ = self.cap, self.plan
        env: dict = {}
        for n, p in self.params.items():
            env[cap.placeholders[n]] = p.detach()
        for n, b in self.buffers.items():
            env[cap.placeholders[n]] = b
        b0 = self.clock() if self.record else 0.0
        recvs = self._post_receives()
        if self.record and self.incoming:
            self.timeline.append((POST_RECEIVES, "send", b0, self.clock() - b0))
        sends: list = []
        clock = self.clock
        for t in self.outgoing.get("", []):
            self._send(t, self.params[t.key[1]].detach() if t.key[1] in self.params
                       else self.buffers[t.key[1]], sends)
        loss = None
        last = clock()
        for op in plan_.order[self.rank]:
            for t in self.needs.get(op, []):
                work, buf, _ = recvs[t.tid]
                b0 = clock()
                self._wait(work, "'%s'" % _key_name(t.key), t.src)
                if self.record:
                    self.timeline.append((_key_name(t.key), "recv", b0, clock() - b0))
                v = buf.to(self.device)
                if isinstance(t.key, tuple):
                    env[cap.placeholders[t.key[1]]] = v
                else:
                    env[t.key] = v
            a0 = last if self.contiguous else clock()
            if op.startswith("u/"):
                self._update(op[2:], env, sends)
            elif op in cap.input_names:
                if inputs is None:
                    raise RunError("rank %d holds input '%s' but was given no inputs"
                                   % (self.rank, op))
                x = inputs[cap.input_names.index(op)]
                env[cap.placeholders[op]] = x.to(self.device)
            else:
                with torch.no_grad():
                    self.replay.run_group(op, env)
                if op == "loss":
                    loss = env[cap.loss_node]
            if self.sync:
                torch.cuda.synchronize(self.device)
            last = clock()
            if self.record:
                self.timeline.append((op, "op", a0, last - a0))
            for t in self.outgoing.get(op, []):
                if isinstance(t.key, tuple):
                    continue
                self._send(t, env[t.key] if t.key.op != "placeholder" else
                           env[cap.placeholders[op]], sends)
        for work, _, t in sends:  # a gloo work must be waited for exactly once
            if work is not None:
                self._wait(work, "sending '%s'" % _key_name(t.key), t.dst)
        return loss.detach() if loss is not None else None

    def _update(self, name: str, env: dict, sends: list) -> None:
        for i, (work, x, t) in enumerate(sends):  # what was sent must be out first
            if work is not None and isinstance(t.key, tuple) and t.key[1] == name:
                self._wait(work, "sending parameter '%s'" % name, t.dst)
                sends[i] = (None, x, t)
        p = self.params[name]
        p.grad = env[self.cap.grad_node[name]].to(p.device)
        self.opt_step[name]()
        p.grad = None


def measure_op_times(cap: Capture, model: nn.Module, example: tuple, optimizer: str,
                     device: torch.device, repeat: int, clock: Callable[[], float],
                     say: Callable[[str], None] = lambda m: None) -> tuple[dict, float]:
    """({op: median us}, median step us): `repeat` whole steps on one device
    after a warm-up one, each op timed where it runs in the step (its inputs
    and the optimizer's state as cold or warm as a real step leaves them),
    by the executor `run` uses, from the end of the op before it (so the
    executor's own cost per op is part of the op, and the ops add up to the
    step).  Timing ops one by one outside the step was off by up to 25 % in
    sum (bench/RESULTS.md, real runs)."""
    from ._export import _optimizer_for
    step = PlacedStep.one_device(cap, model, lambda ps: _optimizer_for(optimizer, ps), device)
    step.clock = clock
    step.contiguous = True
    times: dict = {}
    steps = []
    for r in range(repeat + 1):
        us = time_one_device_step(step, example, r > 0, times)
        if r:
            steps.append(us)
        say("measured step %d of %d%s" % (r + 1, repeat + 1, " (warm-up)" if r == 0 else ""))
    return step_op_times(times, steps), median(steps)


def time_one_device_step(step: "PlacedStep", inputs: tuple, record: bool,
                         times: dict) -> float:
    """One whole step of a one-device `step` (timed contiguously, on its
    clock): its time; with `record`, each op's time appended to times[op].
    A cuda step is synchronised after every op (PlacedStep.sync)."""
    step.record = record
    step.timeline = []
    t0 = step.clock()
    step(inputs)
    us = step.clock() - t0
    for name, kind, _, dur in step.timeline:
        if kind == "op":
            times.setdefault(name, []).append(dur)
    return us


def step_op_times(times: dict, steps: list) -> dict:
    """{op: us} from each op's durations over whole steps (`times`) and the
    steps' (`steps`): each op's median, scaled so that the ops add up to the
    median step.  A machine's noise skews durations to the right, so the sum
    of per-op medians falls short of a typical step (by 2-8 % on this VM,
    the median over each op missing the slow moments that every step has
    some of); the scale keeps the ops' proportions and the step's total."""
    med = {k: median(v) for k, v in times.items()}
    total = sum(med.values())
    scale = median(steps) / total if total > 0 and steps else 1.0
    return {k: v * scale for k, v in med.items()}


def _key_name(key: Any) -> str:
    return key[1] if isinstance(key, tuple) else key.name


def _mutated_values(cap: Capture) -> set:
    """fx nodes that an in-place aten op writes to."""
    out = set()
    for n in cap.gm.graph.nodes:
        t = n.target
        if not isinstance(t, torch._ops.OpOverload):
            continue
        for i, arg in enumerate(t._schema.arguments):
            if arg.alias_info is not None and arg.alias_info.is_write:
                v = n.args[i] if i < len(n.args) else n.kwargs.get(arg.name)
                if isinstance(v, fx.Node):
                    out.add(v)
    return out


# --------------------------------------------------------------- the command

def gather_params(step: PlacedStep) -> Optional[dict]:
    """Every parameter's value, on rank 0 (None elsewhere)."""
    mine = {n: p.detach().cpu() for n, p in step.params.items()}
    allp = [None] * step.world
    dist.all_gather_object(allp, mine)
    if step.rank != 0:
        return None
    out = {}
    for d in allp:
        out.update(d)
    return out


def median(xs: list) -> float:
    return float(statistics.median(xs)) if xs else 0.0


def median_ci(xs: list, level: float = 0.95) -> Optional[Tuple[float, float]]:
    """A distribution-free confidence interval of the median of xs: the
    order statistics x_(j) and x_(n+1-j) with the largest j for which
    P(Binomial(n, 1/2) < j) <= (1 - level) / 2, covering the median with
    probability at least `level` whatever the steps' distribution (this
    VM's are skewed and drift); None where n is too small for one
    (fewer than 6 steps at 95 %).  Two placements whose intervals overlap
    are not told apart by the steps run."""
    n = len(xs)
    tail = Fraction((1.0 - level) / 2.0) * 2 ** n  # exact: 2.0 ** n overflows past 1023 steps
    j, c, cum = 0, 1, 0  # c = C(n, j)
    while j < n:
        cum += c  # 2^n P(X <= j)
        if cum > tail:
            break
        c = c * (n - j) // (j + 1)
        j += 1  # P(X < j) <= (1 - level) / 2
    if j == 0:
        return None
    s = sorted(xs)
    return float(s[j - 1]), float(s[n - j])


def median_index(xs: list) -> int:
    """The index of a median element of xs (the lower one of an even count)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    return order[(len(xs) - 1) // 2] if xs else 0


def run_cli(a, build_model: Callable, make_inputs: Callable, loss_fn: Callable) -> int:
    """`torchrun ... -m opplace.torch run`: returns the process exit code."""
    import sys
    rank = -1
    try:
        info = _dist.env_ranks()
        rank, world = info.rank, info.world
        cluster = _load(a.cluster, "opplace-cluster")
        devs = _dist.rank_devices(cluster, world, a.threads, rank, info.local_rank)
        # gloo for every rank, GPU tensors staged through host memory: receives are
        # posted when the step starts, which NCCL's one stream per pair would
        # serialise against the sends the other way (a deadlock)
        _dist.init(a.timeout, devs.device, "gloo")
        device = torch.device(devs.device)
    except (RunError, _dist.DistError) as e:
        if rank <= 0:
            print("opplace.torch run: %s" % str(e).replace("opplace.torch: ", "", 1),
                  file=sys.stderr)
        return 2
    try:
        return _run(a, rank, world, device, build_model, make_inputs, loss_fn)
    except RunError as e:
        # every rank says it: torchrun ends the others as soon as one exits, so
        # a message left to rank 0 alone could be lost
        print("opplace.torch run: %s" % str(e).replace("opplace.torch: ", "", 1),
              file=sys.stderr)
        return 1
    finally:
        _dist.shutdown()


def _say_rank0(rank: int) -> Callable[[str], None]:
    import sys
    return (lambda m: print("opplace.torch run: " + m, file=sys.stderr, flush=True)) \
        if rank == 0 else (lambda m: None)


@dataclasses.dataclass
class _Runs:
    """One placement's step on this rank and what its timed steps measured."""
    path: str
    step: PlacedStep
    holds_inputs: bool
    steps_us: list = dataclasses.field(default_factory=list)
    losses: list = dataclasses.field(default_factory=list)
    late_us: list = dataclasses.field(default_factory=list)
    lines: list = dataclasses.field(default_factory=list)   # each timed step's timeline
    starts: list = dataclasses.field(default_factory=list)  # and its start
    sched: list = dataclasses.field(default_factory=list)   # and sched_sample's difference


class _Meter:
    """What the simulator takes as input about this machine, measured in
    rounds between the placements' steps, under the machine's conditions of
    the steps they are to predict (on a shared VM the compute speed moves by
    10-20 % within minutes): each device kind's op times, as `export
    --times measure` takes them (the executor on one device, each op from
    the end of the one before; the first rank of each kind), and the
    compute the ranks share, as `calibrate --model` takes it (every rank's
    one-device step alone, the others waiting at a barrier, then all at
    once)."""

    def __init__(self, cap: Capture, model: nn.Module, optimizer, device: torch.device,
                 rank: int, world: int, kinds: list):
        self.first: dict = {}
        for r, k in enumerate(kinds):
            self.first.setdefault(k, r)
        self.rank, self.world, self.kind = rank, world, kinds[rank]
        self.step = PlacedStep.one_device(cap, model, optimizer, device)
        self.step.contiguous = True
        self.times: dict = {}
        self.alone: list = []
        self.together: list = []

    def round(self, inputs: tuple, timed: bool, timeout_s: float) -> None:
        for r in range(self.world):
            if r == self.rank:
                us = time_one_device_step(self.step, inputs,
                                          timed and self.first[self.kind] == r, self.times)
                if timed:
                    self.alone.append(us)
            _dist.barrier(timeout_s, "timing the one-device step alone")
        if self.world > 1:
            _dist.start_together(timeout_s)
            us = time_one_device_step(self.step, inputs, False, self.times)
            if timed:
                self.together.append(us)
            _dist.barrier(timeout_s, "timing the one-device step on every rank at once")

    def result(self) -> dict:
        """This rank's: op medians (the first rank of its kind), and its
        one-device steps per second alone and with every rank at once."""
        alone = 1e6 / median(self.alone)
        return {"kind": self.kind, "alone": alone,
                "all": 1e6 / median(self.together) if self.together else alone,
                "times": (step_op_times(self.times, self.alone)
                          if self.first[self.kind] == self.rank else None)}


def measured_inputs(graph: dict, cluster: dict, results: list, hosts: list,
                    note: str) -> tuple:
    """(graph, cluster) with the meters' numbers in place of the given
    ones: each kind's op times (measured on its first rank), each device's
    speed against that rank's (its one-device steps alone: processes and
    vCPUs of one kind differ by up to 10 % on a shared VM), and the shared
    compute of the cpu ranks of one host (formats.md 5.8, as calibrate
    groups them)."""
    from ._calibrate import shared_groups
    g = with_op_times(graph, [(r["kind"], r["times"]) for r in results if r["times"]], note)
    names = [d["name"] for d in cluster["devices"]][:len(results)]
    infos = [dict(r, host=h) for r, h in zip(results, hosts)]
    c = json.loads(json.dumps(cluster))
    first: dict = {}
    for d, r in zip(c["devices"], results):  # the op times are the first rank's own
        d["speed"] = r["alone"] / first.setdefault(r["kind"], r["alone"])
    c["shared"] = [{k: gr[k] for k in ("devices", "alone", "all")}
                   for gr in shared_groups(infos, names)]
    if not c["shared"]:
        del c["shared"]
    c.setdefault("calibration", {})["shared_in_situ"] = {
        "by": note, "compute": [{"device": n, "alone": r["alone"], "all": r["all"]}
                                for n, r in zip(names, results)]}
    return g, c


def with_op_times(graph: dict, measured: list, note: str) -> dict:
    """graph with each op's time for a kind replaced by `measured`'s
    ((kind, {op: us}) pairs) where it has one."""
    out = json.loads(json.dumps(graph))
    for kind, times in measured:
        for o in out["ops"]:
            if o["name"] not in times:
                continue
            t = o.get("time_us")
            o["time_us"] = dict(t, **{kind: times[o["name"]]}) if isinstance(t, dict) \
                else {kind: times[o["name"]]}
    out.setdefault("torch", {})["times"] = "measure"
    out["torch"]["times_source"] = note
    return out


def sched_sample() -> Optional[Tuple[float, float]]:
    """(this thread's time waiting for a core, the CPU time of the process's
    other threads: gloo's), in us, as Linux's schedstat counts them so far;
    None where there is no schedstat.  A step's difference says what the
    executor's own timeline cannot: on a node whose cores the ranks fill,
    gloo's threads take cores from the ranks' computing (a 2-rank GNMT step
    on 2 cores: 6-17 ms per rank, each main thread waiting as long)."""
    me = threading.get_native_id()
    try:
        with open("/proc/thread-self/schedstat") as f:
            wait = int(f.read().split()[1])
        tids = os.listdir("/proc/self/task")
    except (OSError, IndexError, ValueError):
        return None
    others = 0
    for tid in tids:
        if tid == str(me):
            continue
        try:
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                others += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended in between
    return wait / 1e3, others / 1e3


def _step_once(run: _Runs, inputs: tuple, device: torch.device, timed: bool,
               timeout_s: float) -> tuple:
    """One step of run's placement, every rank starting it at one instant:
    (the slowest rank's time in us, the loss summed over ranks)."""
    run.step.record = timed  # every timed step's timeline: the breakdown of each
    run.step.timeline = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    s0 = sched_sample() if timed else None  # before the start: its cost is not the step's
    t0, late = _dist.start_together(timeout_s)
    loss = run.step(inputs if run.holds_inputs else None)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    end = _dist.now_us()
    s1 = sched_sample() if s0 is not None else None
    el = torch.tensor([end - t0, late,
                       float(loss) if loss is not None else 0.0], dtype=torch.float64)
    mx = el.clone()
    dist.all_reduce(mx[:2], op=dist.ReduceOp.MAX)
    dist.all_reduce(mx[2:], op=dist.ReduceOp.SUM)
    run.losses.append(float(mx[2]))
    if timed:
        run.steps_us.append(float(mx[0]))
        run.late_us.append(float(mx[1]))
        run.lines.append(run.step.timeline)
        run.starts.append(t0)
        run.sched.append((s1[0] - s0[0], s1[1] - s0[1]) if s0 and s1 else None)
    return float(mx[0]), float(mx[2])


def _run(a, rank, world, device, build_model, make_inputs, loss_fn) -> int:
    from ._export import _optimizer_for
    say = _say_rank0(rank)
    torch.manual_seed(a.seed)
    model = build_model()
    model.train()
    torch.manual_seed(a.seed + 1)
    inputs = make_inputs()
    graph = _load(a.graph, "opplace-graph")
    opt_name = (graph.get("torch") or {}).get("optimizer", "adam")
    optimizer = lambda ps: _optimizer_for(opt_name, ps)  # noqa: E731
    t0 = time.perf_counter()
    cap = capture(model, tuple(inputs), loss_fn, say=say)
    say("captured the step in %.1f s" % (time.perf_counter() - t0))
    runs = []
    for path in a.placement:
        step = PlacedStep(model, inputs, a.graph, path, a.cluster, loss_fn, optimizer, device,
                          timeout_s=a.timeout, say=say, cap=cap)
        runs.append(_Runs(path, step, any(r == rank for r in step.plan.input_rank.values())))
        say("%s: %d ranks; rank 0 runs %d ops; %d transfers per step"
            % (path, world, len(step.plan.order[0]), len(step.plan.transfers)))
    kinds = cluster_kinds(a.cluster, world)
    meter = _Meter(cap, model, optimizer, device, rank, world, kinds) if a.measure else None
    n = len(runs)
    for s in range(a.warmup + a.steps):
        timed = s >= a.warmup
        for i in range(n):  # interleaved, a new placement first each round
            run = runs[(i + s) % n]
            us, loss = _step_once(run, inputs, device, timed, a.timeout)
            say("%sstep %d of %d%s: %.0f us, loss %.6g"
                % (run.path + ": " if n > 1 else "", s + 1, a.warmup + a.steps,
                   "" if timed else " (warm-up)", us, loss))
        if meter is not None:
            meter.round(inputs, timed, a.timeout)
    gathered = []
    for run in runs:
        per_rank = [None] * world
        dist.all_gather_object(per_rank, (run.lines, run.starts, run.sched))
        gathered.append(per_rank)
    measured = None
    if meter is not None:
        import socket
        measured = [None] * world
        dist.all_gather_object(measured, (meter.result(), socket.gethostname()))
    params = gather_params(runs[0].step) if a.save_params else None
    if rank != 0:
        return 0
    results = [_result(a, run, per_rank, graph, kinds)
               for run, per_rank in zip(runs, gathered)]
    if measured is not None:
        g, c = measured_inputs(graph, _load(a.cluster, "opplace-cluster"),
                               [m for m, _ in measured], [h for _, h in measured],
                               "opplace.torch run --measure: %d rounds interleaved with %d "
                               "placements' steps" % (a.steps, n))
        os.makedirs(a.measure, exist_ok=True)
        for name, doc in (("graph.json", g), ("cluster.json", c)):
            with open(os.path.join(a.measure, name), "w") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
    if a.trace and runs[0].steps_us:
        from ._dist import write_trace
        mid = results[0]["median_step"]
        write_trace(a.trace, [lines[mid] for lines, _, _ in gathered[0]],
                    [d["name"] for d in _load(a.cluster, "opplace-cluster")["devices"]])
    if a.save_params:
        torch.save(params, a.save_params)
    doc = results[0] if n == 1 else {"interleaved": True, "steps": a.steps,
                                      "warmup": a.warmup, "runs": results}
    if a.json:
        with open(a.json, "w") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
    short = [{k: r[k] for k in ("placement", "measured_step_us", "measured_ci_us",
                                "simulated_step_us") if k in r}
             for r in results]
    for r in results:
        say(describe(r))
    print(json.dumps(short[0] if n == 1 else short))
    if a.fit_shared:
        _fit_shared(a, results, measured is not None, say)
    return 0


def describe(result: dict) -> str:
    """One line of a run's result for people: the measured median step
    with its 95 % interval, and the simulated step of what ran."""
    ci = result.get("measured_ci_us")
    sim = result.get("simulated_step_us")
    return "%s: measured %.2f ms a step (%s, %d steps)%s" % (
        result["placement"], result["measured_step_us"] / 1e3,
        "95 %% interval %.2f-%.2f" % (ci[0] / 1e3, ci[1] / 1e3) if ci else "too few steps "
        "for an interval", len(result["steps_us"]),
        "; simulated %.2f ms (%+.1f %%)" % (sim / 1e3, 100 * (sim / result["measured_step_us"] - 1))
        if sim else "")


def executed_placement(result: dict) -> dict:
    """A run's placement (result: one of `run --json`'s) with the order its
    job executed: what the simulator is to be held to."""
    return dict(_load(result["placement"], "opplace-placement"), order=result["executed_order"])


def _fit_shared(a, results: list, measured: bool, say: Callable[[str], None]) -> None:
    """run --fit-shared: the cluster (--measure's, where measured) with
    rule 5.8's all / alone fitted to the runs' measured steps."""
    from ._calibrate import _write_json, fit_cluster
    graph = os.path.join(a.measure, "graph.json") if measured else a.graph
    cluster = _load(os.path.join(a.measure, "cluster.json") if measured else a.cluster,
                    "opplace-cluster")
    runs = [(r["placement"], executed_placement(r), r["measured_step_us"]) for r in results]
    try:
        doc = fit_cluster(graph, cluster, runs)
    except (ValueError, RuntimeError) as e:
        raise RunError("--fit-shared: %s" % str(e).replace("opplace.torch: ", "", 1))
    _write_json(a.fit_shared, doc)
    fit = doc["calibration"]["shared_fit"]

    def errs(key: str) -> str:
        e = sorted(abs(x[key] / x["measured_us"] - 1) * 100 for x in fit["runs"])
        return "median %.1f %%, worst %.1f %%" % (statistics.median(e), e[-1])
    say("--fit-shared: rule 5.8's all/alone %.2f (the probe's %.2f): simulated against "
        "measured %s (the probe's: %s); wrote %s"
        % (fit["all_over_alone"], fit["probe_all_over_alone"], errs("simulated_fit_us"),
           errs("simulated_probe_us"), a.fit_shared))


def _result(a, run: _Runs, per_rank: list, graph: dict, kinds: list) -> dict:
    """What run's timed steps measured, next to the simulation of the
    schedule they executed."""
    ci = median_ci(run.steps_us)
    result = {"measured_step_us": median(run.steps_us), "steps_us": run.steps_us,
              "measured_ci_us": list(ci) if ci else None,
              "losses": run.losses, "start_late_us": run.late_us,
              "ranks": len(per_rank), "threads": a.threads, "warmup": a.warmup,
              "placement": run.path, "graph": a.graph, "cluster": a.cluster}
    result.update(_simulated(a, run.path, run.step))
    if result.get("simulated_step_us"):
        result["measured_over_simulated"] = result["measured_step_us"] / result["simulated_step_us"]
    shared_clock = _dist.one_host()  # cached: every rank asked at its steps' starts
    steps_bd = [breakdown([lines[i] for lines, _, _ in per_rank], graph, kinds, run.steps_us[i],
                          [st[i] for _, st, _ in per_rank], [sc[i] for _, _, sc in per_rank],
                          shared_clock)
                for i in range(len(run.steps_us))]
    mid = median_index(run.steps_us)
    result["median_step"] = mid
    result["breakdown"] = steps_bd[mid] if steps_bd else []
    result["steps_breakdown"] = steps_bd
    return result


def cluster_kinds(cluster_path: str, world: int) -> list:
    return [d["kind"] for d in _load(cluster_path, "opplace-cluster")["devices"][:world]]


SLOW_CALL_US = 1000.0  # a send call this long lost its core (typical: 40-300 us)


def _union(events: list) -> Tuple[list, list]:
    """The op events' time covered, as sorted disjoint intervals (starts,
    ends)."""
    starts: list = []
    ends: list = []
    for s, e in sorted((e[2], e[2] + e[3]) for e in events if e[1] == "op"):
        if ends and s <= ends[-1]:
            ends[-1] = max(ends[-1], e)
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


def _covered(union: Tuple[list, list], s: float, e: float) -> float:
    """How much of [s, e) the union covers."""
    starts, ends = union
    i = max(bisect.bisect_right(starts, s) - 1, 0)
    got = 0.0
    while i < len(starts) and starts[i] < e:
        got += max(0.0, min(e, ends[i]) - max(s, starts[i]))
        i += 1
    return got


def breakdown(timelines: list, graph: dict, kinds: list, step_us: float,
              starts: list, sched: Optional[list] = None,
              shared_clock: bool = False) -> list:
    """Where each rank's time went in one timed step (which rank r started
    at starts[r] on its now_us clock): its ops (`ops_us`, against the
    graph's times for them, `graph_ops_us`), its waits for receives
    (`recv_wait_us`), its calls that post receives and send (`send_us`: the
    host's share of its transfers on this thread; of its send calls,
    `slow_calls` took SLOW_CALL_US or more, `slow_calls_us` together: on a
    node whose cores the ranks fill, calls that lost the core for a
    scheduler tick), the rest until its last
    op ended (`other_us`: the executor's loop) and its idle time after that
    (`idle_us`); where sched[r] is known (sched_sample), also the time
    its thread was ready but waited for a core (`core_wait_us`, part of the
    others) and the CPU time of its process's other threads
    (`helper_cpu_us`: gloo's, mostly).  With `shared_clock` (every rank's
    timeline on one clock: one machine), the ops that ran at least half
    their time while another rank ran an op (`ops_beside_us`, and their
    graph times, `graph_ops_beside_us`): the ops that shared the machine's
    compute (formats.md 5.8), against those that did not."""
    times = {o["name"]: o["time_us"] for o in graph.get("ops", [])}

    def graph_us(name: str, kind: str) -> float:
        t = times.get(name, 0.0)
        return float(t.get(kind, 0.0)) if isinstance(t, dict) else float(t)
    out = []
    for r, tl in enumerate(timelines):
        part = {k: sum(e[3] for e in tl if e[1] == k) for k in ("op", "recv", "send")}
        slow = [e[3] for e in tl
                if e[1] == "send" and e[0] != POST_RECEIVES and e[3] >= SLOW_CALL_US]
        end = max((e[2] + e[3] - starts[r] for e in tl), default=0.0)
        out.append({"rank": r, "ops": sum(1 for e in tl if e[1] == "op"), "ops_us": part["op"],
                    "graph_ops_us": sum(graph_us(e[0], kinds[r]) for e in tl if e[1] == "op"),
                    "recv_wait_us": part["recv"], "send_us": part["send"],
                    "slow_calls": len(slow), "slow_calls_us": sum(slow),
                    "other_us": max(end - sum(part.values()), 0.0),
                    "idle_us": max(step_us - end, 0.0)})
        if sched and sched[r]:
            out[-1].update(core_wait_us=sched[r][0], helper_cpu_us=sched[r][1])
        if shared_clock:
            others = _union([e for q, t in enumerate(timelines) if q != r for e in t])
            beside = [e for e in tl if e[1] == "op"
                      and _covered(others, e[2], e[2] + e[3]) >= 0.5 * e[3]]
            out[-1].update(ops_beside_us=sum(e[3] for e in beside),
                           graph_ops_beside_us=sum(graph_us(e[0], kinds[r]) for e in beside))
    return out


def _simulated(a, placement_path: str, step: PlacedStep) -> dict:
    """opplace's simulation of the schedule this run executed."""
    import subprocess
    import tempfile
    from ._measure import opplace_binary
    placement = _load(placement_path, "opplace-placement")
    cluster = _load(a.cluster, "opplace-cluster")
    names = [d["name"] for d in cluster["devices"]]
    order = {names[r]: ops for r, ops in step.plan.order.items() if ops}
    same = all(placement.get("order", {}).get(d) == ops for d, ops in order.items())
    out = {"order": "placement" if same else "program", "executed_order": order}
    try:
        binary = opplace_binary()
    except RuntimeError as e:
        out["simulated_error"] = str(e)
        return out
    with tempfile.TemporaryDirectory() as tmp:
        p = dict(placement)
        p["order"] = order
        ppath = os.path.join(tmp, "p.json")
        with open(ppath, "w") as f:
            json.dump(p, f)
        r = subprocess.run([binary, "simulate", a.graph, "--placement", ppath, "--cluster",
                            a.cluster, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        out["simulated_error"] = r.stderr.strip()
        return out
    m = json.loads(r.stdout)
    out["simulated_step_us"] = m.get("step_time_us", m.get("makespan_us"))
    out["simulated"] = m
    return out
