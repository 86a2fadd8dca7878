"""torch.distributed helpers for the per-rank executor and calibration.

Launched by torchrun (one process per device of the cluster file):

    info = env_ranks()                                   # RANK, WORLD_SIZE, LOCAL_RANK
    rd = rank_devices(cluster_doc, info.world, threads=1,
                      rank=info.rank, local_rank=info.local_rank)
    info = init(timeout_s=300, backend=rd.backend)       # the process group
    with guard():                                        # an exception ends every rank
        ... wait(work, timeout_s, "recv of x from rank 1") ...
        write_rank_trace("t.json", my_events, rd.names)  # rank 0 writes every rank's

Rules: rank i runs device i of the cluster file, in file order; every wait
has a timeout; an exception on one rank ends every rank with one clear
message (abort_all) instead of a hang.  Measured timelines are written as
the Chrome/Perfetto trace `opplace place --report t.json` writes
(src/io/trace_write.c): process 1 "devices", one track per device with an
"X" event per op; process 2 "channels", one track per ordered pair that
carried a transfer, named "src->dst" as the simulator names it.
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import sys
import threading
import time
import traceback
from typing import Iterator, NamedTuple, NoReturn, Optional, Sequence

import torch
import torch.distributed as dist

_ABORT_KEY = "opplace/abort"
_PREFIX = "opplace.torch"


class DistError(RuntimeError):
    """A launch or set-up problem; the message says what to do."""


class RankInfo(NamedTuple):
    rank: int
    world: int
    local_rank: int
    backend: Optional[str] = None


class RankDevices(NamedTuple):
    """What each rank runs: names[i] and kinds[i] of rank i (file order)."""
    names: list
    kinds: list
    backend: str                 # "nccl" when every device is a gpu, else "gloo"
    device: Optional[str] = None  # this rank's torch device ("cpu", "cuda:0"), if rank given


# Event of a measured timeline: (name, category, start_us, dur_us) with
# category "op", "send" or "recv", or with a fifth element, a dict of details
# shown as the event's args: {"peer": rank, "bytes": n} for send/recv,
# {"type": "MatMul"} for an op.
Event = tuple

# ---------------------------------------------------------------- launch


def env_ranks() -> RankInfo:
    """RANK, WORLD_SIZE and LOCAL_RANK as torchrun sets them."""
    missing = [k for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK") if k not in os.environ]
    if missing:
        raise DistError("%s not set: start this with torchrun, e.g. torchrun "
                        "--nproc-per-node N -m opplace.torch ..." % ", ".join(missing))
    try:
        r, w, lr = (int(os.environ[k]) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    except ValueError:
        raise DistError("RANK, WORLD_SIZE and LOCAL_RANK must be integers (got %s)" % ", ".join(
            os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")))
    if not (0 <= r < w and lr >= 0):
        raise DistError("RANK %d / WORLD_SIZE %d / LOCAL_RANK %d are inconsistent" % (r, w, lr))
    return RankInfo(r, w, lr)


def backend_for(kinds: Sequence[str]) -> str:
    """nccl when every rank's device is a gpu, else gloo (one backend for
    the whole group: a gpu rank beside a cpu rank stages through the CPU)."""
    return "nccl" if kinds and all(k == "gpu" for k in kinds) else "gloo"


def init(timeout_s: float = 300.0, device: Optional[str] = None,
         backend: Optional[str] = None) -> RankInfo:
    """Start the default process group from torchrun's environment, with
    `timeout_s` on every collective and point-to-point wait.  backend: given,
    or nccl when `device` is a cuda device, else gloo (every rank must pick
    the same: pass rank_devices(...).backend for a mixed cluster)."""
    info = env_ranks()
    if timeout_s <= 0:
        raise DistError("the timeout must be positive (got %g s)" % timeout_s)
    if backend is None:
        backend = "nccl" if device is not None and torch.device(device).type == "cuda" else "gloo"
    if backend == "nccl":
        if not torch.cuda.is_available():
            raise DistError("rank %d: nccl needs CUDA, which this torch cannot use" % info.rank)
        torch.cuda.set_device(info.local_rank)
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")  # timeouts abort
    if not dist.is_initialized():
        dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
    _start_watchdog(info.rank)
    return RankInfo(info.rank, info.world, info.local_rank, backend)


def rank_devices(cluster_doc: dict, world: int, threads: int = 1, rank: Optional[int] = None,
                 local_rank: Optional[int] = None) -> RankDevices:
    """Rank i runs device i of the cluster file.  With `rank`, also set this
    rank up: a cpu device runs torch on `threads` threads; a gpu device is
    cuda:LOCAL_RANK (made current)."""
    devs = cluster_doc.get("devices") if isinstance(cluster_doc, dict) else None
    if not devs:
        raise DistError("the cluster has no devices (an opplace-cluster file has a "
                        "\"devices\" list)")
    names = [d["name"] for d in devs]
    kinds = [d["kind"] for d in devs]
    if len(devs) > world:
        raise DistError("the cluster has %d devices but torchrun started %d ranks: start "
                        "one rank per device (torchrun --nproc-per-node %d, or nodes x "
                        "nproc-per-node = %d); rank i runs device i (%s)"
                        % (len(devs), world, len(devs), len(devs), ", ".join(names)))
    if len(devs) < world:
        raise DistError("torchrun started %d ranks but the cluster has only %d devices (%s): "
                        "start one rank per device (--nproc-per-node %d)"
                        % (world, len(devs), ", ".join(names), len(devs)))
    for i, k in enumerate(kinds):
        if k not in ("cpu", "gpu"):
            raise DistError("device %s has kind %r: a rank runs a 'cpu' or a 'gpu' device"
                            % (names[i], k))
    backend = backend_for(kinds)
    device = None
    if rank is not None:
        if not 0 <= rank < len(devs):
            raise DistError("rank %d: no device %d in the cluster" % (rank, rank))
        if threads < 1:
            raise DistError("threads must be positive (got %d)" % threads)
        if kinds[rank] == "cpu":
            torch.set_num_threads(threads)
            device = "cpu"
        else:
            lr = rank if local_rank is None else local_rank
            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
            if lr >= n:
                raise DistError("rank %d runs %s (a gpu) as cuda:%d, but this machine has %d "
                                "CUDA device(s)" % (rank, names[rank], lr, n))
            torch.cuda.set_device(lr)
            device = "cuda:%d" % lr
    return RankDevices(names, kinds, backend, device)


# ---------------------------------------------------------------- failure


def _store():
    """The default group's store (the rendezvous store), or None."""
    try:
        return dist.distributed_c10d._get_default_store()
    except Exception:
        return None


