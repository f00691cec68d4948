"""Truncated (banded) self-attention: each query sees only the keys at most ``w`` positions away.

Lecture: 应用 — speech is a very long sequence of frames, so *truncated self-attention*
(截断自注意力) computes the relevance of each frame only with its neighbours.
The dense way is full attention with :func:`attn_ref.attention.band_mask` (True where
|i - j| <= w): it still builds the n x n score matrix and costs O(n^2) memory.

:func:`truncated_attention` computes the same output without the n x n matrix: it gathers the
2w + 1 neighbours of each query through a strided view of the zero-padded keys and values
(:func:`numpy.lib.stride_tricks.sliding_window_view`, no copy), so the scores have shape
(..., n, 2w + 1) and the memory grows as n * w.  Slot t of query i holds key j = i - w + t;
slots with j < 0 or j >= n (beyond the ends of the sequence) are masked.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ._checks import as_array, as_qkv, check_dim, check_min_ndim, default_scale
from .softmax import softmax


def _check_w(w) -> int:
    if int(w) != w or w < 0:
        raise ValueError(f"w: expected an integer half-width >= 0, got {w!r}")
    return int(w)


def band_valid(n: int, w: int) -> np.ndarray:
    """Boolean (n, 2w + 1): True where slot t of query i holds a real key j = i - w + t (0 <= j < n)."""
    w = _check_w(w)
    j = np.arange(n)[:, None] - w + np.arange(2 * w + 1)[None, :]  # (n, 2w+1) key index of each slot
    return (j >= 0) & (j < n)


def band_mask_view(n: int, w: int) -> np.ndarray:
    """The boolean (n, n) band mask |i - j| <= w as a read-only strided view of 2n - 1 booleans.

    Equal to :func:`attn_ref.attention.band_mask` but allocates O(n), not O(n^2): row i is the
    slice ``pattern[n-1-i : 2n-1-i]`` of one 1-D pattern, so every row is the same memory shifted.
    Useful to time full attention with a band mask without timing the mask's construction.
    """
    w = _check_w(w)
    offsets = np.arange(-(n - 1), n)  # (2n-1,) = j - i for row i = n-1
    pattern = np.abs(offsets) <= w  # (2n-1,)
    return sliding_window_view(pattern, n)[::-1]  # (n, n): row i = pattern[n-1-i : 2n-1-i]


def neighbour_windows(x: np.ndarray, w: int) -> np.ndarray:
    """The 2w + 1 neighbours of every position, as a strided view (no copy of the windows).

    x: (..., n, d) -> (..., n, d, 2w + 1); ``out[..., i, :, t] = x[..., i - w + t, :]``,
    zero where i - w + t is outside [0, n).  Only the zero-padded copy of x, (..., n + 2w, d),
    is allocated.
    """
    pad = [(0, 0)] * (x.ndim - 2) + [(w, w), (0, 0)]
    x_pad = np.pad(x, pad)  # (..., n + 2w, d)
    return sliding_window_view(x_pad, 2 * w + 1, axis=-2)  # (..., n, d, 2w+1), a view


def truncated_attention(q, k, v, w: int, scale: float | None = None):
    """Self-attention restricted to |i - j| <= w, in O(n * w) memory.

    q, k: (..., n, d_k); v: (..., n, d_v); w: half-width of the window (w = 0: each query
    sees only itself); scale: None means 1/sqrt(d_k).
    Returns ``(output (..., n, d_v), band_weights (..., n, 2w + 1))``, where
    ``band_weights[..., i, t]`` is the weight of key j = i - w + t (zero outside the sequence).
    The output equals ``scaled_dot_product_attention(q, k, v, mask=band_mask(n, w))``.
    """
    q, k, v = as_qkv(q, k, v, same_length=True)
    w = _check_w(w)
    n = q.shape[-2]
    s = default_scale(q.shape[-1], scale)
    k_win = neighbour_windows(k, w)  # (..., n, d_k, 2w+1), a view
    v_win = neighbour_windows(v, w)  # (..., n, d_v, 2w+1), a view
    # alpha_{i, i-w+t} = s * q^i . k^{i-w+t}
    scores = np.einsum("...nd,...ndt->...nt", q, k_win) * s  # (..., n, 2w+1)
    scores = np.where(band_valid(n, w), scores, np.array(-np.inf, dtype=scores.dtype))
    weights = softmax(scores, axis=-1)  # (..., n, 2w+1); slots outside the sequence get 0
    out = np.einsum("...nt,...ndt->...nd", weights, v_win)  # (..., n, d_v)
    return out, weights


def band_to_dense(band_weights, w: int) -> np.ndarray:
    """Scatter band weights (..., n, 2w + 1) into the dense (..., n, n) matrix (for plots of small n).

    ``dense[..., i, i - w + t] = band_weights[..., i, t]``; zero outside the band.
    """
    band_weights = as_array(band_weights, "band_weights")
    w = _check_w(w)
    check_min_ndim(band_weights, "band_weights", 2, "(..., n, 2w+1)")
    check_dim(band_weights.shape[-1], 2 * w + 1, "band_weights' last axis vs 2w+1", "(..., n, 2w+1)",
              band_weights.shape)
    n = band_weights.shape[-2]
    dense = np.zeros(band_weights.shape[:-1] + (n,), dtype=band_weights.dtype)  # (..., n, n)
    rows, slots = np.nonzero(band_valid(n, w))
    dense[..., rows, rows - w + slots] = band_weights[..., rows, slots]
    return dense
