"""Run by test_torch_dist.py under torchrun: `fail` (rank 1 raises while
rank 0 waits for it), `trace` (each rank records a timeline; rank 0
writes the trace) or `start` (5 steps started together; rank 0 writes
every rank's (start, late, clock when started) to OUT as JSON)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from opplace.torch import _dist as D  # noqa: E402

mode, out = sys.argv[1], sys.argv[2]
info = D.init(timeout_s=float(sys.argv[3]) if len(sys.argv) > 3 else 100.0)
with D.guard("step"):
    if mode == "fail":
        if info.rank == 1:
            time.sleep(0.5)
            raise ValueError("boom on purpose")
        t = torch.zeros(4)
        D.wait(dist.irecv(t, src=1), 100.0, "recv of x from rank 1")
        print("rank 0 was not stopped")
    elif mode == "start":
        import json
        got = []
        for k in range(5):
            if info.rank == 1 and k == 2:
                time.sleep(0.05)  # this rank comes late to step 2's start
            start, late = D.start_together(60.0)
            got.append((start, late, D.now_us()))
        every = [None] * info.world
        dist.all_gather_object(every, got)
        if info.rank == 0:
            with open(out, "w") as f:
                json.dump(every, f)
    else:
        D.barrier(60)
        ev = []
        t0 = D.now_us()
        if info.rank == 0:
            x = torch.ones(256)
            ev.append(("a", "op", t0, D.now_us() - t0, {"type": "MatMul"}))
            s = D.now_us()
            D.wait(dist.isend(x, dst=1), 60, "send a")
            ev.append(("a", "send", s, D.now_us() - s, {"peer": 1, "bytes": 1024}))
        else:
            x = torch.zeros(256)
            s = D.now_us()
            D.wait(dist.irecv(x, src=0), 60, "recv a")
            ev.append(("a", "recv", s, D.now_us() - s, {"peer": 0, "bytes": 1024}))
            s = D.now_us()
            y = x * 2
            ev.append(("b", "op", s, D.now_us() - s))
            assert float(y.sum()) == 512.0
        D.write_rank_trace(out, ev, ["cpu:0", "cpu:1"])
        D.barrier(60)
# leave as `opplace.torch` commands do (__main__._exit_now): the group ended,
# then no C++ static destructors, which can abort ('terminate called without
# an active exception') on gloo's threads after the work is done
D.shutdown()
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)
