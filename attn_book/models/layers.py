"""Layers shared by the book's small models."""

from __future__ import annotations

from torch import nn


class SelfAttention(nn.Module):
    """Multi-head self-attention, softmax(Q K^T / sqrt(d_h)) V per head, then W_O (as ``nn.MultiheadAttention``).

    A lighter twin of ``torch.nn.MultiheadAttention`` (one fused Q/K/V projection and
    ``F.scaled_dot_product_attention``): faster for these tiny models.  x (B, n, d) -> (B, n, d).
    """

    def __init__(self, d_model: int, n_heads: int = 1):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model: expected a multiple of n_heads={n_heads}, got {d_model}")
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, n, d = x.shape
        q, k, v = self.qkv(x).reshape(B, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)  # (B, h, n, d_h)
        o = nn.functional.scaled_dot_product_attention(q, k, v)  # (B, h, n, d_h)
        return self.out(o.transpose(1, 2).reshape(B, n, d))  # (B, n, d)
