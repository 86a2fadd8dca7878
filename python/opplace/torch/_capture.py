"""The dispatcher-level capture of one training step (torch 2.x).

The model's Python runs as written, under ``make_fx``, on fake tensors
(shapes only; nothing is computed): forward, loss and the backward that
``torch.autograd.grad`` runs become one graph of aten ops, the *joint
graph*.  Control flow on the example inputs' values (``lengths.max()``)
cannot be decided on fake tensors; such a model is traced again on real
tensors on the CPU (a real forward and backward).  Whatever the mode, no
symbolic tracing of the model's source happens: any model that runs
eagerly is captured.

The aten ops are then grouped back into the ops a placement moves:

* one op per call of a *leaf module* (a module without children, or
  ``nn.MultiheadAttention``): every aten op run inside it;
* one op per *free run*: the aten ops a non-leaf module runs itself between
  two calls of its children (a residual ``add``, attention arithmetic);
  a run of views only joins the op that produced its input;
* ``loss``: the loss function and the seed of the backward pass;
* ``b/NAME``: the backward ops autograd ran for the forward op ``NAME``
  (found through the autograd sequence number each aten op records);
* ``u/PARAM``: each parameter's optimizer update (not in the joint graph;
  the optimizer runs it).

Each op records where it came from (``source``: the module path, the
call's index and, for a free run, its index within that call) so that
``apply`` routes the model's own eager execution to the placed devices
without tracing again, and ``opplace.torch run`` executes the joint graph
op by op on several processes.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import operator
from typing import Any, Callable, Iterator, Optional

import torch
import torch.fx as fx
import torch.nn as nn

from ._trace import input_names, is_leaf, refresh_flat_weights

aten = torch.ops.aten

# aten ops that move no data (views, and splits that return views)
_FREE_OPS = {"_unsafe_view", "unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes",
             "detach", "lift_fresh", "alias", "_reshape_alias"}


class CaptureError(RuntimeError):
    """The model could not be captured; the message says where and what to do."""


def nbytes_of(v: Any) -> int:
    if isinstance(v, torch.Tensor):
        return v.numel() * v.element_size()
    if isinstance(v, (tuple, list)):
        return sum(nbytes_of(x) for x in v)
    return 0


def is_costless(n: fx.Node) -> bool:
    """A node that moves no data: views, getitem, and placeholders."""
    if n.op != "call_function":
        return True
    t = n.target
    if t is operator.getitem:
        return True
    if isinstance(t, torch._ops.OpOverload):
        return t.is_view or t._schema.name.split("::")[-1] in _FREE_OPS
    return False


# ------------------------------------------------------------------ tracing

@dataclasses.dataclass
class _Event:
    index: int          # graph length when it happened: nodes from here on follow it
    kind: str           # enter | exit | bwd
    module: Optional[nn.Module] = None
    seq_nr: int = -1


class _Recorder:
    """Module calls and backward nodes, as positions in the graph make_fx builds."""

    def __init__(self, model: nn.Module):
        self.events: list[_Event] = []
        self.model = model
        self.failed_in: list[str] = []
        self.path = {}
        for name, m in model.named_modules(remove_duplicate=False):
            self.path.setdefault(id(m), name)
        self.stack: list[nn.Module] = []

    def _len(self) -> int:
        from torch.fx.experimental.proxy_tensor import get_proxy_mode
        mode = get_proxy_mode()
        return len(mode.tracer.graph.nodes) if mode is not None else -1

    def pre(self, mod, args):
        if id(mod) in self.path:
            self.stack.append(mod)
            self.events.append(_Event(self._len(), "enter", mod))

    def post(self, mod, args, out):
        if id(mod) in self.path and self.stack and self.stack[-1] is mod:
            self.stack.pop()
            self.events.append(_Event(self._len(), "exit", mod))

    def where(self) -> str:
        """The innermost module running now, for error messages."""
        for m in reversed(self.stack):
            p = self.path.get(id(m))
            if p is not None:
                return "%s (%s)" % (p or "<model>", type(m).__name__)
        return "<model>"

    def hook_backward(self, loss: torch.Tensor) -> None:
        seen = set()
        stack = [loss.grad_fn]
        while stack:
            fn = stack.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            fn.register_prehook(self._bwd_hook(fn))
            stack.extend(nxt for nxt, _ in fn.next_functions)

    def _bwd_hook(self, fn):
        def hook(grad_outputs):
            self.events.append(_Event(self._len(), "bwd", seq_nr=fn._sequence_nr()))
        return hook


@dataclasses.dataclass(eq=False)
class Group:
    """One op of the exported graph: aten nodes of the joint graph."""
    name: str
    kind: str                         # input | forward | loss | backward | update
    nodes: list = dataclasses.field(default_factory=list)
    module: str = ""                  # module path ("" = the model)
    call: int = 0                     # index of the module's call in the step
    run: int = -1                     # free run index within that call (-1: a leaf call)
    owner: Optional["Group"] = None   # backward: its forward op
    type: str = ""                    # a leaf call: the module's class
    colocate: Optional[str] = None
    first: int = 0                    # program position of the first node


@dataclasses.dataclass
class Capture:
    gm: fx.GraphModule
    mode: str                         # fake | real
    param_names: list                 # placeholder order: params, buffers, inputs
    buffer_names: list
    input_names: list
    param_meta: dict                  # name -> (shape, dtype, requires_grad)
    groups: list                      # Group, in program order (no update ops)
    group_of: dict                    # fx node -> Group
    loss_node: fx.Node
    grad_node: dict                   # param name -> fx node of its gradient
    out_nodes: list                   # fx nodes of the model output's tensor leaves
    out_spec: Any                     # pytree spec of the output
    out_consts: dict                  # leaf index -> non-tensor leaf value
    holder: dict                      # param/buffer name -> Group that holds it
    placeholders: dict                # param/buffer/input name -> placeholder node
    update_colocate: dict = dataclasses.field(default_factory=dict)  # param -> colocation


def _fake_inputs(fake_mode, model, example, device):
    """Fake parameters, buffers and inputs (meta ones become `device`)."""
    def fake(t: torch.Tensor, grad: bool) -> torch.Tensor:
        dev = device if t.device.type == "meta" else t.device
        if t.device.type == "meta":
            with fake_mode:
                f = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=dev)
        else:
            f = fake_mode.from_tensor(t)
        return f.requires_grad_(grad) if grad and f.is_floating_point() else f
    params = {n: fake(p, p.requires_grad) for n, p in model.named_parameters()}
    buffers = {n: fake(b, False) for n, b in model.named_buffers()}
    inputs = tuple(fake(x, False) if isinstance(x, torch.Tensor) else x for x in example)
    return params, buffers, inputs


def _real_inputs(model, example):
    params = {n: p.detach().requires_grad_(p.requires_grad) for n, p in model.named_parameters()}
    buffers = {n: b.detach().clone() for n, b in model.named_buffers()}
    return params, buffers, tuple(example)


@contextlib.contextmanager
def _quiet_fake_tensor_log(mode: str) -> Iterator[None]:
    """On fake tensors, torch logs every exception a meta kernel raises,
    with its traceback, at ERROR (`failed while attempting to run meta
    for ...`), before make_fx raises it: the user then reads a traceback of
    torch's internals above capture's own one-line reason, or above a real
    trace that went on to succeed.  The exception itself still reaches
    capture, which says what failed and where."""
    log = logging.getLogger("torch._subclasses.fake_tensor")
    level = log.level
    if mode == "fake":
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def _trace(model, example, loss_fn, mode):
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.func import functional_call
    import torch.fx.traceback as fxtb
    import torch.utils._pytree as pytree

    if mode == "fake":
        from torch._subclasses.fake_tensor import FakeTensorMode
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        params, buffers, inputs = _fake_inputs(fake_mode, model, example, torch.device("cpu"))
    else:
        if any(t.device.type == "meta" for t in list(model.parameters()) + list(model.buffers())):
            raise CaptureError("its parameters are on the meta device, so it cannot run for real")
        params, buffers, inputs = _real_inputs(model, example)
    pnames, bnames = list(params), list(buffers)
    trainable = [n for n in pnames if params[n].requires_grad]
    rec = _Recorder(model)
    info: dict = {}

    def step(*flat):
        P, B = len(pnames), len(bnames)
        ps = dict(zip(pnames, flat[:P]))
        bs = dict(zip(bnames, flat[P:P + B]))
        out = functional_call(model, {**ps, **bs}, tuple(flat[P + B:]), strict=False)
        leaves, spec = pytree.tree_flatten(out)
        info["spec"] = spec
        info["consts"] = {i: v for i, v in enumerate(leaves) if not isinstance(v, torch.Tensor)}
        tens = [v for v in leaves if isinstance(v, torch.Tensor)]
        loss = loss_fn(out)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise CaptureError("loss_fn(output) must return a scalar tensor")
        if loss.grad_fn is None:
            raise CaptureError("the loss does not depend on any parameter that requires grad; "
                               "nothing to train")
        rec.events.append(_Event(rec._len(), "loss"))
        rec.hook_backward(loss)
        grads = torch.autograd.grad(loss, [ps[n] for n in trainable], allow_unused=True)
        info["grad_names"] = [n for n, g in zip(trainable, grads) if g is not None]
        return (loss, *[g for g in grads if g is not None], *tens)

    h1 = nn.modules.module.register_module_forward_pre_hook(rec.pre)
    h2 = nn.modules.module.register_module_forward_hook(rec.post)
    flat = (*params.values(), *buffers.values(), *inputs)
    # functional_call puts back what it swapped, but not always where a module is
    # registered under two paths (T5's shared embedding): put back every tensor
    saved = [(d, k, v) for m in model.modules() for d in (m._parameters, m._buffers)
             for k, v in d.items()]
    try:
        # oneDNN's RNN kernels return a workspace that fake tensors leave
        # undefined (and they exist on the CPU only): capture the portable ops
        with fxtb.preserve_node_meta(), torch.backends.mkldnn.flags(enabled=False), \
                _quiet_fake_tensor_log(mode):
            gm = make_fx(step, tracing_mode="real" if mode == "real" else "fake",
                         _allow_non_fake_inputs=True,
                         _error_on_data_dependent_ops=mode != "real")(*flat)
    except CaptureError:
        raise
    except Exception as e:
        where = rec.where()
        raise CaptureError("in module %s: %s: %s" % (where, type(e).__name__,
                                                     str(e).strip().split("\n")[0])) from e
    finally:
        h1.remove()
        h2.remove()
        for d, k, v in saved:
            d[k] = v
        refresh_flat_weights(model)
    return gm, rec, info, pnames, bnames, params


def capture(model: nn.Module, example: tuple, loss_fn: Callable, mode: str = "auto",
            say: Callable[[str], None] = lambda m: None) -> Capture:
    """The joint graph of one training step of model(*example), grouped
    into ops.  mode: fake, real, or auto (fake, then real on failure)."""
    if mode not in ("auto", "fake", "real"):
        raise ValueError("opplace.torch: capture mode must be auto, fake or real, not %r" % mode)
    tries = ["fake", "real"] if mode == "auto" else [mode]
    errors = []
    for m in tries:
        try:
            gm, rec, info, pnames, bnames, params = _trace(model, example, loss_fn, m)
            break
        except CaptureError as e:
            errors.append((m, e))
            if m == "fake" and len(tries) > 1:
                say("capture on fake tensors failed (%s); tracing again on real tensors "
                    "on the CPU" % e)
    else:
        detail = "; ".join("on %s tensors: %s" % (m, e) for m, e in errors)
        raise CaptureError(
            "opplace.torch: cannot capture a training step of %s: %s.  What to do: check that "
            "model(*example_inputs) runs eagerly and its loss is a scalar; if the module named "
            "above needs real values (data-dependent control flow), give the model real "
            "parameters rather than meta ones" % (type(model).__name__, detail)) from None
    mode_used = m
    return _group(model, gm, rec, info, pnames, bnames, params, len(example), mode_used)


# ----------------------------------------------------------------- grouping

class _Names:
    """Unique op names: base, then base#1, base#2, ... skipping any name
    already made (from another base: 'x#1' may be a base of its own)."""

    def __init__(self):
        self.next: dict[str, int] = {}
        self.made: set[str] = set()

    def make(self, base: str) -> str:
        k = self.next.get(base, 0)
        name = base if k == 0 else "%s#%d" % (base, k)
        while name in self.made:
            k += 1
            name = "%s#%d" % (base, k)
        self.next[base] = k + 1
        self.made.add(name)
        return name


def _first_compute_name(nodes: list) -> str:
    for n in nodes:
        if not is_costless(n):
            return n.target._schema.name.split("::")[-1] if isinstance(
                n.target, torch._ops.OpOverload) else n.name
    return nodes[0].target._schema.name.split("::")[-1] if isinstance(
        nodes[0].target, torch._ops.OpOverload) else nodes[0].name


def _group(model, gm, rec, info, pnames, bnames, params, n_inputs, mode) -> Capture:
    nodes = list(gm.graph.nodes)
    phs = [n for n in nodes if n.op == "placeholder"]
    P, B = len(pnames), len(bnames)
    in_names = input_names(model, n_inputs)
    ph_of = {}
    for i, ph in enumerate(phs):
        ph_of[pnames[i] if i < P else bnames[i - P] if i < P + B else in_names[i - P - B]] = ph
    path = rec.path
    names = _Names()
    groups: list[Group] = []
    group_of: dict = {}
    for i, name in enumerate(in_names):
        g = Group(names.make(name), "input", [phs[P + B + i]], first=P + B + i)
        groups.append(g)
        group_of[phs[P + B + i]] = g

    events = sorted(rec.events, key=lambda e: e.index)  # stable: list order within an index
    stack: list[nn.Module] = []
    calls: dict[int, int] = {}           # id(module) -> calls so far
    call_of: list[int] = []              # call index of each stack entry
    runs: list[int] = []                 # free-run counter of each stack entry
    phase = "forward"
    cur: Optional[Group] = None
    cur_key = None
    seq_group: dict[int, Group] = {}
    bwd_owner: Optional[Group] = None
    loss_group: Optional[Group] = None
    ev = 0
    leaf_depth = -1                      # stack depth of the outermost leaf, -1 if none

    def close():
        nonlocal cur, cur_key
        cur, cur_key = None, None

    def add_forward(n, g):
        """n joins g; g owns the backward of n's autograd sequence number."""
        g.nodes.append(n)
        group_of[n] = g
        s = n.meta.get("seq_nr")
        if isinstance(s, int) and s >= 0 and s not in seq_group:
            seq_group[s] = g

    for idx, n in enumerate(nodes):
        while ev < len(events) and events[ev].index <= idx:
            e = events[ev]
            ev += 1
            if e.kind == "enter" and phase == "forward":
                k = calls.get(id(e.module), 0)
                calls[id(e.module)] = k + 1
                if runs:
                    runs[-1] += 1
                stack.append(e.module)
                call_of.append(k)
                runs.append(0)
                if leaf_depth < 0 and is_leaf(e.module):
                    leaf_depth = len(stack) - 1
                close()
            elif e.kind == "exit" and phase == "forward" and stack:
                stack.pop()
                call_of.pop()
                runs.pop()
                if runs:
                    runs[-1] += 1
                if leaf_depth >= len(stack):
                    leaf_depth = -1
                if not stack:      # the model returned: the loss function runs next
                    phase = "loss"
                close()
            elif e.kind == "loss" and phase == "forward":
                phase = "loss"
                close()
            elif e.kind == "bwd":
                phase = "backward"
                bwd_owner = seq_group.get(e.seq_nr, loss_group)
        if n.op in ("placeholder", "output"):
            continue
        if phase == "forward":
            if not stack:       # outside the model (a functional_call detail): the model
                key = ("run", "", 0, -1)
            elif leaf_depth >= 0:
                m = stack[leaf_depth]
                key = ("leaf", path[id(m)], call_of[leaf_depth], -1)
            else:
                key = ("run", path[id(stack[-1])], call_of[-1], runs[-1])
            if key != cur_key:
                kind, mpath, call, run = key
                if kind == "leaf":
                    base = mpath or type(model).__name__
                else:
                    base = None  # named once its nodes are known
                cur = Group(base or "", "forward", module=mpath, call=call, run=run, first=idx,
                            type=type(stack[leaf_depth]).__name__ if kind == "leaf" else "")
                cur_key = key
                groups.append(cur)
            add_forward(n, cur)
        elif phase == "loss":
            if loss_group is None:
                loss_group = Group("loss", "loss", first=idx)
                groups.append(loss_group)
            add_forward(n, loss_group)
        else:
            owner = bwd_owner or loss_group
            if cur is None or cur.kind != "backward" or cur.owner is not owner:
                cur = Group("", "backward", owner=owner, first=idx)  # named below
                groups.append(cur)
            cur.nodes.append(n)
            group_of[n] = cur
    if loss_group is None:
        raise CaptureError("the loss function ran no operation")

    # free runs of views only join the op that produced their input
    merged_into: dict = {}
    for g in list(groups):
        if g.kind == "forward" and g.run >= 0 and all(is_costless(n) for n in g.nodes):
            srcs = {group_of.get(a) for n in g.nodes for a in n.all_input_nodes
                    if a.op != "placeholder" and group_of.get(a) is not g}
            if len(srcs) == 1 and None not in srcs:
                (dst,) = srcs
                if dst.kind == "forward":
                    dst.nodes.extend(g.nodes)
                    for n in g.nodes:
                        group_of[n] = dst
                    groups.remove(g)
                    merged_into[g] = dst
    # backward runs of one forward op that follow each other are one op
    prev = None
    for g in list(groups):
        if g.kind != "backward":
            prev = None
            continue
        while g.owner in merged_into:
            g.owner = merged_into[g.owner]
        if prev is not None and prev.owner is g.owner:
            prev.nodes.extend(g.nodes)
            for n in g.nodes:
                group_of[n] = prev
            groups.remove(g)
            continue
        prev = g
    # names, in program order
    for g in groups:
        if g.kind == "forward" and g.run >= 0:
            op = _first_compute_name(g.nodes)
            g.name = names.make("%s/%s" % (g.module, op) if g.module else op)
        elif g.kind == "forward":
            g.name = names.make(g.name)
    for g in groups:
        if g.kind == "backward":
            g.name = names.make("b/" + g.owner.name)
    groups = [g for g in groups if g.nodes]
    groups.sort(key=lambda g: g.first)

    out = [n for n in nodes if n.op == "output"][0]
    flat_out = list(out.args[0])
    grad_names = info["grad_names"]
    loss_node = flat_out[0]
    grad_node = dict(zip(grad_names, flat_out[1:1 + len(grad_names)]))
    out_nodes = flat_out[1 + len(grad_names):]

    # holders: the first op that reads a parameter or buffer
    holder = {}
    name_of_ph = {v: k for k, v in ph_of.items()}
    for g in groups:
        for n in g.nodes:
            for a in n.all_input_nodes:
                nm = name_of_ph.get(a)
                if nm is not None and nm not in in_names:
                    holder.setdefault(nm, g)
    meta = {n: (tuple(p.shape), p.dtype, p.requires_grad) for n, p in params.items()}
    cap = Capture(gm, mode, pnames, bnames, in_names, meta, groups, group_of, loss_node,
                  grad_node, out_nodes, info["spec"], info["consts"], holder, ph_of)
    _colocate(cap)
    return cap


