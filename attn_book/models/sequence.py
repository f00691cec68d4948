"""Small sequence models: self-attention vs an RNN on a long-range task, and positional encodings.

* Self-attention vs RNN on a long-range dependency (chapter "Self-attention vs RNN"; Vaswani et al.
  2017, Table 1: maximum path length O(1) vs O(n)): :class:`RNNClassifier` (vanilla tanh
  ``torch.nn.RNN``) and :class:`AttentionClassifier` read a token sequence and must output the
  *first* token at the last position (:func:`attn_book.toy_data.first_token_batch`), trained by
  :func:`attn_book.models.training.train_sequence_model`.
* A toy task where order matters (chapter "Positional encoding"): "previous token", at every position
  i >= 1 output the token at position i - 1 (:func:`attn_book.toy_data.previous_token_batch`).
  Without a positional encoding a self-attention layer is permutation-equivariant (it sees a set, not
  a sequence), so it cannot know which token came before.  :class:`TinyAttentionModel` is one
  single-head self-attention layer between a token embedding and a linear read-out::

      x^i = E[token_i] + e^i          # e^i: none, sinusoidal (Vaswani et al. 2017) or nn.Embedding
      b^i = self-attention(x)^i       # q, k, v from x; softmax(q k^T / sqrt(d)) v
      logits^i = W_out b^i
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from attn_ref.positional import sinusoidal_positional_encoding

from ..toy_data import previous_token_batch
from .layers import SelfAttention
from .training import accuracy, train

ENCODINGS = ("none", "sinusoidal", "learned")


class RNNClassifier(nn.Module):
    """Embedding -> vanilla tanh ``torch.nn.RNN`` -> linear read-out of the last hidden state."""

    def __init__(self, vocab: int, d_embed: int = 16, d_hidden: int = 32):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_embed)
        self.rnn = nn.RNN(d_embed, d_hidden, nonlinearity="tanh", batch_first=True)
        self.head = nn.Linear(d_hidden, vocab)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))  # (B, n, d_hidden): n sequential steps
        return self.head(h[:, -1])  # (B, vocab)


class AttentionClassifier(nn.Module):
    """Embedding + learned positions -> one self-attention layer -> read-out at the last position."""

    def __init__(self, vocab: int, n_positions: int, d_model: int = 16, n_heads: int = 1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(n_positions, d_model) * 0.1)
        self.attn = SelfAttention(d_model, n_heads)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        t = self.embed(tokens) + self.pos[: tokens.shape[1]]  # (B, n, d)
        a = self.attn(t)  # (B, n, d): all positions at once
        return self.head(a[:, -1])  # (B, vocab)


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


def train_order_model(encoding: str, *, n: int = 8, vocab: int = 8, d_model: int = 32, steps: int = 400,
                      batch: int = 64, lr: float = 1e-2, every: int = 20, seed: int = 0) -> TrainResult:
    """Train a :class:`TinyAttentionModel` on "previous token" with Adam; seeded, CPU.

    Accuracy (over positions 1..n-1) on 1024 held-out sequences every ``every`` steps.
    """
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = TinyAttentionModel(vocab, n, d_model, encoding)
    test_tokens, test_target = previous_token_batch(1024, n, vocab, torch.Generator().manual_seed(10_000 + seed))
    steps_at, accs = train(model, lambda: previous_token_batch(batch, n, vocab, gen), steps=steps, lr=lr,
                           every=every, evaluate=lambda m: accuracy(m, test_tokens, test_target))
    return TrainResult(encoding, np.array(steps_at), np.array(accs), model.eval())
