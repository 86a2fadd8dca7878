"""Tracing a model with torch.fx, shapes on the meta device, and the record
of one training step (which autograd nodes each fx node created)."""
import contextlib
import time

import torch
import torch.fx as fx
import torch.nn as nn

# ------------------------------------------------ meta kernels torch lacks

_meta_lib = None


def _install_meta_kernels():
    """torch 1.13 has no meta kernel for convolution_backward; its result
    shapes are those of input, weight and bias."""
    global _meta_lib
    if _meta_lib is not None:
        return
    _meta_lib = torch.library.Library("aten", "IMPL", "Meta")

    def conv_bwd(grad_output, input, weight, bias_sizes, stride, padding, dilation,
                 transposed, output_padding, groups, output_mask):
        gi = torch.empty_like(input) if output_mask[0] else None
        gw = torch.empty_like(weight) if output_mask[1] else None
        gb = (grad_output.new_empty(bias_sizes)
              if output_mask[2] and bias_sizes is not None else None)
        return gi, gw, gb

    try:
        _meta_lib.impl("convolution_backward", conv_bwd)
    except RuntimeError:  # a later torch has one
        pass


@contextlib.contextmanager
def meta_tensors(model):
    """Within, every parameter and buffer of `model` is a meta tensor of the
    same shape (tied ones stay tied); the model's own storage is untouched
    and restored on exit.  Yields {id(original tensor): meta tensor}."""
    _install_meta_kernels()
    saved = []
    meta_of = {}
    for m in model.modules():
        for key in ("_parameters", "_buffers"):
            d = getattr(m, key)
            for k, t in list(d.items()):
                if t is None:
                    continue
                if id(t) not in meta_of:
                    mt = torch.empty_like(t, device="meta")
                    if key == "_parameters":
                        mt = nn.Parameter(mt, requires_grad=t.requires_grad)
                    meta_of[id(t)] = mt
                saved.append((d, k, t))
                d[k] = meta_of[id(t)]
    refresh_flat_weights(model)
    try:
        yield meta_of
    finally:
        for d, k, t in saved:
            d[k] = t
        refresh_flat_weights(model)


def refresh_flat_weights(model):
    """nn.LSTM/GRU/RNN keep a list of their weights besides _parameters."""
    for m in model.modules():
        if isinstance(m, nn.RNNBase) and hasattr(m, "_flat_weights_names"):
            m._flat_weights = [getattr(m, wn) if hasattr(m, wn) else None
                               for wn in m._flat_weights_names]


def to_meta(x):
    if isinstance(x, torch.Tensor):
        return torch.empty_like(x, device="meta")
    return x


# ---------------------------------------------------------------- tracing

