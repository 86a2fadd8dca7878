"""python3 -m opplace.torch export|measure ... (see --help)."""
import argparse
import importlib
import json
import os
import sys
import time


def _die(msg, code=1):
    print("opplace.torch: " + msg, file=sys.stderr)
    sys.exit(code)


def _parse_input(spec):
    """'32x3x224x224' (float32) or '8x128:int64'."""
    import torch
    shape, _, dtype = spec.partition(":")
    try:
        dims = [int(d) for d in shape.lower().split("x")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            "--input %r: give the shape as DxDx...[:dtype], e.g. 32x3x224x224 or 8x128:int64"
            % spec)
    if not dims or any(d < 1 for d in dims):
        raise argparse.ArgumentTypeError("--input %r: dimensions must be positive" % spec)
    dt = getattr(torch, dtype or "float32", None)
    if not isinstance(dt, torch.dtype):
        raise argparse.ArgumentTypeError("--input %r: unknown dtype %r (float32, float16, "
                                          "int64, ...)" % (spec, dtype))
    return dims, dt


def _inputs(specs, device):
    import torch
    out = []
    for dims, dt in specs:
        if dt.is_floating_point:
            out.append(torch.randn(dims, dtype=dt, device=device))
        else:  # token ids: zeros are valid indices for every embedding
            out.append(torch.zeros(dims, dtype=dt, device=device))
    return tuple(out)


def _loss(name):
    import torch
    import torch.nn.functional as F
    from . import default_loss

    def first(out):
        return out[0] if isinstance(out, (tuple, list)) else out

    if name == "sum":
        return default_loss
    if name == "cross_entropy":
        def ce(out):
            o = first(out)
            o = o.reshape(-1, o.shape[-1])
            return F.cross_entropy(o, torch.zeros(o.shape[0], dtype=torch.long, device=o.device))
        return ce
    if name == "mse":
        return lambda out: F.mse_loss(first(out), torch.zeros_like(first(out)))
    raise ValueError(name)