def _colocate(cap: Capture) -> None:
    """Colocation groups (formats.md 1): a module's calls, their backward
    ops and its parameters' updates share one; a buffer stays with every op
    that touches it; an op without parameters is colocated with its backward."""
    parent: dict[str, str] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:  # a parameter's name represents its group where there is one
            keep = min(ra, rb, key=lambda x: (not x.startswith("param:"), x))
            parent[rb if keep == ra else ra] = keep

    def label(name):
        mod = name.rsplit(".", 1)[0] if "." in name else ""
        return "param:" + (mod or "<model>")

    ph_name = {v: k for k, v in cap.placeholders.items()}
    buffers = set(cap.buffer_names)
    for g in cap.groups:
        find("op:" + g.name)
        if g.kind == "backward":
            union("op:" + g.name, "op:" + g.owner.name)
        for n in g.nodes:
            for a in n.all_input_nodes:
                nm = ph_name.get(a)
                if nm is None or nm in cap.input_names:
                    continue
                own = g.kind == "forward" and g.run < 0 and label(nm) == "param:" + (
                    g.module or "<model>")       # every call of a module, with its weights
                if nm in buffers or cap.holder.get(nm) is g or own:
                    union("op:" + g.name, label(nm))
    roots = {}
    for g in cap.groups:
        if g.kind == "input":
            continue
        r = find("op:" + g.name)
        roots.setdefault(r, r)
        g.colocate = r
    cap.update_colocate = {p: find(label(p)) for p in cap.grad_node}