def input_names(model, n_inputs):
    """The model's own forward argument names for n positional inputs (as
    torch.fx.symbolic_trace(model) names them), else input_0, input_1, ..."""
    names = ["input_%d" % i for i in range(n_inputs)]
    try:
        import inspect
        ps = [p for p in inspect.signature(model.forward).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return names
    if len(ps) >= n_inputs:
        own = [p.name for p in ps[:n_inputs]]
        if all(n.isidentifier() and n not in ("self", "m") for n in own):
            return own
    return names


def root_for(model, n_inputs):
    """A module whose forward takes exactly n tensors and calls `model` (fx
    cannot trace *args, and optional arguments must keep their defaults)."""
    names = input_names(model, n_inputs)
    src = "def forward(self, %s):\n    return self.m(%s)\n" % (", ".join(names), ", ".join(names))
    ns = {}
    exec(src, ns)
    cls = type("OpplaceRoot", (nn.Module,), {"forward": ns["forward"]})
    root = cls()
    root.m = model
    return root


def is_leaf(m):
    return isinstance(m, nn.MultiheadAttention) or not any(True for _ in m.children())


class TraceFailure(Exception):
    pass


class _Proxy(fx.Proxy):
    """fx.Proxy whose iteration asks the tracer (torch 1.13's own __iter__
    reads bytecode offsets that Python 3.11 changed)."""

    def __iter__(self):
        return self.tracer.iter(self)


class ConcreteTracer(fx.Tracer):
    """torch.fx tracer: leaves are the modules without children (and
    nn.MultiheadAttention); node.meta["module"] is the module path; Python
    control flow on sizes is resolved by evaluating the graph traced so far
    on the example inputs (meta tensors under estimate)."""

    def __init__(self, example):
        super().__init__()
        self.example = example
        self.stack = [""]
        self.evaluating = False

    def is_leaf_module(self, m, qualname):
        return is_leaf(m)

    def proxy(self, node):
        return _Proxy(node, self)

    def call_module(self, m, forward, args, kwargs):
        if self.evaluating:
            return forward(*args, **kwargs)
        self.stack.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.stack.pop()

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if self.evaluating:
            return attr_val
        if isinstance(attr_val, torch.Tensor) and not isinstance(attr_val, nn.Parameter):
            # buffers become get_attr nodes too (fx proxies only parameters),
            # so that indexing one with a traced size works
            for n, b in self.root.named_buffers():
                if b is attr_val:
                    if n not in parameter_proxy_cache:
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                    return parameter_proxy_cache[n]
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["module"] = target if kind == "call_module" else self.stack[-1]
        return node

    def _evaluate(self, proxy):
        proxy.node  # an Attribute proxy (x.shape) creates its node on first use
        g = fx.Graph()
        env = {}
        g.graph_copy(self.graph, env)
        g.output(env[proxy.node])
        was = self.evaluating
        self.evaluating = True  # also while GraphModule copies attributes: real ones
        try:
            gm = fx.GraphModule(self.root, g)
            with torch.no_grad():
                return gm(*self.example)
        except Exception as e:
            raise TraceFailure(
                "the value of '%s' (in module '%s') decides Python control flow, and "
                "evaluating it on the example inputs failed: %s: %s"
                % (proxy.node.name, _strip(self.stack[-1]) or "<model>", type(e).__name__, e))
        finally:
            self.evaluating = was

    def to_bool(self, obj):
        v = self._evaluate(obj)
        if isinstance(v, torch.Tensor) and v.device.type == "meta":
            raise TraceFailure(
                "module '%s' branches on the value of tensor '%s' (not only its shape); "
                "with times='estimate:...' no values exist" % (
                    _strip(self.stack[-1]) or "<model>", obj.node.name))
        return bool(v)

    def iter(self, obj):
        return iter([obj[i] for i in range(len(self._evaluate(obj)))])


def _strip(path):
    if path == "m":
        return ""
    return path[2:] if path.startswith("m.") else path


def trace(model, example):
    """(GraphModule over the root wrapper, {fx node name: op name})."""
    root = root_for(model, len(example))
    tracer = ConcreteTracer(example)
    orig_iter = fx.Proxy.__iter__
    fx.Proxy.__iter__ = _Proxy.__iter__  # also for Attribute proxies (x.shape)
    try:
        graph = tracer.trace(root)
    except TraceFailure as e:
        raise TraceFailure(
            "opplace.torch: torch.fx cannot trace %s: %s.  What to do: make the branch "
            "depend on shapes only, or move the construct into a submodule without "
            "children (opplace treats those as one op), or wrap the function with "
            "torch.fx.wrap." % (type(model).__name__, e)) from None
    except Exception as e:
        where = _strip(tracer.stack[-1]) or "<model>"
        raise TraceFailure(
            "opplace.torch: torch.fx cannot trace %s: in module '%s' (%s): %s: %s.  "
            "What to do: avoid data-dependent Python control flow and non-torch calls on "
            "tensors in forward(), or move that construct into a submodule without "
            "children (treated as one op), or wrap the function with torch.fx.wrap "
            "(https://pytorch.org/docs/stable/fx.html#limitations-of-symbolic-tracing)."
            % (type(model).__name__, where, type(tracer.root.get_submodule(
                tracer.stack[-1]) if tracer.stack[-1] else model).__name__,
               type(e).__name__, str(e).split("\n")[0])) from None
    finally:
        fx.Proxy.__iter__ = orig_iter
    gm = fx.GraphModule(root, graph)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    names = {}
    taken = {n.name for n in gm.graph.nodes}
    for n in gm.graph.nodes:
        short = n.name[2:] if n.name.startswith("m_") and n.name != "m_" else n.name
        if short != n.name and short in taken:
            short = n.name
        names[n.name] = short
    return gm, names


def module_path(node):
    if node.op == "call_module":
        return _strip(node.target)
    return _strip(node.meta.get("module", "") or "")


# ------------------------------------------------------- one step, recorded

def tensors_in(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in tensors_in(y)]
    if isinstance(x, dict):
        return [t for y in x.values() for t in tensors_in(y)]
    return []


def nbytes(t):
    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def _sync(device):
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


class StepRecorder(fx.Interpreter):
    """Runs the traced forward once, timing each node (timing=True) and
    noting the autograd nodes each fx node created."""

    def __init__(self, gm, known, timing, device):
        super().__init__(gm)
        self.known = known
        self.order = {}
        self.fwd_time = {}
        self.outputs = {}
        self.timing = timing
        self.device = device

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
        if self.timing:
            _sync(self.device)
        t0 = now()
        out = super().run_node(n)
        if self.timing:
            _sync(self.device)
        self.fwd_time[n.name] = (now() - t0) * 1e6
        self.outputs[n.name] = out
        self.claim(n.name, [t.grad_fn for t in tensors_in(out)])
        return out


_clock = time.perf_counter


def now():
    """The timing clock: wall time (default), or this process's CPU time
    (use_clock("cpu")) for single-threaded CPU timing on a shared machine,
    where descheduling would otherwise be charged to whichever op it hits."""
    return _clock()


def use_clock(name):
    global _clock
    if name == "wall":
        _clock = time.perf_counter
    elif name == "cpu":
        _clock = time.process_time
    else:
        raise ValueError("opplace.torch: clock must be 'wall' or 'cpu', not %r" % (name,))


MATMUL_GRADS = {"MmBackward0", "AddmmBackward0", "BmmBackward0", "BaddbmmBackward0"}


def matmul_k(fn):
    for attr in ("_saved_self", "_saved_mat1", "_saved_batch1"):
        try:
            s = getattr(fn, attr, None)
        except RuntimeError:
            return 0
        if isinstance(s, torch.Tensor) and s.dim() >= 1:
            return int(s.shape[-1])
    return 0


def run_step(gm, example, loss_fn, timing=False, device=None, warn=None):
    """One forward + loss + backward; returns what the graph needs."""
    known = {}
    rec = StepRecorder(gm, known, timing, device)
    out = rec.run(*example)
    _sync(device if timing else None)
    t1 = now()
    loss = loss_fn(out)
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError("opplace.torch: loss_fn(output) must return a scalar tensor, got %r"
                         % (type(loss).__name__ if not isinstance(loss, torch.Tensor)
                            else tuple(loss.shape)))
    if timing:
        _sync(device)
    loss_time = (now() - t1) * 1e6
    rec.claim("loss", [loss.grad_fn])
    fired = []
    grads = {}

    def hook_for(fn):
        def hook(grad_inputs, grad_outputs):
            if timing:
                _sync(device)
            fired.append((fn, now()))
            grads[fn] = [nbytes(g) if g is not None else 0 for g in grad_inputs]
        return hook

    mm_k = {fn: matmul_k(fn) for fn in known if type(fn).__name__ in MATMUL_GRADS}
    handles = [fn.register_hook(hook_for(fn)) for fn in known]
    for p in gm.parameters():
        p.grad = None
    if loss.grad_fn is None:
        raise ValueError("opplace.torch: the loss does not depend on any parameter or input "
                         "that requires grad; nothing to train")
    tb = now()
    backward_ok = True
    try:
        loss.backward()
    except NotImplementedError as e:  # an op with no meta kernel for its gradient
        backward_ok = False
        if warn:
            warn("backward on the meta device failed (%s); gradient sizes are taken from "
                 "the forward outputs" % str(e).split("\n")[0])
    handles.clear()
    bwd_time = {}
    prev = tb
    for fn, t in fired:
        bwd_time[fn] = (t - prev) * 1e6
        prev = t
    key_of = {}
    for owner, fns in rec.order.items():
        for i, fn in enumerate(fns):
            key_of[fn] = (owner, i)
    for p in gm.parameters():
        p.grad = None
    return {"rec": rec, "key_of": key_of, "grads": grads, "bwd_time": bwd_time,
            "fired": [fn for fn, _ in fired], "mm_k": mm_k, "loss_time": loss_time,
            "out": out, "loss": loss, "backward_ok": backward_ok}
