#!/usr/bin/python3
"""export_torch.py - kept for old command lines; the exporter is now the
opplace.torch package (python/opplace/torch, docs/pytorch.md):

    PYTHONPATH=python /usr/bin/python3 -m opplace.torch export \\
        torchvision.models:resnet50 --input 32x3x224x224 -o g.json

usage: export_torch.py MODEL [--batch N] [--measure | --estimate PROFILE]
                       [--repeat R] [--threads T] [--seq-len S]
                       [--optimizer adam|momentum|sgd] -o graph.json

MODEL is a torchvision model name or "transformer"; this translates the
arguments into `python3 -m opplace.torch export` and runs it."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="export_torch.py",
                                 description="Old front end of python3 -m opplace.torch export.")
    ap.add_argument("model", help="torchvision model name, or 'transformer'")
    ap.add_argument("--batch", type=int, default=32)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--measure", action="store_true")
    mode.add_argument("--estimate", metavar="PROFILE")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seq-len", type=int, default=32)
    ap.add_argument("--optimizer", choices=("adam", "momentum", "sgd"), default="adam")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args(argv)
    if a.model == "transformer":
        new = ["opplace.torch.examples:transformer",
               "--input", "%dx%dx512" % (a.seq_len, a.batch),
               "--input", "%dx%dx512" % (a.seq_len, a.batch), "--loss", "mse"]
    else:
        size = 299 if a.model == "inception_v3" else 224
        new = ["torchvision.models:" + a.model, "--input", "%dx3x%dx%d" % (a.batch, size, size),
               "--loss", "cross_entropy"]
        if a.model in ("inception_v3", "googlenet"):
            new += ["--kwargs", '{"aux_logits": false, "init_weights": false}']
    new += ["--times", "measure" if a.estimate is None else "estimate:" + a.estimate,
            "--repeat", str(a.repeat), "--optimizer", a.optimizer,
            "--threads", str(a.threads), "-o", a.output]
    from opplace.torch.__main__ import main as opplace_torch_main
    opplace_torch_main(["export"] + new)


if __name__ == "__main__":
    main()
