#!/usr/bin/python3
"""Rewrite an opplace-graph's colocation groups the way a TensorFlow training
graph has them: a weight stays with its update, every other op moves freely.

usage: bench/tf_colocation.py GRAPH -o OUT

The project's exports (docs/pytorch.md) colocate every forward op with its
backward ops, as autograd runs them.  A TensorFlow graph, the kind Baechi was
built for, colocates only a variable with the ops that write it.  Here an op
keeps its `colocate` group when it holds state (param_bytes > 0: the op that
owns a weight, an update's optimizer state) or is a sink (an update, which
nothing reads); a group left with one member is dropped.  Ops, edges, times
and memory are unchanged.  Such a graph is for comparing placers only:
PyTorch runs a backward op where its forward op ran (`opplace.torch apply`
warns that the measured step will then differ from the simulated one).
"""
import argparse
import json


def tf_colocation(g):
    """g (an opplace-graph dict) with only the weight/update groups."""
    has_succ = {e["src"] for e in g["edges"]}
    has_pred = {e["dst"] for e in g["edges"]}
    members = {}
    for o in g["ops"]:
        keep = (o.get("param_bytes") or 0) > 0 or (
            o["name"] in has_pred and o["name"] not in has_succ)
        if not keep:
            o.pop("colocate", None)
        elif o.get("colocate"):
            members.setdefault(o["colocate"], []).append(o)
    for ops in members.values():
        if len(ops) == 1:
            ops[0].pop("colocate")
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    with open(a.graph) as f:
        g = tf_colocation(json.load(f))
    with open(a.output, "w") as f:
        json.dump(g, f)


if __name__ == "__main__":
    main()
