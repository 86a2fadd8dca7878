#!/usr/bin/python3
"""export_torch.py - a real PyTorch model's training step as an opplace graph.

usage: export_torch.py MODEL [--batch N] [--measure | --estimate PROFILE]
                       [--repeat R] [--threads T] [--seq-len S]
                       [--optimizer adam|momentum|sgd] -o graph.json

MODEL is a torchvision model name (resnet18, resnet50, inception_v3, vgg16,
mobilenet_v2, ...) or "transformer" (torch.nn.Transformer with its default
6 encoder + 6 decoder layers, d_model 512, 8 heads; --seq-len tokens).
Writes an `opplace-graph` file (../shared/formats.md section 1) with:

* forward ops: the nodes of a torch.fx trace of the model.  Leaf modules are
  the modules without children (Conv2d, Linear, BatchNorm2d, ...) and
  nn.MultiheadAttention; everything else is traced through.  Python control
  flow on tensor values (nn.Transformer checks sizes) is resolved by running
  the partial graph on the example input, so the trace is specialised to the
  input shapes.  Nodes that compute nothing (getitem, size, the output) are
  folded away: their consumers depend on their producers directly.
* a "loss" op (cross entropy for classifiers, MSE for the Transformer).
* backward ops: the autograd graph of that loss, walked from loss.grad_fn
  through next_functions.  Each autograd node becomes one op, attributed to
  the forward op whose execution created it (its name, its layer scope, and
  an edge from that forward op for the activations it saved).  Edges between
  backward ops follow next_functions, carrying the real gradient sizes
  (captured by hooks on the autograd nodes during one backward pass).
* weight-update ops: one per parameter ("u/<param>"), fed by the backward op
  that produces the parameter's gradient, colocated (`colocate`) with the
  forward op that owns the weight (group "param:<module path>").
* bytes: output_bytes from the real output shapes; param_bytes: the weights,
  on the forward op that owns them, and the optimizer's state on the update
  op: Adam's two moments (2x the weight bytes; 1x for --optimizer momentum,
  none for sgd), as the zoo counts them.  The gradient itself is the
  output_bytes of the backward op that produces it.
* layer scopes from module paths: the path up to its first numeric part
  ("layer1.0.conv1" -> "layer1/0", "encoder.layers.3.linear1" ->
  "encoder/layers/3"), else its first part ("Mixed_5b", "fc").
* time_us: --measure (default) times every op on this machine's CPU:
  forward ops through a timing torch.fx Interpreter, backward ops as the gap
  between consecutive autograd hook firings (the CPU engine runs them one at
  a time), update ops as the Adam update of that parameter; averaged over
  --repeat steps after one warm-up, on --threads CPU threads (default 1,
  so timings stay steady when other work shares the machine).  Python dispatch (~10-30 us a node) is
  included.  --estimate PROFILE uses the roofline model of
  include/opplace/profile.h with the profile numbers read from
  src/cost/profiles.c (one source of truth): launch_us + max(flops / peak,
  bytes / bandwidth) * 1e6, FLOPs from the shapes (conv 2*|Y|*Cin/g*kh*kw,
  linear/matmul 2*|Y|*K, their gradients twice that, everything else one FLOP
  an element).

Needs Debian's python3-torch and python3-torchvision (run with
/usr/bin/python3).
"""
import argparse
import json
import math
import operator
import os
import re
import sys
import time

try:
    import torch
    import torch.fx as fx
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the machine
    sys.exit("export_torch.py: PyTorch is missing; install python3-torch "
             "(and python3-torchvision) and run with /usr/bin/python3")

HERE = os.path.dirname(os.path.abspath(__file__))
PROFILES_C = os.path.join(HERE, "..", "src", "cost", "profiles.c")


# ------------------------------------------------------------- the profiles

