"""Example models for the benchmarks and docs (module:factory targets of
`python3 -m opplace.torch export`)."""
import torch
import torch.nn as nn


class Block(nn.Module):
    """Pre-norm decoder block: causal self-attention and an MLP, residuals."""

    def __init__(self, d, heads, ff):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, ff)
        self.act = nn.GELU()
        self.proj = nn.Linear(ff, d)

    def forward(self, x, mask):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.proj(self.act(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """GPT-style decoder: token + position embeddings, `layers` blocks, a
    final norm and an output layer tied to the token embedding."""

    def __init__(self, layers=12, d_model=768, heads=12, vocab=50257, seq=1024):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, 4 * d_model) for _ in range(layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))
        self.register_buffer("positions", torch.arange(seq))

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(self.positions[:t])
        mask = self.mask[:t, :t]
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln(x))


def gpt(layers=12, d_model=768, heads=12, vocab=50257, seq=1024):
    return GPT(layers, d_model, heads, vocab, seq)


def gpt_10b(seq=2048):
    """~10.7 billion parameters: 40 layers, d_model 4608 (GPT-3 13B-like
    width with fewer layers)."""
    return GPT(layers=40, d_model=4608, heads=36, vocab=50257, seq=seq)


class Seq2Seq(nn.Module):
    """LSTM encoder-decoder with dot-product attention over the encoder
    states (GNMT-like, small)."""

    def __init__(self, vocab=8000, dim=512, layers=2):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, dim)
        self.tgt_embed = nn.Embedding(vocab, dim)
        self.encoder = nn.LSTM(dim, dim, layers, batch_first=True)
        self.decoder = nn.LSTM(dim, dim, layers, batch_first=True)
        self.combine = nn.Linear(2 * dim, dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, src, tgt):
        enc, state = self.encoder(self.src_embed(src))
        dec, _ = self.decoder(self.tgt_embed(tgt), state)
        scores = torch.bmm(dec, enc.transpose(1, 2)).softmax(dim=-1)
        context = torch.bmm(scores, enc)
        return self.out(torch.tanh(self.combine(torch.cat([dec, context], dim=-1))))


def seq2seq(vocab=8000, dim=512, layers=2):
    return Seq2Seq(vocab, dim, layers)


class GNMT(nn.Module):
    """GNMT-like seq2seq unrolled over time: one nn.LSTMCell per layer and
    side, called once per token (fx unrolls the loop, so each call is an op
    and a layer's calls share one colocation group), residual connections
    from the third layer, each decoder layer starting from its encoder
    layer's final state, dot-product attention over the encoder's top layer
    after the decoder.  Unlike `seq2seq` (one nn.LSTM per side, one op and
    one group), a placement can put layers on different devices and run
    them as a wavefront: the parallelism model-parallel GNMT relies on."""

    def __init__(self, vocab=8000, dim=512, layers=4, seq=32):
        super().__init__()
        self.seq = seq
        self.src_embed = nn.Embedding(vocab, dim)
        self.tgt_embed = nn.Embedding(vocab, dim)
        self.enc = nn.ModuleList(nn.LSTMCell(dim, dim) for _ in range(layers))
        self.dec = nn.ModuleList(nn.LSTMCell(dim, dim) for _ in range(layers))
        self.combine = nn.Linear(2 * dim, dim)
        self.out = nn.Linear(dim, vocab)

    def _stack(self, cells, x, states):
        final = []
        for i, cell in enumerate(cells):
            h, c = states[i] if states else (None, None)
            ys = []
            for t in range(self.seq):
                h, c = cell(x[t], None if h is None else (h, c))
                ys.append(h + x[t] if i >= 2 else h)
            x = ys
            final.append((h, c))
        return x, final

    def forward(self, src, tgt):
        s, t = self.src_embed(src), self.tgt_embed(tgt)
        enc, state = self._stack(self.enc, [s[:, k] for k in range(self.seq)], None)
        dec, _ = self._stack(self.dec, [t[:, k] for k in range(self.seq)], state)
        enc = torch.stack(enc, dim=1)
        dec = torch.stack(dec, dim=1)
        scores = torch.bmm(dec, enc.transpose(1, 2)).softmax(dim=-1)
        context = torch.bmm(scores, enc)
        return self.out(torch.tanh(self.combine(torch.cat([dec, context], dim=-1))))


def gnmt(vocab=8000, dim=512, layers=4, seq=32):
    return GNMT(vocab, dim, layers, seq)


def transformer(d_model=512, nhead=8, layers=6):
    """torch.nn.Transformer (inputs: src, tgt as S x B x d_model)."""
    return nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=layers,
                          num_decoder_layers=layers, dim_feedforward=4 * d_model)
