"""opplace.torch.apply: run a model under an opplace placement."""
import collections
import json
import warnings

import torch
import torch.fx as fx
import torch.nn as nn

from ._trace import meta_tensors, refresh_flat_weights, trace


def _load(path, fmt, error=ValueError):
    """The JSON document of an opplace file of format `fmt`; `error` (with
    the file, the line or the key) otherwise."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise error("opplace.torch: cannot read %s: %s" % (path, e.strerror)) from None
    except json.JSONDecodeError as e:
        raise error("opplace.torch: %s: line %d: not JSON (%s)"
                    % (path, e.lineno, e.msg)) from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise error("opplace.torch: %s: key 'format' is %r, expected %r"
                    % (path, doc.get("format") if isinstance(doc, dict) else None, fmt))
    return doc


def adopt(module, model):
    """Give `module` the model's submodules, parameters and buffers under
    their names (so state_dict() and parameters() are the model's)."""
    for n, c in model.named_children():
        module.add_module(n, c)
    for n, p in model._parameters.items():
        module.register_parameter(n, p)
    for n, b in model._buffers.items():
        module.register_buffer(n, b)
    object.__setattr__(module, "_opplace_model", model)


def _example_from(graph, graph_path):
    spec = (graph.get("torch") or {}).get("inputs")
    if spec is None:
        raise ValueError("opplace.torch: %s has no 'torch.inputs' key: it was not written by "
                         "opplace.torch.export; export the model again" % graph_path)
    return tuple(torch.empty(s["shape"], dtype=getattr(torch, s["dtype"]), device="meta")
                 for s in spec)


def _move(x, dev, cache, key):
    """x (a tensor or nested container) on device dev; one copy per
    (producer, device), as formats.md section 5.3 counts transfers."""
    if dev is None:
        return x
    if isinstance(x, torch.Tensor):
        if x.device == dev:
            return x
        k = (key, id(x), dev)
        if k not in cache:
            cache[k] = x.to(dev)
        return cache[k]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_move(y, dev, cache, key) for y in x])
    if isinstance(x, (tuple, list)):
        return type(x)(_move(y, dev, cache, key) for y in x)
    if isinstance(x, dict):
        return {k2: _move(v, dev, cache, key) for k2, v in x.items()}
    return x


def _issue_order(nodes, op_name, order):
    """fx nodes in an order that follows each device's `order` list where
    the data dependencies allow it (the forward ops of one device are then
    issued in their placed order); program order when there is no order or
    it contradicts the data flow.  op_name: {fx node: op name} of the
    nodes that are ops of the graph."""
    if not order:
        return list(nodes)
    fwd = set(op_name.values())
    seq = {d: [n for n in names if n in fwd] for d, names in order.items()}
    listed = {n for names in seq.values() for n in names}
    ptr = {d: 0 for d in seq}
    indeg = {n: len(n.all_input_nodes) for n in nodes}
    queue = collections.deque(n for n in nodes if indeg[n] == 0)
    waiting = {}
    out = []

    def emit(n):
        out.append(n)
        for u in n.users:
            indeg[u] -= 1
            if indeg[u] == 0:
                queue.append(u)

    while True:
        while queue:
            n = queue.popleft()
            op = op_name.get(n)
            if op in listed:
                waiting[op] = n  # ready; runs when it heads its device's list
            else:
                emit(n)
        moved = False
        for d, names in seq.items():
            if ptr[d] < len(names) and names[ptr[d]] in waiting:
                emit(waiting.pop(names[ptr[d]]))
                ptr[d] += 1
                moved = True
        if not moved:
            break
    if len(out) != len(nodes):  # the order contradicts the data flow
        return list(nodes)
    return out