def load_profile(name):
    """Read {name: (peak_flops, bandwidth, launch_us)} from profiles.c."""
    units = {"TFLOPS": 1e12, "GB": 1e9, "GIB": float(1 << 30)}
    try:
        text = open(PROFILES_C).read()
    except OSError as e:
        sys.exit("export_torch.py: cannot read %s: %s" % (PROFILES_C, e))
    pat = re.compile(r'\{\s*"(\w+)",\s*"(\w+)",\s*([^,]+),\s*([^,]+),\s*([^,]+),')
    found = {}
    for m in pat.finditer(text):
        def num(expr):
            expr = expr.strip()
            for u, v in units.items():
                expr = re.sub(r"\b%s\b" % u, repr(v), expr)
            if not re.fullmatch(r"[0-9eE.+\-*/ ()]+", expr):
                raise ValueError(expr)
            return float(eval(expr, {"__builtins__": {}}))  # digits and * only
        try:
            found[m.group(1)] = (num(m.group(3)), num(m.group(4)), num(m.group(5)))
        except ValueError:
            continue
    if name not in found:
        sys.exit("export_torch.py: unknown profile '%s' (known: %s)"
                 % (name, ", ".join(sorted(found))))
    return found[name]


def roofline_us(profile, flops, bytes_moved):
    peak, bw, launch = profile
    return launch + max(flops / peak, bytes_moved / bw) * 1e6


# ------------------------------------------------------------------ models

def build_model(name, batch, seq_len):
    """(module, example inputs, loss function of the output)."""
    if name == "transformer":
        model = nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6,
                               num_decoder_layers=6, dim_feedforward=2048)
        src = torch.randn(seq_len, batch, 512)
        tgt = torch.randn(seq_len, batch, 512)
        target = torch.randn(seq_len, batch, 512)
        return model, (src, tgt), lambda out: F.mse_loss(out, target)
    import torchvision
    ctor = getattr(torchvision.models, name, None)
    if ctor is None or not callable(ctor) or name.startswith("_") or name[0].isupper():
        sys.exit("export_torch.py: unknown model '%s' (a torchvision model name, "
                 "or 'transformer')" % name)
    kwargs = {"weights": None}
    size = 224
    if name == "inception_v3":
        kwargs.update(aux_logits=False, init_weights=False)
        size = 299
    elif name == "googlenet":
        kwargs.update(aux_logits=False, init_weights=False)
    model = ctor(**kwargs)
    x = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, 1000, (batch,))
    return model, (x,), lambda out: F.cross_entropy(out, labels)


class Wrapper(nn.Module):
    """Gives the traced root exactly the example input as its argument (fx
    cannot trace *args on Python 3.11 with torch 1.13), so optional
    arguments (masks) keep their Python defaults."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, x):
        return self.m(x)


class Wrapper2(Wrapper):
    def forward(self, src, tgt):
        return self.m(src, tgt)


# ----------------------------------------------------------------- tracing

class ConcreteTracer(fx.Tracer):
    """torch.fx tracer with the leaf policy above, the module path of each
    node in node.meta["module"], and tensor-dependent control flow resolved
    by evaluating the graph traced so far on the example inputs."""

    def __init__(self, example):
        super().__init__()
        self.example = example
        self.stack = [""]
        self.evaluating = False

    def is_leaf_module(self, m, qualname):
        return isinstance(m, nn.MultiheadAttention) or not any(True for _ in m.children())

    def call_module(self, m, forward, args, kwargs):
        if self.evaluating:  # a real call made by _evaluate, not traced
            return forward(*args, **kwargs)
        self.stack.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.stack.pop()

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if self.evaluating:  # real parameters, not proxies, while evaluating
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["module"] = target if kind == "call_module" else self.stack[-1]
        return node

    def _evaluate(self, proxy):
        g = fx.Graph()
        env = {}
        g.graph_copy(self.graph, env)
        g.output(env[proxy.node])
        gm = fx.GraphModule(self.root, g)
        self.evaluating = True
        try:
            with torch.no_grad():
                return gm(*self.example)
        finally:
            self.evaluating = False

    def to_bool(self, obj):
        return bool(self._evaluate(obj))

    def iter(self, obj):
        return iter([obj[i] for i in range(len(self._evaluate(obj)))])


def trace(model, example):
    root = (Wrapper if len(example) == 1 else Wrapper2)(model)
    tracer = ConcreteTracer(example)
    graph = tracer.trace(root)
    gm = fx.GraphModule(root, graph)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


# --------------------------------------------------------- running a step

def tensors_in(x):
    """Every tensor inside a (nested) output."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in tensors_in(y)]
    if isinstance(x, dict):
        return [t for y in x.values() for t in tensors_in(y)]
    return []