def _say(msg: str) -> None:
    print("%s: %s" % (_PREFIX, msg), file=sys.stderr, flush=True)


def _rank() -> int:
    try:
        return dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", "0"))
    except Exception:
        return -1


def abort_all(msg: str, code: int = 1) -> NoReturn:
    """End this rank with `msg`, and every other rank with it: the message
    goes to the store, where each rank's watchdog finds it and exits at
    once (rather than waiting for a timeout).  Never returns."""
    me = _rank()
    store = _store() if dist.is_available() and dist.is_initialized() else None
    first = True
    if store is not None:
        try:
            # only the first failure is announced; others are its consequences
            first = store.add(_ABORT_KEY + "/count", 1) == 1
            if first:
                store.set(_ABORT_KEY, json.dumps({"rank": me, "msg": msg}))
        except Exception:
            pass
    if first:
        _say("rank %d: %s" % (me, msg))
    else:
        line = msg.splitlines()[0] if msg else "failed"
        _say("rank %d: stopped (%s)" % (me, line if len(line) < 240 else line[:237] + "..."))
    sys.stdout.flush()
    os._exit(code)  # no destructors: a process group with pending work can hang in them


_watch_stop = threading.Event()
_watch_thread: Optional[threading.Thread] = None


def _watch(rank: int, poll_s: float) -> None:
    store = _store()
    if store is None:
        return
    while not _watch_stop.wait(poll_s):
        try:
            if not store.check([_ABORT_KEY]):
                continue
            info = json.loads(store.get(_ABORT_KEY).decode())
        except Exception:
            return  # the store is gone: the job is ending
        if info.get("rank") != rank:
            _say("rank %d: stopped: rank %s failed (its message above)" % (rank, info.get("rank")))
            sys.stdout.flush()
            os._exit(1)


