"""Models of the real-run fidelity benchmark (bench/fidelity_real.sh): each
has parallel work that a 2-device placement can use."""
import torch
import torch.nn as nn
import torchvision

from opplace.torch.examples import gnmt as _gnmt, seq2seq as _seq2seq


def inception():
    """torchvision's GoogLeNet (Inception v1 blocks: four branches each)."""
    return torchvision.models.googlenet(num_classes=10, aux_logits=False, init_weights=False)


def gnmt():
    return _gnmt(vocab=1000, dim=256, layers=4, seq=12)


def seq2seq():
    return _seq2seq(vocab=1000, dim=256, layers=2)


class Encoder(nn.Module):
    """A transformer encoder over token ids (batch first)."""

    def __init__(self, vocab=1000, d_model=256, heads=4, layers=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def transformer():
    return Encoder()


class Branches(nn.Module):
    """Four independent MLP branches of the same input, summed: the
    multi-branch model of the project's own."""

    def __init__(self, dim=512, depth=3, branches=4):
        super().__init__()
        self.branches = nn.ModuleList(
            nn.Sequential(*[m for _ in range(depth) for m in (nn.Linear(dim, dim), nn.ReLU())])
            for _ in range(branches))
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        y = self.branches[0](x)
        for b in self.branches[1:]:
            y = y + b(x)
        return self.head(y)


def branches():
    return Branches()


# name -> (factory, --input specs)
MODELS = {
    "inception": ("fidelity_models:inception", ["8x3x64x64"]),
    "gnmt": ("fidelity_models:gnmt", ["16x12:int64", "16x12:int64"]),
    "seq2seq": ("fidelity_models:seq2seq", ["16x16:int64", "16x16:int64"]),
    "transformer": ("fidelity_models:transformer", ["8x64:int64"]),
    "branches": ("fidelity_models:branches", ["64x512"]),
}
