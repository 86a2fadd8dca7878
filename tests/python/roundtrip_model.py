"""The round-trip test's model: two inputs (tokens, image), a
tied embedding/output weight, an LSTM, a conv branch, a residual and a norm."""
import torch
import torch.nn as nn


class RoundTrip(nn.Module):  # noqa: D101
    def __init__(self, vocab=50, dim=16, hidden=16, steps=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True)
        self.cell = nn.LSTMCell(dim, hidden)      # a shared module: called at every step
        self.steps = steps
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.img_proj = nn.Linear(8, dim)
        self.mix = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)
        self.head.weight = self.embed.weight      # tied

    def forward(self, tokens, image):
        e = self.embed(tokens)                    # B x T x D
        seq, _ = self.lstm(e)
        h = torch.zeros_like(e[:, 0])
        c = torch.zeros_like(e[:, 0])
        for t in range(self.steps):
            h, c = self.cell(e[:, t], (h, c))
        img = torch.relu(self.bn(self.conv(image))).mean(dim=(2, 3))
        x = seq + self.img_proj(img).unsqueeze(1) + h.unsqueeze(1)
        x = self.norm(x + self.mix(x))            # residual, then the norm
        return self.head(x)                       # B x T x vocab


def example(batch=2, seq=4, vocab=50):
    g = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, vocab, (batch, seq), generator=g)
    image = torch.randn(batch, 3, 8, 8, generator=g)
    return tokens, image


def dying(seconds=3.0):
    """RoundTrip, but the process of rank 1 (torchrun's RANK) exits with
    status 3 `seconds` after building it: a rank that dies mid-run."""
    import os
    import threading
    if os.environ.get("RANK") == "1":
        threading.Timer(seconds, lambda: os._exit(3)).start()
    return RoundTrip()
