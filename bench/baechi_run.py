#!/usr/bin/python3
"""Run Baechi's own placers (beomyeol/baechi, placer/m_*.py) on an
opplace-graph and write an opplace-placement, so `opplace simulate` judges
Baechi and opplace the same way.  Baechi's code is NOT part of opplace: point
BAECHI_DIR at a checkout of it (needs python3-networkx, python3-cvxopt).

usage: BAECHI_DIR=/path/to/baechi bench/baechi_run.py GRAPH CLUSTER ALGO -o OUT
       ALGO: m_topo | m_etf | m_sct   (Baechi's placer_lib defaults:
       colocation=True, m_topo uniform, m-SCT threshold 0.5)

Conversion (what Baechi's placer_lib.create_placement_graph does from a TF
graph, done here from our JSON):
  op weight       = time_us on the first device's kind / its speed, raised to
                    1 us when <= 0 (placer_lib's rule)
  output_memory   = [output_bytes + param_bytes]; persistent_memory =
                    param_bytes (a TF variable's output is its persistent
                    tensor); temporary_memory = temp_bytes
  colocation      = the op's `colocate` group, else its own name
  edge weight     = latency_us + us_per_byte * bytes of the cluster's
                    default_link (the comm_cost_fn); one tensor per source op
  device memory   = memory_bytes
m-SCT's LP: Baechi calls cvxopt with MOSEK; here cvxopt's GLPK (exact
simplex), falling back to cvxopt's own interior-point solver.
"""
import argparse
import json
import os
import sys
import time
import types


def stub_modules():
    # placer_utils imports tensorflow's attr_value_pb2 and matplotlib only
    # for helpers the placers do not call.
    for name in ["tensorflow", "tensorflow.core", "tensorflow.core.framework",
                 "tensorflow.core.framework.attr_value_pb2", "matplotlib",
                 "matplotlib.pyplot"]:
        sys.modules.setdefault(name, types.ModuleType(name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("graph")
    ap.add_argument("cluster")
    ap.add_argument("algo", choices=["m_topo", "m_etf", "m_sct"])
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    bdir = os.environ.get("BAECHI_DIR")
    if not bdir or not os.path.isdir(os.path.join(bdir, "placer")):
        sys.exit("baechi_run.py: set BAECHI_DIR to a checkout of beomyeol/baechi")
    sys.path.insert(0, bdir)
    stub_modules()
    import logging
    import networkx as nx
    import cvxopt
    import cvxopt.solvers
    from placer import placer_utils
    from placer.m_topo import m_topo
    from placer.m_etf import m_etf
    from placer.m_sct import m_sct
    logging.disable(logging.INFO)

    g = json.load(open(a.graph))
    c = json.load(open(a.cluster))
    devs = c["devices"]
    link = c.get("default_link", {"latency_us": 0, "us_per_byte": 0})
    if c.get("links"):
        sys.stderr.write("baechi_run.py: per-pair links ignored; Baechi has one comm_cost_fn\n")
    kind = devs[0].get("kind", "gpu")
    speed = devs[0].get("speed", 1.0)

    def comm(b):
        return link["latency_us"] + link["us_per_byte"] * b

    op_graph = nx.DiGraph()
    index = {}
    for i, o in enumerate(g["ops"]):
        t = o["time_us"]
        if isinstance(t, dict):
            t = t.get(kind, min(t.values()))
        t = t / speed
        if t <= 0:
            t = 1
        out = o.get("output_bytes", 0) or 0
        par = o.get("param_bytes", 0) or 0
        op_graph.add_node(i, id=i, name=o["name"], weight=t,
                          temporary_memory=o.get("temp_bytes", 0) or 0,
                          persistent_memory=par, output_memory=[out + par],
                          colocation_group=o.get("colocate") or o["name"])
        index[o["name"]] = i
    eid = 0
    for e in g["edges"]:
        s, d = index[e["src"]], index[e["dst"]]
        b = e.get("bytes", g["ops"][s].get("output_bytes", 0) or 0)
        w = comm(b)
        if op_graph.has_edge(s, d):
            ed = op_graph[s][d]
            if w > ed["weight"]:
                ed["weight"] = w
                ed["tensor"][0]["weight"] = w
                ed["tensor"][0]["num_bytes"] = b
            continue
        op_graph.add_edge(s, d, id=eid, weight=w,
                          tensor=[{"name": "%s:0" % e["src"], "weight": w, "num_bytes": b}])
        eid += 1
    placer_utils.assign_topo_order(op_graph)

    device_graph = nx.DiGraph()
    for i, d in enumerate(devs):
        device_graph.add_node(i, id=i, name=d["name"], size=0,
                              memory_limit=d["memory_bytes"])

    if a.algo == "m_sct":
        real_lp = cvxopt.solvers.lp

        def lp(c_, G, h, solver=None, **kw):
            cvxopt.solvers.options["show_progress"] = False
            cvxopt.solvers.options["glpk"] = {"msg_lev": "GLP_MSG_OFF"}
            try:
                r = real_lp(c_, G, h, solver="glpk", **kw)
                if r["x"] is not None:
                    return r
            except Exception:  # noqa: BLE001 - fall back to the default solver
                pass
            return real_lp(c_, G, h, **kw)
        cvxopt.solvers.lp = lp

    t0 = time.time()
    if a.algo == "m_topo":
        m_topo(op_graph, device_graph, colocation=True)
    elif a.algo == "m_etf":
        m_etf(op_graph, device_graph, colocation=True)
    else:
        m_sct(op_graph, device_graph, threshold=0.5, colocation=True)
    secs = time.time() - t0
    out = {"format": "opplace-placement", "version": 1, "graph": g.get("name", ""),
           "algorithm": "baechi:" + a.algo,
           "device_of": {op_graph.nodes[i]["name"]: devs[op_graph.nodes[i]["p"]]["name"]
                         for i in op_graph.nodes},
           "metrics": {"placement_seconds": secs}}
    json.dump(out, open(a.output, "w"))


if __name__ == "__main__":
    main()
