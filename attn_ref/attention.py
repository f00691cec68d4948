"""Self-attention, from the lecture's step by step to the matrix form.

Two layouts, the same maths:

* the lecture's **column layout**: the input vectors a^1 ... a^n are the columns of
  I (d_in, n); Q = W_q I, K = W_k I, V = W_v I, A = K^T Q, A' = softmax of each
  column of A, O = V A' (Lee, ML 2021 "Self-attention", 并行化处理).
* PyTorch's **row layout**: x (..., n, d_in), one vector per row;
  softmax(Q K^T * scale) V with Q = x W_q^T (Vaswani et al. 2017, eq. 1).

Every weight matrix has the shape of ``torch.nn.Linear.weight``: (d_out, d_in), so
the same W_q works in both layouts.  Every function takes ``scale``: ``None``
means 1/sqrt(d_k) (the paper's and PyTorch's), ``scale=1.0`` gives the lecture's
unscaled numbers.

Masks: boolean, True = may attend (as ``torch.nn.functional.scaled_dot_product_attention``),
or additive float (0 = attend, -inf = blocked).  A query that may attend to no key gets
zero weights and a zero output (see :func:`attn_ref.softmax`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_array, as_qkv, check_dim, check_min_ndim, check_ndim, default_scale
from .softmax import softmax


class StepByStep(NamedTuple):
    """What :func:`attend_one` returns: the lecture's alpha_{i,j}, alpha'_{i,j} and b^i."""

    alpha: np.ndarray  # (n,) raw scores alpha_{i,1..n}
    alpha_prime: np.ndarray  # (n,) softmax-normalised scores
    b: np.ndarray  # (d_v,) output b^i


def _check_weights(d_in: int, W_q, W_k, W_v):
    W_q, W_k, W_v = as_array(W_q, "W_q"), as_array(W_k, "W_k"), as_array(W_v, "W_v")
    for name, W, rows in (("W_q", W_q, "d_k"), ("W_k", W_k, "d_k"), ("W_v", W_v, "d_v")):
        check_ndim(W, name, 2, f"({rows}, d_in)")
        check_dim(W.shape[1], d_in, f"{name}'s columns vs the input's d_in", f"({rows}, d_in={d_in})", W.shape)
    check_dim(W_k.shape[0], W_q.shape[0], "W_k's rows vs W_q's d_k", f"(d_k={W_q.shape[0]}, d_in)", W_k.shape)
    return W_q, W_k, W_v


def attend_one(a, i: int, W_q, W_k, W_v, scale: float | None = None) -> StepByStep:
    """The lecture's step by step for one query, with plain loops.

    a: (d_in, n), the input vectors a^1..a^n as columns; i: the query's index (0-based);
    W_q, W_k: (d_k, d_in); W_v: (d_v, d_in).
    q^i = W_q a^i;  k^j = W_k a^j;  alpha_{i,j} = scale * q^i . k^j  (j = 1..n, j = i included);
    alpha'_{i,.} = softmax(alpha_{i,.});  v^j = W_v a^j;  b^i = sum_j alpha'_{i,j} v^j.
    Returns ``StepByStep(alpha (n,), alpha_prime (n,), b (d_v,))``.
    """
    a = as_array(a, "a")
    check_ndim(a, "a", 2, "(d_in, n)")
    d_in, n = a.shape
    W_q, W_k, W_v = _check_weights(d_in, W_q, W_k, W_v)
    if not -n <= i < n:
        raise ValueError(f"i: expected a query index in [0, {n}), got {i}")
    s = default_scale(W_q.shape[0], scale)
    q_i = W_q @ a[:, i]  # (d_k,)
    alpha = np.empty(n, dtype=q_i.dtype)
    for j in range(n):
        k_j = W_k @ a[:, j]  # (d_k,)
        alpha[j] = s * float(np.dot(q_i, k_j))
    alpha_prime = softmax(alpha)
    b = np.zeros(W_v.shape[0], dtype=q_i.dtype)
    for j in range(n):
        v_j = W_v @ a[:, j]  # (d_v,)
        b += alpha_prime[j] * v_j
    return StepByStep(alpha, alpha_prime, b)


def self_attention_columns(I, W_q, W_k, W_v, scale: float | None = None):
    """The lecture's matrix form in the column layout.

    I: (d_in, n); W_q, W_k: (d_k, d_in); W_v: (d_v, d_in).
    Q = W_q I (d_k, n); K = W_k I (d_k, n); V = W_v I (d_v, n);
    A = scale * K^T Q (n, n), ``A[j, i]`` = relevance of key j to query i;
    A' = softmax over each column; O = V A' (d_v, n).
    Returns ``(O (d_v, n), A_prime (n, n))``.
    """
    I = as_array(I, "I")
    check_ndim(I, "I", 2, "(d_in, n)")
    W_q, W_k, W_v = _check_weights(I.shape[0], W_q, W_k, W_v)
    s = default_scale(W_q.shape[0], scale)
    Q = W_q @ I  # (d_k, n)
    K = W_k @ I  # (d_k, n)
    V = W_v @ I  # (d_v, n)
    A = (K.T @ Q) * s  # (n, d_k) x (d_k, n) -> (n, n)
    A_prime = softmax(A, axis=0)  # each column sums to 1
    O = V @ A_prime  # (d_v, n) x (n, n) -> (d_v, n)
    return O, A_prime


def apply_mask(scores: np.ndarray, mask, inplace: bool = False) -> np.ndarray:
    """Scores with a mask applied: boolean (True = may attend) or additive float.

    scores: (..., n_q, n_k); mask broadcastable to it. ``inplace=True`` may overwrite ``scores``.
    """
    if mask is None:
        return scores
    mask = np.asarray(mask)
    try:
        np.broadcast_shapes(mask.shape, scores.shape)
    except ValueError:
        raise ValueError(
            f"mask: expected a shape that broadcasts to the scores' {scores.shape}, got {mask.shape}"
        ) from None
    if mask.dtype == bool:
        if inplace and mask.shape == scores.shape:
            np.copyto(scores, -np.inf, where=~mask)
            return scores
        return np.where(mask, scores, np.array(-np.inf, dtype=scores.dtype))
    if mask.dtype.kind not in "fiu":
        raise ValueError(f"mask: expected a boolean or float array, got dtype {mask.dtype}")
    return scores + mask.astype(scores.dtype)


def scaled_dot_product_attention(q, k, v, mask=None, scale: float | None = None):
    """softmax(q k^T * scale + mask) v, in the row layout (Vaswani et al. 2017, eq. 1).

    q: (..., n_q, d_k), k: (..., n_k, d_k), v: (..., n_k, d_v), batch dims broadcast;
    mask: broadcastable to (..., n_q, n_k), boolean (True = may attend) or additive.
    Returns ``(output (..., n_q, d_v), weights (..., n_q, n_k))``.
    """
    q, k, v = as_qkv(q, k, v)
    s = default_scale(q.shape[-1], scale)
    # Scale q (n d values) rather than the scores (n^2); a Python float keeps float32 as float32.
    scores = (q * s) @ np.swapaxes(k, -1, -2)  # (..., n_q, d_k) x (..., d_k, n_k) -> (..., n_q, n_k)
    scores = apply_mask(scores, mask, inplace=True)
    weights = _softmax_last_inplace(scores)  # the scores are ours: normalise them in place
    return weights @ v, weights  # (..., n_q, n_k) x (..., n_k, d_v) -> (..., n_q, d_v)


def _softmax_last_inplace(x: np.ndarray) -> np.ndarray:
    """:func:`attn_ref.softmax` over the last axis, overwriting ``x`` (no n x n temporaries)."""
    m = np.max(x, axis=-1, keepdims=True)  # (..., n_q, 1)
    m[np.isneginf(m)] = 0  # a fully masked row: exp(-inf - 0) = 0, not nan
    np.subtract(x, m, out=x)
    np.exp(x, out=x)
    total = np.sum(x, axis=-1, keepdims=True)  # (..., n_q, 1)
    total[total == 0] = 1
    np.multiply(x, 1 / total, out=x)
    return x


def self_attention(x, W_q, W_k, W_v, mask=None, scale: float | None = None):
    """Self-attention in the row layout.

    x: (..., n, d_in); W_q, W_k: (d_k, d_in); W_v: (d_v, d_in);
    mask: broadcastable to (..., n, n), boolean (True = may attend) or additive float.
    Q = x W_q^T, K = x W_k^T, V = x W_v^T; returns
    ``(output (..., n, d_v), weights (..., n, n))`` with ``weights[..., i, j]`` the
    weight of key j for query i (the transpose of the column form's A').
    """
    x = as_array(x, "x")
    check_min_ndim(x, "x", 2, "(..., n, d_in)")
    W_q, W_k, W_v = _check_weights(x.shape[-1], W_q, W_k, W_v)
    q = x @ W_q.T  # (..., n, d_k)
    k = x @ W_k.T  # (..., n, d_k)
    v = x @ W_v.T  # (..., n, d_v)
    return scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)


def causal_mask(n: int) -> np.ndarray:
    """Boolean (n, n) mask, True where key j <= query i (may attend to the past and itself)."""
    return np.tril(np.ones((n, n), dtype=bool))


def band_mask(n: int, w: int) -> np.ndarray:
    """Boolean (n, n) mask, True where |i - j| <= w (truncated self-attention of width w each side)."""
    if w < 0:
        raise ValueError(f"w: expected a half-width >= 0, got {w}")
    return np.tri(n, n, w, dtype=bool) & ~np.tri(n, n, -w - 1, dtype=bool)  # j <= i + w and j >= i - w
