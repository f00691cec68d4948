"""Attention without the n x n matrix: the online softmax, block by block.

The matrix form softmax(Q K^T * scale) V (see :mod:`attn_ref.attention`) holds the
scores of every query against every key, an (n, n) array: 64 MiB in float32 at
n = 4096, 1 GiB at n = 16384.  Two observations remove it (Milakov & Gimelshein 2018,
"Online normalizer calculation for softmax"; Dao et al. 2022, FlashAttention):

1. the softmax of a row can be computed in **one streaming pass**: keep a running
   maximum ``mu`` and a running sum ``s = sum_j exp(x_j - mu)``; when a larger maximum
   ``mu'`` arrives, the old sum is rescaled by ``exp(mu - mu')``
   (:func:`online_softmax_trace` records it for one row);
2. the output row ``b = sum_j softmax(x)_j v^j`` is a weighted sum, so it can be
   accumulated unnormalised alongside ``s`` (rescaled by the same factor) and divided
   by ``s`` once at the end.

So :func:`blocked_attention` reads the keys and values in blocks of ``block`` rows: only
an (n_q, block) tile of scores exists at any time, memory O(n * block) instead of O(n^2).
The attention weights are never formed (that is the point), so it returns the output only.
(attn_book.kernels is a kernel tuned for NumPy that computes the same thing; docs/kernels.md.)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._checks import as_array, as_qkv, default_scale
from .attention import apply_mask


class OnlineSoftmax(NamedTuple):
    """What :func:`online_softmax_trace` records after each block of one row."""

    mu: np.ndarray  # (n_blocks,) running maximum after each block
    s: np.ndarray  # (n_blocks,) running sum of exp(x_j - mu) after each block
    softmax: np.ndarray  # (n,) the softmax of the row, from the final mu and s


def online_softmax_trace(x, block: int) -> OnlineSoftmax:
    """Softmax of one row ``x`` (n,) read ``block`` entries at a time (Milakov & Gimelshein 2018, alg. 3).

    After each block: mu_new = max(mu, max(block)); s = s * exp(mu - mu_new) + sum exp(block - mu_new).
    Returns the running mu and s after every block and the softmax exp(x - mu) / s (the book's
    notation; FlashAttention writes m and l).
    A row of only -inf gives zeros (the :func:`attn_ref.softmax` convention).
    """
    x = as_array(x, "x")
    if x.ndim != 1:
        raise ValueError(f"x: expected shape (n,), got {x.shape} ({x.ndim}-D)")
    if block < 1:
        raise ValueError(f"block: expected a block size >= 1, got {block}")
    m, l = -np.inf, 0.0  # noqa: E741
    ms, ls = [], []
    for j0 in range(0, len(x), block):
        xb = x[j0:j0 + block]
        m_new = max(m, float(xb.max()))
        if m_new > -np.inf:
            l = l * math.exp(m - m_new) + float(np.exp(xb - m_new).sum())  # noqa: E741
        m = m_new
        ms.append(m)
        ls.append(l)
    if l == 0:
        p = np.zeros_like(x)
    else:
        p = np.exp(x - x.dtype.type(m)) / x.dtype.type(l)
    return OnlineSoftmax(np.array(ms, dtype=x.dtype), np.array(ls, dtype=x.dtype), p)


def blocked_attention(q, k, v, mask=None, scale: float | None = None, block: int = 512) -> np.ndarray:
    """softmax(q k^T * scale + mask) v, reading the keys ``block`` at a time (the online softmax).

    q: (..., n_q, d_k), k: (..., n_k, d_k), v: (..., n_k, d_v), batch dims broadcast;
    mask: None, or broadcastable to (..., n_q, n_k), boolean (True = may attend) or additive float,
    as in :func:`attn_ref.attention.scaled_dot_product_attention`; scale: None means 1/sqrt(d_k).
    For every query i: a running maximum mu_i, a running sum s_i = sum_j exp(x_ij - mu_i) and an
    unnormalised output acc_i = sum_j exp(x_ij - mu_i) v^j; when a block raises mu_i to mu_i', s_i
    and acc_i are rescaled by exp(mu_i - mu_i'); the output is acc_i / s_i.  Only one
    (..., n_q, block) tile of scores exists at a time; the weights are never formed.
    Returns the output (..., n_q, d_v), in the inputs' dtype.  A query that may attend to no key
    gets a zero output (the :func:`attn_ref.softmax` convention).
    """
    q, k, v = as_qkv(q, k, v)
    if block < 1:
        raise ValueError(f"block: expected a block size >= 1, got {block}")
    n_q, n_k = q.shape[-2], k.shape[-2]
    if mask is not None:
        mask = np.asarray(mask)
        try:
            mask = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, (n_q, n_k)))
        except ValueError:
            raise ValueError(f"mask: expected a shape that broadcasts to (..., {n_q}, {n_k}), "
                             f"got {mask.shape}") from None
    q = q * default_scale(q.shape[-1], scale)  # scaled once (a Python float keeps float32)
    shape = np.broadcast_shapes(q.shape[:-1], k.shape[:-2] + (n_q,), v.shape[:-2] + (n_q,))
    dtype = np.result_type(q, k, v)
    mu = np.full(shape + (1,), -np.inf, dtype=dtype)  # running maximum mu_i
    s = np.zeros(shape + (1,), dtype=dtype)  # running sum s_i
    acc = np.zeros(shape + (v.shape[-1],), dtype=dtype)  # unnormalised output acc_i
    for j0 in range(0, n_k, block):
        x = q @ np.swapaxes(k[..., j0:j0 + block, :], -1, -2)  # (..., n_q, c): the only tile of scores
        if mask is not None:
            x = apply_mask(x, mask[..., j0:j0 + block])
        mu_new = np.maximum(mu, x.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(mu_new), 0, mu_new)  # no key yet: exp(-inf - 0) = 0, not nan
        p = np.exp(x - shift)  # <= 1: no overflow
        rescale = np.exp(mu - shift)  # exp(mu - mu'), 0 for the first block
        s = s * rescale + p.sum(axis=-1, keepdims=True)
        acc = acc * rescale + p @ v[..., j0:j0 + block, :]
        mu = mu_new
    return acc / np.where(s == 0, 1, s)  # no key: 0 / 1