_watchdog_started = False


def _start_watchdog(rank: int, poll_s: float = 0.5) -> None:
    global _watchdog_started
    if _watchdog_started:
        return
    _watchdog_started = True
    global _watch_thread
    _watch_thread = threading.Thread(target=_watch, args=(rank, poll_s), daemon=True,
                                     name="opplace-abort-watch")
    _watch_thread.start()


def stop_watchdog() -> None:
    """Before the process group goes: its store must not be read from the
    watchdog thread while it is torn down."""
    global _watchdog_started
    _watch_stop.set()
    if _watch_thread is not None:
        _watch_thread.join()
    _watchdog_started = False


def shutdown(*groups) -> None:
    """End this rank's part: the watchdog first, then the given groups and
    the default one (the one way out for every torchrun command)."""
    stop_watchdog()
    for g in groups:
        if g is not None:
            dist.destroy_process_group(g)
    if dist.is_initialized():
        dist.destroy_process_group()


@contextlib.contextmanager
def guard(what: str = "") -> Iterator[None]:
    """Any exception inside ends every rank with one message (abort_all);
    a DistError prints as is, anything else with its traceback."""
    try:
        yield
    except SystemExit as e:
        if e.code not in (0, None):
            abort_all("%sexited with %s" % (what + ": " if what else "", e.code),
                      e.code if isinstance(e.code, int) else 1)
        raise
    except DistError as e:
        abort_all((what + ": " if what else "") + str(e))
    except BaseException as e:  # noqa: B902 - every failure must end every rank
        tb = traceback.format_exc()
        abort_all("%s%s: %s\n%s" % (what + ": " if what else "", type(e).__name__, e, tb))


def wait(work, timeout_s: float, what: str) -> None:
    """Wait for an async send/recv (dist.isend/irecv's Work) at most
    timeout_s; on timeout or failure, end every rank naming `what`."""
    try:
        ok = work.wait(timeout=datetime.timedelta(seconds=timeout_s))
    except Exception as e:
        abort_all("%s failed after at most %g s: %s: %s" % (what, timeout_s, type(e).__name__,
                                                            str(e).splitlines()[0] if str(e)
                                                            else ""))
    if ok is False:
        abort_all("%s did not complete within %g s" % (what, timeout_s))


def barrier(timeout_s: float, what: str = "barrier") -> None:
    """A barrier with a timeout (gloo: monitored, naming missing ranks)."""
    t = datetime.timedelta(seconds=timeout_s)
    try:
        if dist.get_backend() == "gloo":
            dist.monitored_barrier(timeout=t, wait_all_ranks=True)
        else:
            dist.barrier()
    except Exception as e:
        abort_all("%s: not every rank arrived within %g s: %s" % (
            what, timeout_s, str(e).splitlines()[0] if str(e) else type(e).__name__))


_one_host: Optional[bool] = None


def one_host() -> bool:
    """Whether every rank runs on this machine (then they share one
    CLOCK_MONOTONIC)."""
    global _one_host
    if _one_host is None:
        import socket
        names: list = [None] * dist.get_world_size()
        dist.all_gather_object(names, socket.gethostname())
        _one_host = len(set(names)) == 1
    return _one_host


def start_together(timeout_s: float, lead_us: float = 3000.0) -> tuple[float, float]:
    """Start every rank's next step at one instant; returns (the start on
    now_us's clock, how late this rank reached it in us).  A barrier alone
    lets ranks leave it milliseconds apart on a busy machine (measured: up
    to 3 ms on 2 loaded vCPUs), which a step of 20 ms would count as its
    own time.  On one machine rank 0 names an instant `lead_us` ahead and
    every rank waits for it on the shared clock; across machines the ranks
    leave a barrier (a message latency apart)."""
    if not one_host():
        barrier(timeout_s, "step start")
        return now_us(), 0.0
    t = torch.tensor([now_us() + lead_us], dtype=torch.float64)
    dist.broadcast(t, 0)
    start = float(t[0])
    while True:
        left = start - now_us()
        if left <= 0:
            return start, -left
        if left > 300:
            time.sleep((left - 200) / 1e6)


# ---------------------------------------------------------------- traces


