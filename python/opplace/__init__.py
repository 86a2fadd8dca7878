"""opplace's Python side.  `opplace.torch` exports a PyTorch model's training
step as an opplace-graph file and runs a placement of it (docs/pytorch.md)."""