def nbytes(t):
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


class StepRecorder(fx.Interpreter):
    """Runs the traced forward once, timing each node and noting the
    autograd nodes each fx node created (new nodes reachable from its
    outputs' grad_fn)."""

    def __init__(self, gm, known):
        super().__init__(gm)
        self.known = known      # autograd node -> owner key (fx node name)
        self.order = {}         # owner -> [autograd nodes] in discovery order
        self.fwd_time = {}
        self.outputs = {}

    def claim(self, owner, roots):
        found = []
        stack = [fn for fn in roots if fn is not None]
        while stack:
            fn = stack.pop()
            if fn in self.known:
                continue
            self.known[fn] = owner
            found.append(fn)
            for nxt, _ in fn.next_functions:
                if nxt is not None and nxt not in self.known:
                    stack.append(nxt)
        self.order.setdefault(owner, []).extend(found)

    def run_node(self, n):
        t0 = time.perf_counter()
        out = super().run_node(n)
        self.fwd_time[n.name] = (time.perf_counter() - t0) * 1e6
        self.outputs[n.name] = out
        self.claim(n.name, [t.grad_fn for t in tensors_in(out)])
        return out


def run_step(gm, example, loss_fn, params_by_id):
    """One forward + backward; returns what the graph needs."""
    known = {}
    rec = StepRecorder(gm, known)
    t0 = time.perf_counter()
    out = rec.run(*example)
    t1 = time.perf_counter()
    loss = loss_fn(out)
    loss_time = (time.perf_counter() - t1) * 1e6
    rec.claim("loss", [loss.grad_fn])
    # hooks on every autograd node: gradient sizes and firing times
    fired = []
    grads = {}

    def hook_for(fn):
        def hook(grad_inputs, grad_outputs):
            fired.append((fn, time.perf_counter()))
            grads[fn] = [nbytes(g) if g is not None else 0 for g in grad_inputs]
        return hook

    mm_k = {fn: matmul_k(fn) for fn in known if type(fn).__name__ in MATMUL_GRADS}
    handles = [fn.register_hook(hook_for(fn)) for fn in known]
    for p in gm.parameters():
        p.grad = None
    tb = time.perf_counter()
    loss.backward()
    handles.clear()
    bwd_time = {}
    prev = tb
    for fn, t in fired:
        bwd_time[fn] = (t - prev) * 1e6
        prev = t
    # stable keys: (owner, index in discovery order)
    key_of = {}
    for owner, fns in rec.order.items():
        for i, fn in enumerate(fns):
            key_of[fn] = (owner, i)
    return {"rec": rec, "key_of": key_of, "grads": grads, "bwd_time": bwd_time,
            "fired": [fn for fn, _ in fired], "mm_k": mm_k, "loss_time": loss_time,
            "forward_us": (t1 - t0) * 1e6, "out": out, "loss": loss}


def time_updates(params, optimizer, repeat):
    """Mean time of one parameter's optimizer update, in us."""
    times = {}
    b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
    with torch.no_grad():
        for name, p in params:
            g = torch.randn_like(p)
            m, v = torch.zeros_like(p), torch.zeros_like(p)
            w = p.detach().clone()
            t0 = 0.0
            for r in range(repeat + 1):  # the first is a warm-up
                if r == 1:
                    t0 = time.perf_counter()
                if optimizer == "adam":
                    m.mul_(b1).add_(g, alpha=1 - b1)
                    v.mul_(b2).addcmul_(g, g, value=1 - b2)
                    w.addcdiv_(m, v.sqrt().add_(eps), value=-lr)
                elif optimizer == "momentum":
                    m.mul_(b1).add_(g)
                    w.add_(m, alpha=-lr)
                else:
                    w.add_(g, alpha=-lr)
            times[name] = (time.perf_counter() - t0) * 1e6 / repeat
    return times


