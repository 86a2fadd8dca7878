"""opplace.torch.measure: a placed module's measured training step next to
opplace's simulated step for the same graph, cluster and placement."""
import json
import os
import shutil
import subprocess

import torch

from ._trace import now, use_clock

from ._apply import apply
from ._export import default_loss

_HERE = os.path.dirname(os.path.abspath(__file__))


def opplace_binary(path=None):
    """The opplace executable: `path`, $OPPLACE, build/opplace of this
    source tree, or `opplace` on PATH."""
    for cand in (path, os.environ.get("OPPLACE"),
                 os.path.normpath(os.path.join(_HERE, "..", "..", "..", "build", "opplace")),
                 shutil.which("opplace")):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    raise RuntimeError("opplace.torch: cannot find the opplace program; build it "
                       "(cmake --build build) or set $OPPLACE")


def simulate(graph_path, placement_path, cluster_path, opplace=None):
    """opplace's metrics (formats.md section 3) for the placement."""
    cmd = [opplace_binary(opplace), "simulate", graph_path, "--placement", placement_path,
           "--cluster", cluster_path, "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("opplace.torch: %s failed: %s" % (" ".join(cmd), r.stderr.strip()))
    return json.loads(r.stdout)


def _sync(module):
    devs = {p.device for p in module.parameters()}
    for d in devs:
        if d.type == "cuda":
            torch.cuda.synchronize(d)


def measure(model, example_inputs, graph_path, placement_path, device_map, cluster_path,
            loss_fn=None, optimizer=None, steps=10, warmup=3, opplace=None, clock="wall"):
    """Apply the placement, run `warmup` then `steps` timed training steps
    (forward, loss, backward, optimizer step) and return
    {"measured_step_us", "simulated_step_us", "ratio", "steps", "step_us"
    (every timed step), "metrics" (opplace simulate's)}.  optimizer: a
    function of the parameters returning a torch.optim optimizer (default:
    Adam, lr 1e-4).  Inputs are moved to the devices their ops are placed on.
    clock: "wall" (default) or "cpu" (process CPU time; for one-thread CPU
    runs on a shared machine, as export's clock)."""
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    metrics = simulate(graph_path, placement_path, cluster_path, opplace)
    placed = apply(model, graph_path, placement_path, device_map)
    placed.train()
    loss_fn = loss_fn or default_loss
    opt = (optimizer or (lambda ps: torch.optim.Adam(ps, lr=1e-4)))(placed.parameters())
    use_clock(clock)
    times = []
    phases = {"forward": [], "backward": [], "update": []}
    for i in range(warmup + steps):
        _sync(placed)
        t0 = now()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(placed(*example_inputs))
        _sync(placed)
        t1 = now()
        loss.backward()
        _sync(placed)
        t2 = now()
        opt.step()
        _sync(placed)
        t3 = now()
        if i >= warmup:
            times.append((t3 - t0) * 1e6)
            phases["forward"].append((t1 - t0) * 1e6)
            phases["backward"].append((t2 - t1) * 1e6)
            phases["update"].append((t3 - t2) * 1e6)

    use_clock("wall")

    def median(xs):
        return sorted(xs)[len(xs) // 2]
    med = median(times)
    sim = float(metrics["step_time_us"])
    # the graph's op times by phase (their sum is the single-device step)
    with open(graph_path) as f:
        ops = json.load(f)["ops"]
    graph_phase = {"forward": 0.0, "backward": 0.0, "update": 0.0}
    for o in ops:
        t = o["time_us"]
        t = max(t.values()) if isinstance(t, dict) else t
        ph = "backward" if o["name"].startswith("b/") else (
            "update" if o["name"].startswith("u/") else "forward")
        graph_phase[ph] += t
    return {"measured_step_us": med, "simulated_step_us": sim,
            "ratio": med / sim if sim > 0 else float("inf"), "steps": steps,
            "step_us": sorted(times), "metrics": metrics,
            "measured_phase_us": {k: median(v) for k, v in phases.items()},
            "graph_phase_us": graph_phase}
