"""opplace.torch - the PyTorch round trip (docs/pytorch.md).

    export(model, example_inputs, path, loss_fn=None, times="estimate:v100")
    apply(model, graph_path, placement_path, device_map)
    measure(model, example_inputs, graph_path, placement_path, device_map, ...)
"""
from ._export import export, default_loss  # noqa: F401
from ._apply import apply  # noqa: F401
from ._measure import measure  # noqa: F401

__all__ = ["export", "apply", "measure", "default_loss"]