class PlacedModule(nn.Module):
    """The model's forward run op by op, each on its placed device.  Its
    parameters, buffers and submodules are the model's (same names)."""

    def __init__(self, model, gm, names, op_device, loss_device, order, param_home):
        super().__init__()
        adopt(self, model)
        object.__setattr__(self, "_opplace_gm", gm)
        object.__setattr__(self, "_opplace_names", names)
        object.__setattr__(self, "_opplace_op_device", op_device)
        object.__setattr__(self, "_opplace_loss_device", loss_device)
        object.__setattr__(self, "_opplace_param_home", param_home)
        nodes = [n for n in gm.graph.nodes]
        op_name = {n: names[n.name] for n in nodes if names[n.name] in op_device}
        object.__setattr__(self, "_opplace_nodes", _issue_order(nodes, op_name, order))

    def _attr(self, target):
        obj = self._opplace_model
        parts = target.split(".")
        if parts and parts[0] == "m":
            parts = parts[1:]
        for p in parts:
            obj = getattr(obj, p)
        return obj

    def forward(self, *inputs):
        placeholders = [n for n in self._opplace_gm.graph.nodes if n.op == "placeholder"]
        if len(inputs) != len(placeholders):
            raise TypeError("opplace placed module: expected %d inputs, got %d"
                            % (len(placeholders), len(inputs)))
        env = {}
        cache = {}
        feed = dict(zip(placeholders, inputs))
        names = self._opplace_names
        op_device = self._opplace_op_device
        result = None
        for n in self._opplace_nodes:
            dev = op_device.get(names[n.name])

            def arg(a, dev=dev):
                return _move(env[a], dev, cache, a.name)
            if n.op == "placeholder":
                x = feed[n]
                env[n] = x.to(dev) if dev is not None and isinstance(x, torch.Tensor) else x
            elif n.op == "get_attr":
                env[n] = self._attr(n.target)
            elif n.op == "call_module":
                args = fx.node.map_arg(n.args, arg)
                kwargs = fx.node.map_arg(n.kwargs, arg)
                mod = self._attr(n.target)
                env[n] = self._call_module(mod, dev, args, kwargs, n.target)
            elif n.op == "call_function":
                env[n] = n.target(*fx.node.map_arg(n.args, arg), **fx.node.map_arg(n.kwargs, arg))
            elif n.op == "call_method":
                args = fx.node.map_arg(n.args, arg)
                env[n] = getattr(args[0], n.target)(*args[1:], **fx.node.map_arg(n.kwargs, arg))
            elif n.op == "output":
                ld = self._opplace_loss_device
                result = fx.node.map_arg(n.args[0], lambda a: _move(env[a], ld, cache, a.name))
        return result

    def _call_module(self, mod, dev, args, kwargs, target):
        if dev is None:
            return mod(*args, **kwargs)
        swapped = []
        for sub in mod.modules():
            for k, p in list(sub._parameters.items()):
                if p is not None and p.device != dev:
                    # a tied parameter used away from its home: a copy (its
                    # gradient flows back through the copy)
                    swapped.append((sub._parameters, k, p))
                    sub._parameters[k] = p.to(dev)
            for k, b in sub._buffers.items():
                if b is not None and b.device != dev:
                    for d, k2, p in swapped:
                        d[k2] = p
                    raise RuntimeError(
                        "opplace placed module: module '%s' holds buffer '%s' on %s but the "
                        "placement runs a call of it on %s; buffers cannot be copied (their "
                        "updates would be lost): keep every call of the module on one device "
                        "(its colocation group)" % (target[2:], k, b.device, dev))
        if swapped:
            refresh_flat_weights(mod)
        try:
            return mod(*args, **kwargs)
        finally:
            for d, k, p in swapped:
                d[k] = p
            if swapped:
                refresh_flat_weights(mod)


