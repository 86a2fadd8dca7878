# opplace-test: torch1.13
"""A few third-party models of each family of the corpus (bench/torch_corpus.py,
issue 32) through every stage: export (estimate:v100) -> opplace info ->
opplace place --algo auto --budget-seconds 2 on 4 GPUs -> apply on the CPU ->
one training step whose loss and gradients equal the unplaced model's.
torchvision 2, timm 2, torchaudio 2 (Conformer among them), transformers 3
(GPT-2 and Llama among them).  A family whose library does not import is
skipped (said on stdout); exit 77 when torch or every library is missing.
On Debian's torch 1.13 (py113_) only torchvision exists: its two models, fx capture."""
import os
import sys
import tempfile
import time

import torchtest as tt  # exit 77 without torch

sys.path.insert(0, os.path.join(tt.ROOT, "bench"))
import torch_corpus  # noqa: E402
import corpus_models  # noqa: E402

SMALL = {
    "torchvision": ["tv.resnet18", "tv.mobilenet_v3_small"],
    "timm": ["timm.resnet18", "timm.vit_tiny_patch16_224"],
    "torchaudio": ["ta.Conformer", "ta.ConvTasNet"],
    "transformers": ["hf.gpt2", "hf.llama", "hf.bert"],
}
TIMEOUT = 150  # seconds per model


def main():
    import torch
    torch.set_num_threads(1)
    import opplace.torch  # noqa: F401  (before the fork)
    specs = []
    for fam, names in SMALL.items():
        if not corpus_models.available(fam):
            print("SKIPPED family %s: python cannot import %s" % (fam, corpus_models.LIBRARY[fam]))
            continue
        for n in names:
            if n not in corpus_models.MODELS:
                print("SKIPPED %s: %s has no such model" % (n, corpus_models.LIBRARY[fam]))
                continue
            specs.append(corpus_models.MODELS[n])
    if not specs:
        print("SKIPPED: none of torchvision, timm, torchaudio, transformers imports")
        return 77
    d = tempfile.mkdtemp(prefix="opplace_corpus_")
    cluster = os.path.join(d, "c.json")
    torch_corpus.make_cluster(tt.OPPLACE, cluster)
    recs = []
    t0 = time.perf_counter()
    for s in specs:
        r = torch_corpus.run_forked(s, tt.OPPLACE, cluster, TIMEOUT, 8)
        recs.append(r)
        print("%-28s %s (%.1f s)" % (s.name, "ok" if r.get("ok") else "FAIL at %s: %s %s" % (
            r.get("failed"), r.get("error"), r.get("where", "")), r["wall_s"]), flush=True)
    print()
    print(torch_corpus.table(recs))
    print("\n%.0f s" % (time.perf_counter() - t0))
    return 0 if all(r.get("ok") for r in recs) else 1


if __name__ == "__main__":
    sys.exit(main())