# ------------------------------------------------------------ FLOP counts

def numel(x):
    return sum(t.numel() for t in tensors_in(x))


def forward_flops(n, mod, args, out):
    """FLOPs of fx node n given its (real) arguments and output."""
    y = numel(out)
    if n.op == "call_module":
        if isinstance(mod, nn.modules.conv._ConvNd):
            k = math.prod(mod.kernel_size) * mod.in_channels // mod.groups
            return 2 * y * k + (y if mod.bias is not None else 0)
        if isinstance(mod, nn.Linear):
            return 2 * y * mod.in_features
        if isinstance(mod, nn.MultiheadAttention):
            q, kv = args[0], args[1]
            e = mod.embed_dim
            lq = q.numel() // e
            lk = kv.numel() // e
            batch = q.shape[0] if mod.batch_first else q.shape[1]
            proj = 2 * lq * e * e * 2 + 2 * lk * e * e * 2  # q, out; k, v
            attn = 2 * 2 * lq * (lk // batch) * e
            return proj + attn
        if isinstance(mod, (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm)):
            return 5 * y
        return y
    tgt = n.target
    if tgt in (torch.matmul, torch.bmm, torch.mm, operator.matmul, "matmul", "bmm", "mm",
               F.linear):
        a = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if a is not None and a.dim() >= 1:
            return 2 * y * a.shape[-1]
    if tgt in (F.softmax, "softmax", torch.softmax):
        return 5 * y
    return y


MATMUL_GRADS = {"MmBackward0", "AddmmBackward0", "BmmBackward0", "BaddbmmBackward0"}


def matmul_k(fn):
    """Inner dimension K of a matmul's gradient node (read before backward
    frees the saved tensors), or 0."""
    for attr in ("_saved_self", "_saved_mat1", "_saved_batch1"):
        try:
            s = getattr(fn, attr, None)
        except RuntimeError:
            return 0
        if isinstance(s, torch.Tensor) and s.dim() >= 1:
            return int(s.shape[-1])
    return 0


def backward_flops(fn, grad_bytes, out_elems, owner_flops, mm_k, elem_size=4):
    cls = type(fn).__name__
    if mm_k.get(fn):
        return 4 * out_elems * mm_k[fn]
    if cls.startswith("Convolution") and owner_flops:
        return 2 * owner_flops
    return max(sum(grad_bytes) // elem_size, out_elems)


# ----------------------------------------------------------- graph build

def scope_of(path):
    """Layer scope of a module path (see the module docstring)."""
    if not path:
        return None
    parts = path.split(".")
    if parts[0] == "m":  # the Wrapper
        parts = parts[1:]
    if not parts:
        return None
    for i, p in enumerate(parts):
        if p.isdigit():
            return "/".join(parts[:i + 1])
    return parts[0]


def strip_wrapper(path):
    return path[2:] if path.startswith("m.") else path


def export(args):
    torch.manual_seed(0)
    t_start = time.perf_counter()
    model, example, loss_fn = build_model(args.model, args.batch, args.seq_len)
    model.train()
    gm = trace(model, example)
    modules = dict(gm.named_modules())
    params = [(strip_wrapper(n), p) for n, p in gm.named_parameters()]
    param_name = {id(p): n for n, p in params}

    measure = args.estimate is None
    profile = None if measure else load_profile(args.estimate)
    runs = args.repeat + 1 if measure else 1
    fwd_sum, bwd_sum, loss_sum = {}, {}, 0.0
    step = None
    for r in range(runs):
        step = run_step(gm, example, loss_fn, None)
        if measure and r == 0 and runs > 1:
            continue  # warm-up
        for k, v in step["rec"].fwd_time.items():
            fwd_sum[k] = fwd_sum.get(k, 0.0) + v
        for fn, v in step["bwd_time"].items():
            key = step["key_of"].get(fn)
            if key is not None:
                bwd_sum[key] = bwd_sum.get(key, 0.0) + v
        loss_sum += step["loss_time"]
    counted = max(1, runs - 1) if measure else 1
    upd_time = time_updates(params, args.optimizer, args.repeat) if measure else {}

    rec, key_of, grads = step["rec"], step["key_of"], step["grads"]
    ops, edges = [], []
    op_index = {}

    def add_op(name, typ, time_us, out_bytes, param_bytes=0, layer=None, colocate=None):
        op_index[name] = len(ops)
        ops.append({"name": name, "type": typ, "time_us": max(0.0, float(time_us)),
                    "output_bytes": int(out_bytes), "param_bytes": int(param_bytes),
                    "temp_bytes": 0, "layer": layer, "colocate": colocate,
                    "kind": None, "device": None})

    # forward ops; transparent nodes map to the ops they pass data from
    producers = {}
    param_group = {}  # id(weight) -> colocation group of the op that holds it
    fwd_flops = {}
    node_op = {}
    for n in gm.graph.nodes:
        out = rec.outputs.get(n.name)
        tens = tensors_in(out)
        inputs = [a for a in n.all_input_nodes]
        owns_grads = bool(rec.order.get(n.name))
        transparent = n.op == "output" or (n.op != "placeholder" and not owns_grads and (
            not tens or n.target in (operator.getitem, getattr)))
        if transparent:
            producers[n.name] = sorted({p for a in inputs for p in producers.get(a.name, [])})
            continue
        mod = modules.get(n.target) if n.op == "call_module" else None
        path = strip_wrapper(n.meta.get("module", "") or "")
        if n.op == "call_module":
            path = strip_wrapper(n.target)
        wbytes = sum(nbytes(p) for p in mod.parameters(recurse=True)) if mod is not None else 0
        if n.op == "get_attr":
            wbytes = sum(nbytes(t) for t in tens)
        out_b = sum(nbytes(t) for t in tens)
        arg_vals = [rec.outputs.get(a.name) for a in n.args if isinstance(a, fx.Node)]
        in_b = sum(nbytes(t) for a in inputs for t in tensors_in(rec.outputs.get(a.name)))
        flops = forward_flops(n, mod, arg_vals, out) if n.op != "placeholder" else 0
        fwd_flops[n.name] = flops
        if n.op == "placeholder":
            t = 0.0
            typ = "Input"
        else:
            t = (fwd_sum.get(n.name, 0.0) / counted if measure
                 else roofline_us(profile, flops, in_b + out_b + wbytes))
            typ = (type(mod).__name__ if mod is not None else
                   getattr(n.target, "__name__", str(n.target)))
        group = None
        if wbytes:
            group = "param:" + (path if n.op == "call_module" else strip_wrapper(n.target))
            owned = list(mod.parameters()) if mod is not None else tens
            for w in owned:
                param_group.setdefault(id(w), group)
        name = "f/" + (n.name[2:] if n.name.startswith("m_") else n.name)
        add_op(name, typ, t, out_b, wbytes, scope_of(path), group)
        node_op[n.name] = name
        producers[n.name] = [name]
        for a in inputs:
            for p in producers.get(a.name, []):
                b = sum(nbytes(t) for t in tensors_in(rec.outputs.get(a.name)))
                edges.append((p, name, b))

    out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
    loss_bytes = nbytes(step["loss"])
    add_op("loss", "Loss", loss_sum / counted if measure else
           roofline_us(profile, numel(step["out"]) * 3, nbytes(step["out"]) * 2), loss_bytes)
    for p in producers.get(out_node.name, []):
        edges.append((p, "loss", sum(nbytes(t) for t in tensors_in(step["out"]))))

    # backward ops, in the order the engine ran them
    bwd_name = {}
    counter = {}
    order = step["fired"] + [fn for fn in key_of if fn not in grads]
    accumulate = {}
    for fn in order:
        if fn in bwd_name or fn in accumulate:
            continue
        owner, idx = key_of[fn]
        cls = type(fn).__name__
        if cls == "AccumulateGrad":
            accumulate[fn] = owner
            continue
        k = counter.get((owner, cls), 0)
        counter[(owner, cls)] = k + 1
        name = "b/%s/%s" % (owner, cls) + ("#%d" % k if k else "")
        gb = grads.get(fn, [])
        out_b = sum(gb)
        owner_op = node_op.get(owner, "loss")
        o = ops[op_index[owner_op]]
        if measure:
            t = bwd_sum.get((owner, idx), 0.0) / counted
        else:
            grad_out = max(o["output_bytes"], 1)
            flops = backward_flops(fn, gb, grad_out // 4, fwd_flops.get(owner, 0),
                                   step["mm_k"])
            t = roofline_us(profile, flops, out_b + grad_out + o["output_bytes"])
        add_op(name, cls, t, out_b, 0, o["layer"])
        bwd_name[fn] = name
        edges.append((owner_op, name, o["output_bytes"]))  # saved activations

    # gradient edges between backward ops, and into the update ops
    for fn, name in bwd_name.items():
        gb = grads.get(fn, [])
        for i, (nxt, _) in enumerate(fn.next_functions):
            if nxt is None:
                continue
            b = gb[i] if i < len(gb) else 0
            if nxt in bwd_name:
                edges.append((name, bwd_name[nxt], b))
            elif nxt in accumulate:
                p = nxt.variable
                pname = param_name.get(id(p), "param%d" % id(p))
                uname = "u/" + pname
                if uname not in op_index:
                    group = param_group.get(id(p))
                    state = {"adam": 2, "momentum": 1, "sgd": 0}[args.optimizer]
                    if measure:
                        t = upd_time.get(pname, 0.0)
                    else:
                        t = roofline_us(profile, 10 * p.numel(), 7 * nbytes(p))
                    add_op(uname, "Apply" + args.optimizer.capitalize(), t, 0,
                           state * nbytes(p), scope_of(pname.rsplit(".", 1)[0]), group)
                edges.append((name, uname, b))

    merged = {}
    for s, d, b in edges:
        if s == d:
            continue
        merged[(s, d)] = max(merged.get((s, d), 0), int(b))
    graph = {
        "format": "opplace-graph",
        "version": 1,
        "name": "%s_b%d_%s" % (args.model, args.batch,
                               "cpu" if measure else args.estimate),
        "batch_size": args.batch,
        "ops": ops,
        "edges": [{"src": s, "dst": d, "bytes": b} for (s, d), b in merged.items()],
    }
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(graph, f, indent=1)
        f.write("\n")
    os.replace(tmp, args.output)
    n_b = len(bwd_name)
    n_u = sum(1 for o in ops if o["name"].startswith("u/"))
    print("export_torch.py: %s: %d ops (%d forward + loss, %d backward, %d updates), "
          "%d edges, %.1f s" % (args.output, len(ops), len(ops) - n_b - n_u, n_b, n_u,
                                len(merged), time.perf_counter() - t_start),
          file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="export_torch.py",
        description="Export a PyTorch model's training step as an opplace-graph file.")
    ap.add_argument("model", help="torchvision model name, or 'transformer'")
    ap.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--measure", action="store_true",
                      help="time every op on this machine's CPU (the default)")
    mode.add_argument("--estimate", metavar="PROFILE",
                      help="roofline times on a device profile (k80, p100, v100, a100, h100, cpu)")
    ap.add_argument("--repeat", type=int, default=5, help="measured steps averaged (default 5)")
    ap.add_argument("--seq-len", type=int, default=32, help="Transformer tokens (default 32)")
    ap.add_argument("--optimizer", choices=("adam", "momentum", "sgd"), default="adam",
                    help="optimizer whose state the update ops hold (default adam)")
    ap.add_argument("--threads", type=int, default=1,
                    help="CPU threads torch may use (default 1: steady per-op timings "
                         "on a shared machine)")
    ap.add_argument("-o", "--output", required=True, help="graph file to write")
    args = ap.parse_args(argv)
    if args.batch < 1 or args.repeat < 1 or args.seq_len < 1 or args.threads < 1:
        ap.error("--batch, --repeat, --seq-len and --threads must be positive")
    torch.set_num_threads(args.threads)
    export(args)


if __name__ == "__main__":
    main()
