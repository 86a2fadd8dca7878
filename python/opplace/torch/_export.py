"""opplace.torch.export: one training step of a model as an opplace graph."""
import json
import math
import operator
import os
import time

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from . import _profiles
from ._trace import (meta_tensors, now, use_clock, module_path, nbytes, run_step, tensors_in, to_meta,
                     trace)

OPTIMIZER_STATE = {"adam": 2, "adamw": 2, "momentum": 1, "sgd": 0}
# one FLOP per element of the update ops, per optimizer (Adam: ~10)
OPTIMIZER_FLOPS = {"adam": 10, "adamw": 11, "momentum": 3, "sgd": 2}


def default_loss(out):
    """The sum of every tensor of the output."""
    ts = [t for t in tensors_in(out) if t.is_floating_point()]
    if not ts:
        raise ValueError("opplace.torch: the model's output has no floating-point tensor; "
                         "give a loss_fn")
    loss = ts[0].sum()
    for t in ts[1:]:
        loss = loss + t.sum().to(loss.device)
    return loss


# ------------------------------------------------------------ FLOP counts

def numel(x):
    return sum(t.numel() for t in tensors_in(x))


def forward_flops(n, mod, args, out, kwargs=None):
    """FLOPs of fx node n given its arguments and output (shapes only)."""
    y = numel(out)
    kwargs = kwargs or {}
    if n.op == "call_module":
        if isinstance(mod, nn.modules.conv._ConvNd):
            k = math.prod(mod.kernel_size) * mod.in_channels // mod.groups
            return 2 * y * k + (y if mod.bias is not None else 0)
        if isinstance(mod, nn.Linear):
            return 2 * y * mod.in_features
        if isinstance(mod, nn.Bilinear):
            return 2 * y * mod.in1_features * mod.in2_features
        if isinstance(mod, nn.MultiheadAttention):
            q = args[0] if args else kwargs.get("query")
            kv = args[1] if len(args) > 1 else kwargs.get("key", q)
            e = mod.embed_dim
            lq, lk = q.numel() // e, kv.numel() // e
            batch = q.shape[0] if mod.batch_first else q.shape[1]
            return 4 * lq * e * e + 4 * lk * e * e + 4 * lq * (lk // max(batch, 1)) * e
        if isinstance(mod, nn.RNNBase):
            x = args[0]
            gates = {"LSTM": 4, "GRU": 3}.get(mod.mode, 1)
            steps = x.numel() // mod.input_size
            h = mod.hidden_size * (2 if mod.bidirectional else 1)
            per = 2 * gates * mod.hidden_size * (mod.input_size + mod.hidden_size)
            deep = 2 * gates * mod.hidden_size * (h + mod.hidden_size) * (mod.num_layers - 1)
            return steps * (per + deep) * (2 if mod.bidirectional else 1)
        if isinstance(mod, nn.RNNCellBase):
            gates = {nn.LSTMCell: 4, nn.GRUCell: 3}.get(type(mod), 1)
            b = args[0].numel() // mod.input_size
            return 2 * b * gates * mod.hidden_size * (mod.input_size + mod.hidden_size)
        if isinstance(mod, (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm)):
            return 5 * y
        return y
    tgt = n.target
    if tgt in (torch.matmul, torch.bmm, torch.mm, operator.matmul, "matmul", "bmm", "mm",
               F.linear, torch.einsum, torch.baddbmm, torch.addmm):
        a = next((x for x in args if isinstance(x, torch.Tensor)), None)
        if tgt is torch.einsum:
            a = next((x for x in args[1:] if isinstance(x, torch.Tensor)), None)
        if a is not None and a.dim() >= 1:
            return 2 * y * a.shape[-1]
    name = getattr(tgt, "__name__", str(tgt))
    if name == "shifted_window_attention":  # torchvision's Swin block (fx.wrap'ed)
        x = args[0]
        c = x.shape[-1]
        tokens = x.numel() // c
        ws = args[4] if len(args) > 4 else kwargs.get("window_size")
        win = math.prod(ws) if isinstance(ws, (list, tuple)) else 49
        return 2 * tokens * c * 4 * c + 4 * tokens * win * c
    if tgt in (F.softmax, "softmax", torch.softmax, F.log_softmax, "log_softmax"):
        return 5 * y
    return y


def backward_flops(fn, grad_bytes, out_elems, owner_flops, mm_k, elem_size=4):
    cls = type(fn).__name__
    if mm_k.get(fn):
        return 4 * out_elems * mm_k[fn]
    if (cls.startswith("Convolution") or cls.startswith("CudnnRnn") or
            cls.startswith("MkldnnRnn") or cls.startswith("MkldnnConvolution")) and owner_flops:
        return 2 * owner_flops
    return max(sum(grad_bytes) // elem_size, out_elems)


def scope_of(path):
    """Layer scope of a module path: up to its first numeric part
    ("layer1.0.conv1" -> "layer1/0"), else its first part."""
    if not path:
        return None
    parts = path.split(".")
    for i, p in enumerate(parts):
        if p.isdigit():
            return "/".join(parts[:i + 1])
    return parts[0]


# ----------------------------------------------------------------- export

class _Profiles:
    """One or more roofline profiles of different device kinds
    ("estimate:v100,cpu"): the op's time_us gets one entry per kind."""

    def __init__(self, names):
        self.list = [_profiles.profile(n) for n in names]
        kinds = [p.kind for p in self.list]
        if len(set(kinds)) != len(kinds):
            raise ValueError("opplace.torch: times='estimate:%s' names two profiles of one "
                             "device kind; give at most one per kind (e.g. v100,cpu)"
                             % ",".join(names))
        self.name = "+".join(names)
        self.kind = kinds[0] if len(kinds) == 1 else "+".join(kinds)

    def time_us(self, flops, bytes_moved):
        return {p.kind: p.time_us(flops, bytes_moved) for p in self.list}


def _parse_times(times):
    if times == "measure":
        return None
    if isinstance(times, str) and times.startswith("estimate:") and times[9:]:
        return _Profiles(times[9:].split(","))
    raise ValueError("opplace.torch: times must be 'estimate:PROFILE' (e.g. 'estimate:v100', "
                     "or 'estimate:v100,cpu' for GPU and CPU times) or 'measure', not %r"
                     % (times,))


def _device_of(model, example):
    for t in list(model.parameters()) + [x for x in example if isinstance(x, torch.Tensor)]:
        return t.device
    return torch.device("cpu")


def _input_spec(x):
    if isinstance(x, torch.Tensor):
        return {"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
    raise TypeError("opplace.torch: example inputs must be tensors, got %s"
                    % type(x).__name__)


def export(model, example_inputs, path, loss_fn=None, times="estimate:v100",
           optimizer="adam", repeat=5, name=None, progress=None, clock="wall",
           capture="auto"):
    """Write the opplace-graph file of one training step of
    `model(*example_inputs)` to `path` and return the graph as a dict.

    times: "estimate:PROFILE" (roofline on a profile of src/cost/profiles.c;
    shapes on the meta device, the model is never run) or "measure" (each op
    timed on the device the model is on, averaged over `repeat` steps after a
    warm-up).  The op times are per device kind (time_us {"gpu": t} or
    {"cpu": t}).  optimizer: adam, adamw, momentum or sgd (state bytes and
    update cost).  progress: a callable taking a message, or None.
    clock (measure): "wall" (default) or "cpu", the process's CPU time, for
    one-thread CPU timing on a machine shared with other work.
    capture: "aten" (torch 2.x: the model runs as written under make_fx on
    fake tensors, or on real ones where its control flow needs values;
    docs/pytorch.md "Captures"), "fx" (torch.fx symbolic tracing, module
    granularity; the only one on torch 1.x) or "auto" (aten where torch has
    it, else fx).  The graph file says which one made it (torch.capture)."""
    say = progress or (lambda msg: None)
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example = tuple(example_inputs)
    for x in example:
        _input_spec(x)
    if optimizer not in OPTIMIZER_STATE:
        raise ValueError("opplace.torch: optimizer must be one of %s, not %r"
                         % (", ".join(OPTIMIZER_STATE), optimizer))
    profile = _parse_times(times)
    measure = profile is None
    loss_fn = loss_fn or default_loss
    t_start = time.perf_counter()
    was_training = model.training
    model.train()
    device = _device_of(model, example)
    if measure and device.type == "meta":
        raise ValueError("opplace.torch: times='measure' needs a model with real parameters; "
                         "this one is on the meta device (use times='estimate:PROFILE')")
    kind = ("gpu" if device.type == "cuda" else device.type) if measure else profile.kind
    warnings = []

    def warn(msg):
        warnings.append(msg)
        say("warning: " + msg)

    how = _choose_capture(capture)
    try:
        if how == "aten":
            use_clock(clock)
            graph, how_mode = _export_aten(model, example, loss_fn, optimizer, profile, repeat,
                                           device, kind, say)
        elif measure:
            use_clock(clock)
            gm, names = trace(model, example)
            say("traced %s: %d fx nodes" % (type(model).__name__, len(gm.graph.nodes)))
            graph = _export_measured(model, gm, names, example, loss_fn, optimizer, repeat,
                                     device, kind, warn, say)
        else:
            ex = tuple(to_meta(x) for x in example)
            with meta_tensors(model):
                gm, names = trace(model, ex)
                say("traced %s: %d fx nodes (shapes on the meta device)"
                    % (type(model).__name__, len(gm.graph.nodes)))
                step = run_step(gm, ex, loss_fn, warn=warn)
                pname = {id(p): n for n, p in model.named_parameters()}  # meta ones here
                graph = _build(model, gm, names, step, pname, optimizer, profile, None,
                               kind, warn)
    finally:
        model.train(was_training)
        use_clock("wall")
    graph["name"] = name or "%s_%s" % (type(model).__name__,
                                       "measured_" + kind if measure else profile.name)
    graph["batch_size"] = int(example[0].shape[0]) if example and example[0].dim() else 1
    graph["torch"] = {"inputs": [_input_spec(x) for x in example], "times": times,
                      "clock": clock if measure else None,
                      "time_kind": kind, "optimizer": optimizer, "torch_version": torch.__version__,
                      "capture": how}
    if how == "aten":
        graph["torch"]["capture_mode"] = how_mode
    if warnings:
        graph["torch"]["warnings"] = warnings
    graph = {k: graph[k] for k in ("format", "version", "name", "batch_size", "torch",
                                    "ops", "edges")}
    tmp = str(path) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(graph, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    ops = graph["ops"]
    n_b = sum(1 for o in ops if o["name"].startswith("b/"))
    n_u = sum(1 for o in ops if o["name"].startswith("u/"))
    say("wrote %s: %d ops (%d forward + loss, %d backward, %d updates), %d edges, "
        "times %s on '%s' devices, %.1f s" % (path, len(ops), len(ops) - n_b - n_u, n_b, n_u,
                                             len(graph["edges"]), times, kind,
                                             time.perf_counter() - t_start))
    return graph


def _choose_capture(capture):
    """The capture to use: 'aten' needs torch 2 (make_fx with fake tensors and
    torch.func.functional_call); 'fx' works everywhere."""
    if capture not in ("auto", "aten", "fx"):
        raise ValueError("opplace.torch: capture must be 'auto', 'aten' or 'fx', not %r"
                         % (capture,))
    has_aten = int(torch.__version__.split(".")[0]) >= 2
    if capture == "aten" and not has_aten:
        raise ValueError("opplace.torch: capture='aten' needs torch 2.x (this is %s); use "
                         "capture='fx'" % torch.__version__)
    if capture == "auto":
        return "aten" if has_aten else "fx"
    return capture


def _export_aten(model, example, loss_fn, optimizer, profile, repeat, device, kind, say):
    """(graph dict, capture mode) from the dispatcher-level capture."""
    from ._capture import capture, graph_ops, is_costless, node_flops, node_io_bytes
    t0 = time.perf_counter()
    cap = capture(model, example, loss_fn, say=say)
    n_nodes = sum(len(g.nodes) for g in cap.groups)
    say("captured %s on %s tensors: %d aten ops in %d groups, %.1f s"
        % (type(model).__name__, cap.mode, n_nodes, len(cap.groups), time.perf_counter() - t0))
    state = OPTIMIZER_STATE[optimizer]
    if profile is not None:
        zero = {p.kind: 0.0 for p in profile.list}

        def node_time(n):
            if is_costless(n):
                return zero
            return profile.time_us(node_flops(n), node_io_bytes(n))

        def op_time(g):
            t: dict = {}
            for n in g.nodes if g.kind != "input" else ():
                for k, v in node_time(n).items():
                    t[k] = t.get(k, 0.0) + v
            return t or zero

        def update_time(p):
            shape, dtype, _ = cap.param_meta[p]
            numel = math.prod(shape)
            nb = numel * torch.empty((), dtype=dtype).element_size()
            return profile.time_us(OPTIMIZER_FLOPS[optimizer] * numel, (3 + 2 * state) * nb)
    else:
        from ._run import measure_op_times
        op_us, step_us = measure_op_times(cap, model, example, optimizer, device, repeat,
                                          lambda: now() * 1e6, say)
        say("measured step %.0f us, its ops %.0f us" % (step_us, sum(op_us.values())))

        def op_time(g):
            return {kind: op_us.get(g.name, 0.0)}

        def update_time(p):
            return {kind: op_us.get("u/" + p, 0.0)}
    ops, edges = graph_ops(cap, op_time, update_time, state)
    merged = {(e["src"], e["dst"]): e["bytes"] for e in edges}
    ops = _topological(ops, merged)
    return ({"format": "opplace-graph", "version": 1, "name": "", "batch_size": 1,
             "ops": ops, "edges": edges}, cap.mode)


def _optimizer_for(name, params):
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3)
    if name == "momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return torch.optim.SGD(params, lr=1e-3)


def _time_updates(named, optimizer, repeat, device):
    """Each parameter's update: torch.optim's own step on a copy of that
    parameter alone (so its per-parameter Python overhead is counted)."""
    times = {}
    for name, p in named:
        w = p.detach().clone().requires_grad_(True)
        w.grad = torch.randn_like(w)
        opt = _optimizer_for(optimizer, [w])
        opt.step()  # warm-up; creates the state
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        ts = []
        for _ in range(repeat):
            t0 = now()
            opt.step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            ts.append((now() - t0) * 1e6)
        times[name] = _median(ts)
    return times


def _backward_us(gm, example, loss_fn, device, repeat):
    """Median time of a plain backward pass (no hooks)."""
    out = []
    for _ in range(repeat):
        loss = loss_fn(gm(*example))
        _sync_dev(device)
        t0 = now()
        loss.backward()
        _sync_dev(device)
        out.append((now() - t0) * 1e6)
        for p in gm.parameters():
            p.grad = None
    return sorted(out)[len(out) // 2]


def _sync_dev(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def _export_measured(model, gm, names, example, loss_fn, optimizer, repeat, device, kind,
                     warn, say):
    """Per-op times: the median over `repeat` steps after a warm-up (the
    median, not the mean: on a shared machine a step that is descheduled
    adds milliseconds to whichever op it hits)."""
    fwd, bwd_runs, loss_t = {}, {}, []
    step = None
    runs = repeat + 1
    for r in range(runs):
        step = run_step(gm, example, loss_fn, timing=True, device=device)
        say("measured step %d of %d%s" % (r + 1, runs, " (warm-up)" if r == 0 else ""))
        if r == 0:
            continue
        for k, v in step["rec"].fwd_time.items():
            fwd.setdefault(k, []).append(v)
        for fn, v in step["bwd_time"].items():
            key = step["key_of"].get(fn)
            if key is not None:
                bwd_runs.setdefault(key, []).append(v)
        loss_t.append(step["loss_time"])
    named = list(model.named_parameters())
    upd = _time_updates(named, optimizer, repeat, device)
    bwd = {k: _median(v) for k, v in bwd_runs.items()}
    # the gaps between hook firings include the hooks' own cost: scale them
    # so that they sum to a backward pass without hooks
    plain = _backward_us(gm, example, loss_fn, device, repeat)
    total = sum(bwd.values())
    if total > 0:
        bwd = {k: v * plain / total for k, v in bwd.items()}
    say("backward: %.0f us with a hook per autograd node, %.0f us without; per-op "
        "backward times scaled by %.2f" % (total, plain, plain / total if total else 1.0))
    measured = {"fwd": {k: _median(v) for k, v in fwd.items()},
                "bwd": bwd, "loss": _median(loss_t), "upd": upd}
    pname = {id(p): n for n, p in named}
    return _build(model, gm, names, step, pname, optimizer, None, measured, kind, warn)


def _topological(ops, edges):
    """ops in a topological order of the edges, otherwise as listed (the
    simulator breaks ties by file order; backward hooks may fire out of
    dependency order for nodes that did not run)."""
    import heapq
    index = {o["name"]: i for i, o in enumerate(ops)}
    indeg = [0] * len(ops)
    succ = [[] for _ in ops]
    for (s, d) in edges:
        succ[index[s]].append(index[d])
        indeg[index[d]] += 1
    heap = [i for i in range(len(ops)) if indeg[i] == 0]
    heapq.heapify(heap)
    out = []
    while heap:
        i = heapq.heappop(heap)
        out.append(ops[i])
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(heap, j)
    if len(out) != len(ops):
        raise RuntimeError("opplace.torch: the exported graph has a cycle (a bug; please "
                           "report it with the model)")
    return out


def _build(model, gm, names, step, pname, optimizer, profile, measured, kind, warn):
    """The graph dict from one recorded step.  pname: {id(param tensor as
    seen in the step): qualified name}."""
    rec, key_of, grads = step["rec"], step["key_of"], step["grads"]
    root_mods = dict(gm.named_modules())
    ops, edges = [], []
    op_index = {}

    def t_of(v):
        if isinstance(v, dict):
            return {k: round(max(0.0, float(x)), 3) for k, x in v.items()}
        if profile is not None:  # placeholders and parameters: 0 on every kind
            return {p.kind: round(max(0.0, float(v)), 3) for p in profile.list}
        return {kind: round(max(0.0, float(v)), 3)}

    def add_op(name, typ, time_us, out_bytes, param_bytes=0, layer=None, colocate=None):
        op_index[name] = len(ops)
        ops.append({"name": name, "type": typ, "time_us": t_of(time_us),
                    "output_bytes": int(out_bytes), "param_bytes": int(param_bytes),
                    "temp_bytes": 0, "layer": layer, "colocate": colocate})

    # Which op holds each parameter: the first fx node (in program order) that
    # uses it (a leaf module call or a get_attr).  Every call of one module is
    # colocated with its first call ("param:<module>"); another module that
    # uses a tied parameter gets a copy of it from the holder (an edge).
    producers = {}
    holder = {}          # id(param) -> op name of its holder
    group_of_op = {}     # op name -> colocation group
    fwd_flops = {}
    node_op = {}
    for n in gm.graph.nodes:
        out = rec.outputs.get(n.name)
        tens = tensors_in(out)
        inputs = list(n.all_input_nodes)
        owns_grads = bool(rec.order.get(n.name))
        transparent = n.op == "output" or (n.op != "placeholder" and not owns_grads and (
            not tens or n.target in (operator.getitem, getattr)) and n.op != "get_attr")
        if transparent:
            producers[n.name] = sorted({p for a in inputs for p in producers.get(a.name, [])})
            continue
        mod = root_mods.get(n.target) if n.op == "call_module" else None
        path = module_path(n)
        name = names[n.name]
        owned = []
        if mod is not None:
            owned = [p for p in mod.parameters(recurse=True)] + list(mod.buffers())
        elif n.op == "get_attr":
            owned = tens
        group = None
        wbytes = 0
        tied_from = []
        for w in owned:
            h = holder.get(id(w))
            if h is None:
                holder[id(w)] = name
                wbytes += nbytes(w)
            elif mod is not None and n.op == "call_module" and \
                    group_of_op.get(h) == "param:" + path:
                pass  # the same module called again: its group holds it
            else:
                tied_from.append((h, nbytes(w)))
        if mod is not None and owned:
            group = "param:" + path
        elif n.op == "get_attr":
            group = "param:" + n.target[2:] if n.target.startswith("m.") else "param:" + n.target
        elif owns_grads:
            group = "op:" + name
        out_b = sum(nbytes(t) for t in tens)
        arg_vals = [rec.outputs.get(a.name) if isinstance(a, fx.Node) else a for a in n.args]
        in_b = sum(nbytes(t) for a in inputs for t in tensors_in(rec.outputs.get(a.name)))
        kw_vals = {k: rec.outputs.get(v.name) if isinstance(v, fx.Node) else v
                  for k, v in n.kwargs.items()}
        flops = forward_flops(n, mod, arg_vals, out, kw_vals) if n.op not in ("placeholder", "get_attr") else 0
        fwd_flops[n.name] = flops
        if n.op in ("placeholder", "get_attr"):
            t = 0.0
            typ = "Input" if n.op == "placeholder" else "Parameter"
        else:
            if measured is not None:
                t = measured["fwd"].get(n.name, 0.0)
            else:
                t = profile.time_us(flops, in_b + out_b + wbytes + sum(b for _, b in tied_from))
            typ = (type(mod).__name__ if mod is not None else
                   getattr(n.target, "__name__", str(n.target)))
        add_op(name, typ, t, out_b, wbytes, scope_of(path), group)
        if group:
            group_of_op[name] = group
        node_op[n.name] = name
        producers[n.name] = [name]
        for a in inputs:
            b = sum(nbytes(x) for x in tensors_in(rec.outputs.get(a.name)))
            for p in producers.get(a.name, []):
                edges.append((p, name, b))
        for h, b in tied_from:
            edges.append((h, name, b))

    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    out_val = step["out"]
    if measured is not None:
        lt = measured["loss"]
    else:
        lt = profile.time_us(numel(out_val) * 3, sum(nbytes(t) for t in tensors_in(out_val)) * 2)
    add_op("loss", "Loss", lt, nbytes(step["loss"]), 0, None, "op:loss")
    group_of_op["loss"] = "op:loss"
    node_op["loss"] = "loss"
    for p in producers.get(out_node.name, []):
        edges.append((p, "loss", sum(nbytes(t) for t in tensors_in(out_val))))

    # backward ops, in the order the engine ran them, colocated with their
    # forward op (autograd runs a node where its forward ran)
    bwd_name = {}
    counter = {}
    order = step["fired"] + [fn for fn in key_of if fn not in step["fired"]]
    accumulate = {}
    for fn in order:
        if fn in bwd_name or fn in accumulate or fn not in key_of:
            continue
        owner, idx = key_of[fn]
        cls = type(fn).__name__
        if cls == "AccumulateGrad":
            accumulate[fn] = owner
            continue
        owner_op = node_op.get(owner)
        if owner_op is None:
            owner_op = "loss"
        k = counter.get((owner_op, cls), 0)
        counter[(owner_op, cls)] = k + 1
        bname = "b/%s/%s" % (owner_op, cls) + ("#%d" % k if k else "")
        o = ops[op_index[owner_op]]
        gb = grads.get(fn)
        if gb is None:  # backward did not run (meta kernel missing): forward sizes
            gb = [o["output_bytes"]]
        out_b = sum(gb)
        if measured is not None:
            t = measured["bwd"].get((owner, idx), 0.0)
        else:
            grad_out = max(o["output_bytes"], 1)
            flops = backward_flops(fn, gb, grad_out // 4, fwd_flops.get(owner, 0), step["mm_k"])
            t = profile.time_us(flops, out_b + grad_out + o["output_bytes"])
        add_op(bname, cls, t, out_b, 0, o["layer"], group_of_op.get(owner_op))
        if group_of_op.get(owner_op) is None:  # an op that owned no grads before: give it one
            g = "op:" + owner_op
            o["colocate"] = g
            group_of_op[owner_op] = g
            ops[-1]["colocate"] = g
        bwd_name[fn] = bname
        edges.append((owner_op, bname, o["output_bytes"]))  # saved activations

    state = OPTIMIZER_STATE[optimizer]
    for fn, bname in bwd_name.items():
        gb = grads.get(fn) or []
        for i, (nxt, _) in enumerate(fn.next_functions):
            if nxt is None:
                continue
            b = gb[i] if i < len(gb) else ops[op_index[bname]]["output_bytes"]
            if nxt in bwd_name:
                edges.append((bname, bwd_name[nxt], b))
            elif nxt in accumulate:
                p = nxt.variable
                pn = pname.get(id(p))
                if pn is None:
                    continue  # not a parameter of the model (an input that requires grad)
                uname = "u/" + pn
                if uname not in op_index:
                    h = holder.get(id(p))
                    group = group_of_op.get(h) if h else None
                    if measured is not None:
                        t = measured["upd"].get(pn, 0.0)
                    else:
                        t = profile.time_us(OPTIMIZER_FLOPS[optimizer] * p.numel(),
                                            (3 + 2 * state) * nbytes(p))
                    layer = ops[op_index[h]]["layer"] if h else scope_of(pn.rsplit(".", 1)[0])
                    add_op(uname, "Apply" + optimizer.capitalize(), t, 0, state * nbytes(p),
                           layer, group)
                edges.append((bname, uname, b if b else nbytes(p)))

    merged = {}
    for s, d, b in edges:
        if s == d:
            continue
        merged[(s, d)] = max(merged.get((s, d), 0), int(b))
    ops = _topological(ops, merged)
    for o in ops:
        if o["colocate"] is None:
            del o["colocate"]
        if o["layer"] is None:
            del o["layer"]
    return {"format": "opplace-graph", "version": 1, "name": "", "batch_size": 1,
            "ops": ops, "edges": [{"src": s, "dst": d, "bytes": b}
                                  for (s, d), b in merged.items()]}
