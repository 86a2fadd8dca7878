"""apply() for graphs of the aten capture: the model's own forward runs
eagerly, as written, and every torch call is sent to the device the
placement chose for the op it belongs to (the op's `source` in the graph
file: a leaf module's call, or a free run of a module's own code).
Control flow may differ from the captured step (other sequence lengths):
a call whose op is unknown then runs where its first tensor is.  Autograd
runs each backward op where its forward op ran."""
from __future__ import annotations

import weakref
from typing import Any, Optional

import torch
import torch.nn as nn
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode

from ._trace import is_leaf, refresh_flat_weights


class _Mover:
    """One copy per (tensor, device) within a forward (formats.md 5.3: one
    transfer per producer and destination), dropped with the tensor."""

    def __init__(self):
        self.copies: dict[tuple[int, torch.device], tuple[Any, torch.Tensor]] = {}

    def to(self, x: torch.Tensor, dev: torch.device) -> torch.Tensor:
        if x.device == dev:
            return x
        key = (id(x), dev)
        hit = self.copies.get(key)
        if hit is not None and hit[0]() is x:
            return hit[1]
        y = x.to(dev)
        try:
            ref = weakref.ref(x, lambda _r, k=key, c=self.copies: c.pop(k, None))
        except TypeError:
            return y
        self.copies[key] = (ref, y)
        return y

    def clear(self) -> None:
        self.copies.clear()


def _is_inplace(func) -> bool:
    name = getattr(func, "__name__", "")
    return (name.endswith("_") and not name.endswith("__")) or name.startswith("__i")


class _Route(TorchFunctionMode):
    def __init__(self, router: "Router"):
        super().__init__()
        self.router = router

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        dev = self.router.device_now()
        if dev is None or (kwargs.get("out") is not None) or not args:
            return func(*args, **kwargs)
        mover = self.router.mover
        if _is_inplace(func) and isinstance(args[0], torch.Tensor):
            dev = args[0].device           # an in-place op runs where its tensor lives

        def move(x):
            if isinstance(x, torch.Tensor) and x.device != dev and x.device.type != "meta":
                return mover.to(x, dev)
            return x
        if _is_inplace(func):
            args = (args[0],) + tuple(pytree.tree_map(move, list(args[1:])))
        else:
            args = tuple(pytree.tree_map(move, list(args)))
        kwargs = {k: pytree.tree_map(move, v) if k != "device" else v for k, v in kwargs.items()}
        return func(*args, **kwargs)


class Router:
    """Tracks module calls as the capture numbered them and answers which
    device the current torch call belongs to."""

    def __init__(self, model: nn.Module, leaf_dev: dict, run_dev: dict):
        self.model = model
        self.leaf_dev = leaf_dev
        self.run_dev = run_dev
        self.path = {}
        for name, m in model.named_modules(remove_duplicate=False):
            self.path.setdefault(id(m), name)
        self.mover = _Mover()
        self.reset()
        self.handles = []
        for m in model.modules():
            self.handles.append(m.register_forward_pre_hook(self._pre))
            self.handles.append(m.register_forward_hook(self._post))

    def reset(self) -> None:
        self.stack: list[list] = []      # [module, call, runs]
        self.calls: dict[int, int] = {}
        self.leaf_depth = -1

    def _pre(self, mod, args):
        if not self.active:
            return
        k = self.calls.get(id(mod), 0)
        self.calls[id(mod)] = k + 1
        if self.stack:
            self.stack[-1][2] += 1
        self.stack.append([mod, k, 0])
        if self.leaf_depth < 0 and is_leaf(mod):
            self.leaf_depth = len(self.stack) - 1

    def _post(self, mod, args, out):
        if not self.active or not self.stack or self.stack[-1][0] is not mod:
            return
        self.stack.pop()
        if self.stack:
            self.stack[-1][2] += 1
        if self.leaf_depth >= len(self.stack):
            self.leaf_depth = -1

    active = False

    def device_now(self) -> Optional[torch.device]:
        if not self.stack:
            return None
        if self.leaf_depth >= 0:
            m, k, _ = self.stack[self.leaf_depth]
            return self.leaf_dev.get((self.path[id(m)], k))
        m, k, r = self.stack[-1]
        return self.run_dev.get((self.path[id(m)], k, r))

    def __call__(self, *inputs, **kwargs):
        self.reset()
        self.active = True
        try:
            with _Route(self):
                return self.model(*inputs, **kwargs)
        finally:
            self.active = False
            self.mover.clear()
            self.reset()


class RoutedModule(nn.Module):
    """The model, each torch call on its placed device.  Its parameters,
    buffers and submodules are the model's (same names)."""

    def __init__(self, model: nn.Module, router: Router, loss_device: Optional[torch.device]):
        super().__init__()
        from ._apply import adopt
        adopt(self, model)
        object.__setattr__(self, "_opplace_router", router)
        object.__setattr__(self, "_opplace_loss_device", loss_device)

    def forward(self, *inputs, **kwargs):
        out = self._opplace_router(*inputs, **kwargs)
        ld = self._opplace_loss_device
        if ld is None:
            return out
        return pytree.tree_map(lambda x: x.to(ld) if isinstance(x, torch.Tensor) else x, out)

    def train(self, mode: bool = True):
        self._opplace_model.train(mode)
        return super().train(mode)


def apply_routed(model: nn.Module, graph: dict, device_of: dict, tdev: dict) -> RoutedModule:
    """The placed module of an aten-captured graph (see apply)."""
    leaf_dev, run_dev = {}, {}
    homes: dict[str, str] = {}
    for op in graph["ops"]:
        src = op.get("source") or {}
        d = device_of.get(op["name"])
        if d is None:
            continue
        if "module" in src:
            key = (src["module"], src.get("call", 0))
            if "run" in src:
                run_dev[key + (src["run"],)] = tdev[d]
            else:
                leaf_dev[key] = tdev[d]
            for h in src.get("holds", []):
                homes.setdefault(h, d)
        elif "param" in src:
            homes[src["param"]] = d       # a parameter lives with its update
    apart = [op["name"] for op in graph["ops"]
             if "backward_of" in (op.get("source") or {})
             and device_of.get(op["source"]["backward_of"]) != device_of.get(op["name"])]
    if apart:
        import warnings
        warnings.warn("opplace.torch: %d backward ops are placed away from their forward op "
                      "(e.g. '%s'); autograd runs them where the forward op ran, so the "
                      "measured step will differ from the simulated one (opplace.torch run "
                      "executes such a placement as placed)" % (len(apart), apart[0]))
    named_p = dict(model.named_parameters())
    named_b = dict(model.named_buffers())
    with torch.no_grad():
        for name, d in homes.items():
            if name in named_p:
                named_p[name].data = named_p[name].data.to(tdev[d])
            elif name in named_b:
                owner, _, k = name.rpartition(".")
                mod = model.get_submodule(owner) if owner else model
                mod._buffers[k] = mod._buffers[k].to(tdev[d])
    refresh_flat_weights(model)
    router = Router(model, leaf_dev, run_dev)
    loss_dev = tdev[device_of["loss"]] if "loss" in device_of else None
    placed = RoutedModule(model, router, loss_dev)
    object.__setattr__(placed, "opplace_devices",
                       {n: homes[n] for n in named_p if n in homes})
    return placed