def apply(model, graph_path, placement_path, device_map, copy=True):
    """An nn.Module computing model's function with its parameter values,
    each op on device_map[its placement device].

    graph_path: the file opplace.torch.export wrote for this model;
    placement_path: an opplace-placement of that graph (opplace place -o);
    device_map: {placement device name: torch device}, or one device for all
    (e.g. "cpu").  With copy=True (default) the model is deep-copied first;
    copy=False moves the model's own parameters (as model.to() does).

    Parameters live on their update op's device (the parameter's holder);
    the returned module's attribute `opplace_devices` maps each qualified
    parameter name (as in model.named_parameters()) to that device name.
    Autograd runs each backward op where its forward op ran; a placement
    that puts them apart (a placer ignoring colocation) cannot be honored,
    and apply warns."""
    graph = _load(graph_path, "opplace-graph")
    placement = _load(placement_path, "opplace-placement")
    device_of = placement.get("device_of")
    if not isinstance(device_of, dict):
        raise ValueError("opplace.torch: %s: key 'device_of' missing or not an object"
                         % placement_path)
    ops = {o["name"]: o for o in graph.get("ops", [])}
    missing = [n for n in ops if n not in device_of]
    if missing:
        raise ValueError("opplace.torch: %s: 'device_of' has no device for op '%s' of %s "
                         "(%d such ops): is it a placement of this graph?"
                         % (placement_path, missing[0], graph_path, len(missing)))
    used = sorted(set(device_of.values()))
    if isinstance(device_map, (str, torch.device)):
        device_map = {d: device_map for d in used}
    for d in used:
        if d not in device_map:
            raise ValueError("opplace.torch: device_map has no entry for placement device '%s' "
                             "(the placement uses %s)" % (d, ", ".join(used)))
    tdev = {d: torch.device(v) for d, v in device_map.items()}
    if copy:
        import copy as _copy
        model = _copy.deepcopy(model)
    if (graph.get("torch") or {}).get("capture") == "aten":
        from ._route import apply_routed
        placed = apply_routed(model, graph, device_of, tdev)
        object.__setattr__(placed, "opplace_placement", placement)
        placed.train(model.training)
        return placed
    example = _example_from(graph, graph_path)
    with meta_tensors(model):
        gm, names = trace(model, example)
    fwd_names = {names[n.name] for n in gm.graph.nodes}
    # backward ops away from their forward op cannot be honored
    apart = []
    for name, o in ops.items():
        if name.startswith("b/"):
            owner = name[2:].rsplit("/", 1)[0]
            if owner in device_of and device_of[owner] != device_of[name]:
                apart.append(name)
    if apart:
        warnings.warn("opplace.torch: %d backward ops are placed away from their forward op "
                      "(e.g. '%s'); PyTorch runs them where the forward op ran, so the "
                      "measured step will differ from the simulated one" % (len(apart), apart[0]))
    op_device = {n: tdev[device_of[n]] for n in fwd_names if n in device_of}
    # parameter homes: the update op's device, else the holder op's
    homes = {}
    for pname, p in model.named_parameters():
        d = device_of.get("u/" + pname)
        if d is None:
            for n in gm.graph.nodes:
                if n.op == "get_attr" and n.target[2:] == pname or \
                        n.op == "call_module" and pname.startswith(n.target[2:] + "."):
                    d = device_of.get(names[n.name])
                    break
        if d is not None:
            homes[pname] = d
    # move: leaf modules (buffers with them) to their first call's device,
    # then each parameter to its home
    moved = set()
    for n in gm.graph.nodes:
        if n.op == "call_module" and n.target not in moved and names[n.name] in op_device:
            moved.add(n.target)
            mod = model.get_submodule(n.target[2:]) if n.target != "m" else model
            dev = op_device[names[n.name]]
            for b_owner in mod.modules():
                for k, b in b_owner._buffers.items():
                    if b is not None:
                        b_owner._buffers[k] = b.to(dev)
        elif n.op == "get_attr" and names[n.name] in op_device:
            owner_path, _, k = n.target[2:].rpartition(".")
            owner = model.get_submodule(owner_path) if owner_path else model
            if k in owner._buffers and owner._buffers[k] is not None:
                owner._buffers[k] = owner._buffers[k].to(op_device[names[n.name]])
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname in homes:
                p.data = p.data.to(tdev[homes[pname]])
    refresh_flat_weights(model)
    loss_dev = tdev[device_of["loss"]] if "loss" in device_of else None
    placed = PlacedModule(model, gm, names, op_device, loss_dev, placement.get("order"), homes)
    object.__setattr__(placed, "opplace_devices", dict(homes))
    object.__setattr__(placed, "opplace_placement", placement)
    placed.train(model.training)
    return placed