def _build_model(spec, kwargs, meta):
    """module:factory -> model (on the meta device when meta)."""
    import torch
    if ":" not in spec:
        _die("model %r: give it as module:factory, e.g. torchvision.models:resnet50 or "
             "mypackage.models:build" % spec, 2)
    mod_name, _, fn_name = spec.partition(":")
    sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        _die("cannot import module %r for model %r: %s (is it on PYTHONPATH?)"
             % (mod_name, spec, e))
    obj = mod
    for part in fn_name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            _die("module %r has no %r (model %r)" % (mod_name, fn_name, spec))
    if not callable(obj):
        _die("%r is not callable (model %r)" % (fn_name, spec))
    from torch.overrides import TorchFunctionMode
    factories = {torch.empty, torch.zeros, torch.ones, torch.randn, torch.rand, torch.randint,
                 torch.tensor, torch.arange, torch.full, torch.eye, torch.empty_strided,
                 torch.normal, torch.linspace}

    class OnMeta(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func in factories:
                kwargs["device"] = "meta"
            return func(*args, **kwargs)

    try:
        if meta:
            with OnMeta():
                model = obj(**kwargs)
        else:
            model = obj(**kwargs)
    except Exception as e:
        _die("building %s(**%r) failed: %s: %s" % (spec, kwargs, type(e).__name__, e))
    if not isinstance(model, torch.nn.Module):
        _die("%s() returned %s, not an nn.Module" % (spec, type(model).__name__))
    return model


def cmd_export(a):
    import torch
    from . import export
    from ._trace import TraceFailure
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    meta = a.times != "measure"
    t0 = time.perf_counter()
    model = _build_model(a.model, a.kwargs, meta)
    n_params = sum(p.numel() for p in model.parameters())
    print("opplace.torch: built %s: %.3g parameters%s (%.1f s)" % (
        a.model, n_params, " on the meta device" if meta else "", time.perf_counter() - t0),
        file=sys.stderr)
    device = "meta" if meta else a.device
    if not meta:
        model = model.to(device)
    from ._capture import CaptureError

    def run(model, device):
        export(model, _inputs(a.input, device), a.output, loss_fn=_loss(a.loss), times=a.times,
               optimizer=a.optimizer, repeat=a.repeat, name=a.name, clock=a.clock,
               capture=a.capture,
               progress=lambda m: print("opplace.torch: " + m, file=sys.stderr))
    try:
        try:
            run(model, device)
        except CaptureError as e:
            if not meta or "meta device" not in str(e):
                raise
            # its control flow needs values: build it for real, as the capture says
            print("opplace.torch: the model's control flow needs real values; building it "
                  "with real parameters on the CPU and capturing again", file=sys.stderr)
            torch.manual_seed(a.seed)
            run(_build_model(a.model, a.kwargs, False), "cpu")
    except TraceFailure as e:
        _die(str(e).replace("opplace.torch: ", "", 1))
    except (ValueError, TypeError, RuntimeError) as e:
        _die("export of %s failed: %s: %s" % (a.model, type(e).__name__, e))
    except Exception as e:  # a bug of opplace.torch: keep the traceback
        import traceback
        traceback.print_exc()
        _die("export of %s failed inside opplace.torch (%s: %s); please report it with the "
             "traceback above" % (a.model, type(e).__name__, e))


def cmd_measure(a):
    import torch
    from . import measure
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = _build_model(a.model, a.kwargs, False)
    dm = json.loads(a.device_map) if a.device_map.startswith("{") else a.device_map
    first = dm if isinstance(dm, str) else next(iter(dm.values()))
    r = measure(model, _inputs(a.input, first), a.graph, a.placement, dm, a.cluster,
                loss_fn=_loss(a.loss), steps=a.steps, warmup=a.warmup, clock=a.clock)
    print(json.dumps({k: r[k] for k in ("measured_step_us", "simulated_step_us", "ratio",
                                         "steps", "measured_phase_us", "graph_phase_us")}))


def cmd_run(a):
    import torch
    from ._run import run_cli
    _exit_now(run_cli(a, lambda: _build_model(a.model, a.kwargs, False),
                      lambda: _inputs(a.input, "cpu"), _loss(a.loss)))


def _exit_now(code):
    """Leave a torchrun rank without C++ static destructors: with its process
    group already destroyed, they could still abort ('terminate called
    without an active exception') after the work was done and written."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m opplace.torch",
                                 description="PyTorch models in and out of opplace "
                                             "(docs/pytorch.md).")
    sub = ap.add_subparsers(dest="cmd", required=True)
    # calibrate parses its own options (_calibrate.main)
    sub.add_parser("calibrate", add_help=False,
                   help="under torchrun: measure the ranks' devices, links and shared compute; "
                        "write a cluster file (calibrate --help)")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "calibrate":
        from . import _calibrate
        _exit_now(_calibrate.main(argv[1:]))

    def common(p):
        p.add_argument("model", help="module:factory, e.g. torchvision.models:resnet50")
        p.add_argument("--input", action="append", type=_parse_input, required=True,
                       metavar="SHAPE[:DTYPE]",
                       help="one per model input, e.g. 32x3x224x224 or 8x128:int64")
        p.add_argument("--kwargs", type=json.loads, default={},
                       help="factory keyword arguments as JSON, e.g. '{\"num_classes\": 10}'")
        p.add_argument("--loss", choices=("sum", "cross_entropy", "mse"), default="sum",
                       help="loss of the output (default sum)")
        p.add_argument("--threads", type=int, default=1,
                       help="CPU threads torch uses (default 1: steady timings)")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                       help="timing clock: wall (default) or cpu, this process's CPU time "
                            "(one-thread CPU timing on a shared machine)")

    e = sub.add_parser("export", help="write the opplace-graph of one training step")
    common(e)
    e.add_argument("--times", default="estimate:v100",
                   help="estimate:PROFILE (k80, p100, v100, a100, h100, cpu; the model is "
                        "built on the meta device and never run) or measure (default "
                        "estimate:v100)")
    e.add_argument("--device", default="cpu", help="device for --times measure (default cpu)")
    e.add_argument("--optimizer", choices=("adam", "adamw", "momentum", "sgd"), default="adam")
    e.add_argument("--repeat", type=int, default=5, help="timed steps for --times measure")
    e.add_argument("--name", help="graph name")
    e.add_argument("--capture", choices=("auto", "aten", "fx"), default="auto",
                   help="aten (torch 2: the model runs as written), fx (torch.fx symbolic "
                        "tracing) or auto (aten where torch has it; default)")
    e.add_argument("-o", "--output", required=True)
    m = sub.add_parser("measure", help="measured vs simulated step of a placement")
    common(m)
    m.add_argument("--graph", required=True)
    m.add_argument("--placement", required=True)
    m.add_argument("--cluster", required=True)
    m.add_argument("--device-map", default="cpu",
                   help="torch device for every placement device, or JSON "
                        "{\"gpu:0\": \"cuda:0\", ...} (default cpu)")
    m.add_argument("--steps", type=int, default=10)
    m.add_argument("--warmup", type=int, default=3)
    r = sub.add_parser("run", help="run a placement for real: one process per device, "
                                   "started by torchrun (docs/pytorch.md \"Run a placement\")")
    common(r)
    r.add_argument("--graph", required=True)
    r.add_argument("--placement", required=True, action="append",
                   help="the placement to run; given several times, their steps interleave "
                        "(each round runs one step of every placement: a fair comparison on "
                        "a machine whose speed moves)")
    r.add_argument("--cluster", required=True, help="rank i runs device i of this file")
    r.add_argument("--steps", type=int, default=10,
                   help="timed steps (rounds, with several placements; default 10)")
    r.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    r.add_argument("--measure", metavar="DIR",
                   help="also measure what the simulator takes as input, in rounds between "
                        "the placements' steps: op times on one device of each kind (as "
                        "export --times measure) and the compute the ranks share (as "
                        "calibrate --model); write DIR/graph.json and DIR/cluster.json, the "
                        "given files with those numbers in place")
    r.add_argument("--fit-shared", metavar="CLUSTER",
                   help="write the cluster (--measure's, where given) with rule 5.8's all / "
                        "alone fitted to the measured steps of the placements run, for "
                        "placing this model again (run a few placements that use several "
                        "devices; docs/pytorch.md, \"Fit what the ranks share\")")
    r.add_argument("--json", help="write the results (measured step with its 95 %% interval, "
                                  "simulated step, losses)")
    r.add_argument("--trace", help="write each rank's measured timeline, of the median step "
                                   "(Perfetto JSON; one placement)")
    r.add_argument("--save-params", help="write every parameter after the last step "
                                         "(torch.save of a name -> tensor dict)")
    r.add_argument("--timeout", type=float, default=300.0,
                   help="seconds any wait may take before every rank stops (default 300)")
    a = ap.parse_args(argv)
    if a.threads < 1:
        ap.error("--threads must be positive")
    if a.cmd == "export":
        if a.repeat < 1:
            ap.error("--repeat must be positive")
        cmd_export(a)
    elif a.cmd == "run":
        if a.steps < 1 or a.warmup < 0:
            ap.error("--steps must be positive and --warmup not negative")
        if len(a.placement) > 1 and (a.trace or a.save_params):
            ap.error("--trace and --save-params take one --placement")
        cmd_run(a)
    else:
        cmd_measure(a)


if __name__ == "__main__":
    main()
