#!/usr/bin/env python3
"""llama7b.py - export of a Llama-2-7B-shaped decoder built on the meta device
(issue 32, "Done when": >= 7B parameters, under 2 minutes and 4 GB of RAM).

transformers' LlamaForCausalLM from the Llama-2-7B config (hidden 4096, 32
layers, 32 heads, intermediate 11008, vocab 32000), random init on the meta
device (nothing downloaded, no memory for the weights), exported with
times="estimate:v100"; then `opplace info` on the graph.  Prints one JSON
line: parameters, build / export wall seconds, peak RSS of this process
(ru_maxrss; the imports alone are reported too), graph ops and edges.

usage: llama7b.py [--opplace PATH] [--batch 1] [--seq 2048] [--layers 32] [-o g.json]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--opplace", default=os.environ.get("OPPLACE") or
                    os.path.join(ROOT, "build", "opplace"))
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("-o", "--output", default=None)
    a = ap.parse_args()
    t_imp = time.perf_counter()
    import torch
    import torch.nn.functional as F
    import transformers
    import opplace.torch as ot
    from corpus_models import HF
    torch.set_num_threads(1)
    imports_s = time.perf_counter() - t_imp
    rss_imports = rss_mib()

    cfg = transformers.LlamaConfig(hidden_size=4096, intermediate_size=11008,
                                   num_hidden_layers=a.layers, num_attention_heads=32,
                                   num_key_value_heads=32, vocab_size=32000,
                                   max_position_embeddings=4096, rms_norm_eps=1e-5,
                                   use_cache=False)
    t0 = time.perf_counter()
    with torch.device("meta"):
        model = HF(transformers.LlamaForCausalLM(cfg), ["input_ids"])
    build_s = time.perf_counter() - t0
    n = sum(p.numel() for p in model.parameters())
    ids = torch.zeros(a.batch, a.seq, dtype=torch.long, device="meta")

    def loss_fn(logits):
        lg = logits.float().reshape(-1, logits.shape[-1])
        return F.cross_entropy(lg, torch.zeros(lg.shape[0], dtype=torch.long,
                                               device=lg.device))

    out = a.output or os.path.join(tempfile.mkdtemp(prefix="llama7b_"), "g.json")
    res = {"model": "LlamaForCausalLM (Llama-2-7B config, meta device)",
           "parameters": n, "batch": a.batch, "seq": a.seq, "torch": torch.__version__,
           "transformers": transformers.__version__, "imports_s": round(imports_s, 1),
           "rss_after_imports_mib": round(rss_imports)}
    t0 = time.perf_counter()
    try:
        ot.export(model, (ids,), out, loss_fn=loss_fn, times="estimate:v100",
                  progress=lambda m: print("llama7b: " + m, file=sys.stderr))
    except Exception as e:  # the failure is the result
        res.update(ok=False, export_s=round(time.perf_counter() - t0, 1),
                   peak_rss_mib=round(rss_mib()),
                   error="%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0]))
        print(json.dumps(res))
        return 1
    res["export_s"] = round(time.perf_counter() - t0, 1)
    res["peak_rss_mib"] = round(rss_mib())
    res["build_s"] = round(build_s, 1)
    with open(out) as f:
        g = json.load(f)
    res["ops"], res["edges"] = len(g["ops"]), len(g["edges"])
    res["capture"] = (g.get("torch") or {}).get("capture")
    r = subprocess.run([a.opplace, "info", out], capture_output=True, text=True)
    res["info_ok"] = r.returncode == 0
    if r.returncode != 0:
        res["info_error"] = r.stderr.strip().splitlines()[-1:]
    res["graph_mib"] = round(os.path.getsize(out) / 2**20, 1)
    res["ok"] = res["info_ok"] and res["export_s"] < 120 and res["peak_rss_mib"] < 4096
    print(json.dumps(res))
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