def now_us() -> float:
    """The clock of measured timelines (CLOCK_MONOTONIC: shared by every
    process of one machine)."""
    return time.perf_counter_ns() / 1000.0


def _chan_id(n: int, s: int, d: int) -> int:
    """The simulator's id of the pair s -> d's own channel (opplace/cluster.h)."""
    return s * (n - 1) + (d if d < s else d - 1)


def trace_events(timelines: Sequence[Sequence[Event]], device_names: Sequence[str],
                 origin_us: Optional[float] = None) -> dict:
    """The Chrome/Perfetto trace of measured per-rank timelines, in the
    layout of `opplace place --report t.json`: ops on process 1 (track =
    rank = device), each send on process 2's track of its pair "src->dst"
    (when the event names its peer; category "transfer"), each recv wait on
    its rank's track with category "recv"; an op's category is its "type"
    detail, else "Op".  Times are shifted so the earliest event starts at 0
    (or by origin_us)."""
    n = len(device_names)
    if len(timelines) != n:
        raise ValueError("%d timelines for %d devices" % (len(timelines), n))
    starts = [e[2] for tl in timelines for e in tl]
    t0 = origin_us if origin_us is not None else (min(starts) if starts else 0.0)
    meta = [{"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "devices"}},
            {"ph": "M", "pid": 2, "tid": 0, "name": "process_name", "args": {"name": "channels"}}]
    meta += [{"ph": "M", "pid": 1, "tid": d, "name": "thread_name",
              "args": {"name": device_names[d]}} for d in range(n)]
    events, chans = [], {}
    for r, tl in enumerate(timelines):
        for e in tl:
            name, cat, start, dur = e[0], e[1], float(e[2]), float(e[3])
            if cat not in ("op", "send", "recv"):
                raise ValueError("event %r of rank %d: category must be op, send or recv" % (
                    name, r))
            if not (dur >= 0 and start == start):
                raise ValueError("event %r of rank %d: bad time %r + %r" % (name, r, start, dur))
            args = dict(e[4]) if len(e) > 4 and e[4] else {}
            # an op's category is its type, as the simulator writes it
            shown = str(args.pop("type", "Op")) if cat == "op" else cat
            ev = {"ph": "X", "pid": 1, "tid": r, "ts": start - t0, "dur": dur, "name": str(name),
                  "cat": shown, "args": args}
            peer = args.get("peer")
            if cat == "send" and isinstance(peer, int) and 0 <= peer < n and peer != r:
                ch = _chan_id(n, r, peer)
                chans[ch] = "%s->%s" % (device_names[r], device_names[peer])
                ev.update(pid=2, tid=ch, cat="transfer")
                ev["args"] = dict(args, to=device_names[peer])
            events.append(ev)
    meta += [{"ph": "M", "pid": 2, "tid": ch, "name": "thread_name", "args": {"name": nm}}
             for ch, nm in sorted(chans.items())]
    # the C writer's order: metadata, ops, transfers
    events.sort(key=lambda ev: (ev["pid"], ev["tid"], ev["ts"]))
    return {"displayTimeUnit": "ms", "traceEvents": meta + events,
            "otherData": {"source": "measured"}}


def write_trace(path: str, timelines: Sequence[Sequence[Event]],
                device_names: Sequence[str], origin_us: Optional[float] = None) -> None:
    """Write trace_events(...) to path (atomically: a temporary file renamed)."""
    doc = trace_events(timelines, device_names, origin_us)
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(doc, f)
        f.write("\n")
    os.replace(tmp, path)


def gather_timelines(events: Sequence[Event], dst: int = 0) -> Optional[list]:
    """Every rank's events at rank dst (a list, index = rank); None elsewhere."""
    world = dist.get_world_size()
    out = [None] * world if dist.get_rank() == dst else None
    dist.gather_object([tuple(e) for e in events], out, dst=dst)
    return out


def write_rank_trace(path: str, events: Sequence[Event], device_names: Sequence[str],
                     origin_us: Optional[float] = None) -> None:
    """Collective: every rank passes its own events; rank 0 writes the one
    trace of all ranks to path."""
    all_tl = gather_timelines(events)
    if all_tl is not None:
        write_trace(path, all_tl, device_names, origin_us)
