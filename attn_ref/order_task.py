"""A toy task where order matters: learned vs sinusoidal vs no positional encoding (chapter Positional encoding).

Task "previous token": the input is n random tokens from a vocabulary of size V; at every
position i >= 1 the model must output the token at position i - 1.  Without a positional
encoding a self-attention layer is permutation-equivariant (it sees a set, not a sequence),
so it cannot know which token came before.  The model is one single-head self-attention
layer between a token embedding and a linear read-out::

    x^i = E[token_i] + e^i          # e^i: none, sinusoidal (Vaswani et al. 2017) or nn.Embedding
    b^i = self-attention(x)^i       # q, k, v from x; softmax(q k^T / sqrt(d)) v
    logits^i = W_out b^i

PyTorch, CPU, seeded; a few seconds per model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .positional import sinusoidal_positional_encoding

ENCODINGS = ("none", "sinusoidal", "learned")


def previous_token_batch(batch: int, n: int, vocab: int, generator: torch.Generator):
    """Random tokens (batch, n) and targets (batch, n): target[:, i] = tokens[:, i-1]; target[:, 0] = -100 (ignored)."""
    tokens = torch.randint(0, vocab, (batch, n), generator=generator)  # (B, n)
    target = torch.full_like(tokens, -100)
    target[:, 1:] = tokens[:, :-1]  # (B, n - 1)
    return tokens, target


class TinyAttentionModel(nn.Module):
    """Token embedding + positional encoding ("none", "sinusoidal", "learned") -> one attention layer -> read-out."""

    def __init__(self, vocab: int, n: int, d_model: int, encoding: str):
        super().__init__()
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding: expected one of {ENCODINGS}, got {encoding!r}")
        self.encoding = encoding
        self.embed = nn.Embedding(vocab, d_model)
        if encoding == "learned":
            self.pos = nn.Embedding(n, d_model)  # one learned vector e^i per position
        elif encoding == "sinusoidal":
            pe = torch.from_numpy(sinusoidal_positional_encoding(n, d_model)).float()  # (n, d_model)
            self.register_buffer("pe", pe)
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.out = nn.Linear(d_model, vocab)

    def positions(self, n: int) -> torch.Tensor | None:
        """The positional vectors e^0..e^{n-1} (n, d_model), or None."""
        if self.encoding == "learned":
            return self.pos.weight[:n]
        if self.encoding == "sinusoidal":
            return self.pe[:n]
        return None

    def forward(self, tokens: torch.Tensor):
        """tokens (B, n) -> (logits (B, n, vocab), attention weights (B, n, n))."""
        x = self.embed(tokens)  # (B, n, d)
        e = self.positions(tokens.shape[1])
        if e is not None:
            x = x + e  # (B, n, d) + (n, d)
        q, k, v = self.W_q(x), self.W_k(x), self.W_v(x)  # (B, n, d) each
        weights = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)  # (B, n, n)
        return self.out(weights @ v), weights  # (B, n, vocab), (B, n, n)


@dataclass
class TrainResult:
    """What :func:`train_order_model` measured: accuracy on a fixed held-out batch every ``every`` steps."""

    encoding: str
    steps: np.ndarray  # (k,)
    accuracy: np.ndarray  # (k,) held-out accuracy over positions 1..n-1
    model: TinyAttentionModel

    @property
    def final_accuracy(self) -> float:
        return float(self.accuracy[-1])


def accuracy(model: TinyAttentionModel, tokens: torch.Tensor, target: torch.Tensor) -> float:
    """Fraction of positions i >= 1 where the argmax equals target."""
    with torch.no_grad():
        pred = model(tokens)[0].argmax(-1)  # (B, n)
    keep = target != -100
    return float((pred[keep] == target[keep]).float().mean())


def train_order_model(encoding: str, *, n: int = 8, vocab: int = 8, d_model: int = 32, steps: int = 400,
                      batch: int = 64, lr: float = 1e-2, every: int = 20, seed: int = 0) -> TrainResult:
    """Train a :class:`TinyAttentionModel` on "previous token" with Adam; seeded, CPU."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = TinyAttentionModel(vocab, n, d_model, encoding)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    test_tokens, test_target = previous_token_batch(1024, n, vocab, torch.Generator().manual_seed(10_000 + seed))
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
    xs, accs = [0], [accuracy(model, test_tokens, test_target)]
    for step in range(1, steps + 1):
        tokens, target = previous_token_batch(batch, n, vocab, gen)
        logits, _ = model(tokens)
        loss = loss_fn(logits.reshape(-1, vocab), target.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % every == 0:
            xs.append(step)
            accs.append(accuracy(model, test_tokens, test_target))
    return TrainResult(encoding, np.array(xs), np.array(accs), model.eval())