# ------------------------------------------------------------- the graph

def _node_bytes(n: fx.Node) -> int:
    return nbytes_of(n.meta.get("val"))


def node_flops(n: fx.Node) -> float:
    """FLOPs of one aten node: torch's own formulas (torch.utils.flop_counter)
    where it has one, else one per output element."""
    if is_costless(n):
        return 0.0
    from torch.utils.flop_counter import flop_registry
    f = flop_registry.get(n.target.overloadpacket) if isinstance(
        n.target, torch._ops.OpOverload) else None
    val = n.meta.get("val")
    if f is not None:
        args = fx.node.map_arg(n.args, lambda a: a.meta.get("val"))
        kwargs = fx.node.map_arg(n.kwargs, lambda a: a.meta.get("val"))
        try:
            return float(f(*args, **kwargs, out_val=val))
        except Exception:
            pass
    return float(nbytes_of(val) // 4)


def node_io_bytes(n: fx.Node) -> int:
    if is_costless(n):
        return 0
    return _node_bytes(n) + sum(_node_bytes(a) for a in n.all_input_nodes)


def graph_ops(cap: Capture, op_time: Callable[[Group], dict],
              update_time: Callable[[str], dict], optimizer_state: int) -> tuple[list, list]:
    """(ops, edges) of the opplace-graph file: one op per group, the update
    ops after the op that computes their gradient.  op_time(group) and
    update_time(param) give {device kind: us}."""
    from ._export import scope_of
    ph_name = {v: k for k, v in cap.placeholders.items()}
    pbytes = {n: _numel(s) * torch.empty((), dtype=d).element_size()
              for n, (s, d, _) in cap.param_meta.items()}
    for b in cap.buffer_names:
        pbytes[b] = _node_bytes(cap.placeholders[b])
    edges: dict[tuple[str, str], int] = {}
    sent = set()

    def edge(src, dst, key, b):
        if src == dst or (key, dst) in sent:
            return
        sent.add((key, dst))
        edges[(src, dst)] = edges.get((src, dst), 0) + int(b)

    ops = []
    by_producer: dict[str, list[str]] = {}
    for p, gn in cap.grad_node.items():
        by_producer.setdefault(cap.group_of[gn].name, []).append(p)
    coloc_of = {g.name: g.colocate for g in cap.groups}
    for g in cap.groups:
        op = {"name": g.name, "type": _type_of(g), "time_us": {}, "output_bytes": 0,
              "param_bytes": 0, "temp_bytes": 0}
        op["time_us"] = {k: round(v, 3) for k, v in op_time(g).items()}
        if g.kind == "input":
            op["output_bytes"] = _node_bytes(g.nodes[0])
        else:
            held = [nm for nm, h in cap.holder.items() if h is g]
            op["param_bytes"] = sum(pbytes[nm] for nm in held)
            out_b, temp_b = _group_memory(g, cap)
            op["output_bytes"] = out_b
            op["temp_bytes"] = temp_b
            layer = scope_of(g.module if g.kind == "forward" else
                             g.owner.module if g.kind == "backward" and g.owner else "")
            if layer:
                op["layer"] = layer
            if g.colocate:
                op["colocate"] = g.colocate
            op["source"] = _source(g)
            if held:
                op["source"]["holds"] = sorted(held)
        ops.append(op)
        for n in g.nodes:
            for a in n.all_input_nodes:
                if a.op == "placeholder":
                    nm = ph_name[a]
                    if nm in cap.input_names:
                        edge(cap.group_of[a].name, g.name, a, _node_bytes(a))
                    else:
                        h = cap.holder[nm]
                        if coloc_of.get(h.name) != g.colocate:
                            edge(h.name, g.name, a, pbytes[nm])
                else:
                    edge(cap.group_of[a].name, g.name, a, _node_bytes(a))
        for p in by_producer.get(g.name, []):
            uname = "u/" + p
            shape, dtype, _ = cap.param_meta[p]
            u = {"name": uname, "type": "Update",
                 "time_us": {k: round(v, 3) for k, v in update_time(p).items()}, "output_bytes": 0,
                 "param_bytes": optimizer_state * pbytes[p], "temp_bytes": 0,
                 "colocate": cap.update_colocate[p],
                 "source": {"param": p}}
            layer = scope_of(p.rsplit(".", 1)[0] if "." in p else "")
            if layer:
                u["layer"] = layer
            ops.append(u)
            edge(g.name, uname, cap.grad_node[p], pbytes[p])
    return ops, [{"src": s, "dst": d, "bytes": b} for (s, d), b in edges.items()]


def _numel(shape) -> int:
    out = 1
    for s in shape:
        out *= int(s)
    return out


def _type_of(g: Group) -> str:
    if g.kind == "input":
        return "Input"
    if g.kind == "loss":
        return "Loss"
    if g.kind == "backward":
        return "Backward"
    return g.type or _first_compute_name(g.nodes)


def _source(g: Group) -> dict:
    if g.kind == "forward":
        s = {"module": g.module, "call": g.call}
        if g.run >= 0:
            s["run"] = g.run
        return s
    if g.kind == "backward":
        return {"backward_of": g.owner.name}
    return {"kind": g.kind}


def _group_memory(g: Group, cap: Capture) -> tuple[int, int]:
    """(output_bytes, temp_bytes): what the op hands to other ops (or
    returns), and the peak of what it allocates and frees within itself."""
    inside = set(g.nodes)
    out_b = 0
    alive = 0
    peak = 0
    last_use = {}
    for i, n in enumerate(g.nodes):
        for a in n.all_input_nodes:
            if a in inside:
                last_use[a] = i
    for i, n in enumerate(g.nodes):
        b = 0 if is_costless(n) else _node_bytes(n)
        exported = any(u not in inside for u in n.users)
        if exported:
            out_b += b
        else:
            alive += b
            peak = max(peak, alive)
        for a in n.all_input_nodes:
            if a in inside and last_use.get(a) == i and not any(u not in inside for u in a.users):
                alive -= 0 if is_costless(a) else _node_bytes(a)
    return out_b, max(0, peak)


# ----------------------------------------------------------- running it

def _slots(args: tuple) -> tuple:
    """(template, slots): the node arguments' positions, top level or one
    list deep (the shapes aten calls take), to fill from the environment."""
    tmpl, slots = list(args), []
    for i, a in enumerate(args):
        if isinstance(a, fx.Node):
            slots.append((i, -1, a))
        elif isinstance(a, (list, tuple)):
            for j, b in enumerate(a):
                if isinstance(b, fx.Node):
                    slots.append((i, j, b))
                elif isinstance(b, (list, tuple, dict)):
                    return None
        elif isinstance(a, dict):
            return None
    return tmpl, slots


class Replay:
    """Runs the joint graph's nodes on real tensors, group by group (each
    node's argument fetching planned once: the replay's own cost per op is
    part of what the ranks and the measured op times pay)."""

    def __init__(self, cap: Capture):
        self.cap = cap
        self.nodes_of = {g.name: g.nodes for g in cap.groups}
        self.plan = {}
        for n in cap.gm.graph.nodes:
            if n.op == "call_function" and all(not isinstance(v, fx.Node)
                                               for v in n.kwargs.values()):
                sl = _slots(n.args)
                if sl is not None:
                    self.plan[n] = (n.target, sl[0], sl[1], dict(n.kwargs))

    def run_node(self, n: fx.Node, env: dict) -> Any:
        p = self.plan.get(n)
        if p is None:
            args = fx.node.map_arg(n.args, lambda a: env[a])
            kwargs = fx.node.map_arg(n.kwargs, lambda a: env[a])
            return n.target(*args, **kwargs)
        target, tmpl, slots, kwargs = p
        args = list(tmpl)
        copied = set()
        for i, j, node in slots:
            if j < 0:
                args[i] = env[node]
            else:
                if i not in copied:
                    args[i] = list(args[i])
                    copied.add(i)
                args[i][j] = env[node]
        return target(*args, **kwargs)

    def run_group(self, name: str, env: dict) -> None:
        run = self.run_node
        for n in self.nodes_of[name]:
            env[n] = run(n, env)


def bind(cap: Capture, params: dict, buffers: dict, inputs: tuple) -> dict:
    """The environment of the joint graph's placeholders."""
    env = {}
    for n in cap.param_names:
        env[cap.placeholders[n]] = params[n]
    for n in cap.buffer_names:
        env[cap.placeholders[n]] = buffers[n]
    for n, x in zip(cap.input_names, inputs):
        env[cap.placeholders[n]] = x
    return env
