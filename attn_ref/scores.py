"""Relevance scores between a query vector and a key vector (lecture: Dot-product, Additive).

* dot product (Vaswani et al. 2017):  alpha = q . k
* additive (Bahdanau, Cho & Bengio 2015):  alpha = w^T tanh(W_q q + W_k k)
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_dim, check_min_ndim, check_ndim


def dot_product_score(q, k) -> np.ndarray:
    """Dot-product relevance of every query with every key.

    q: (..., n_q, d), k: (..., n_k, d) -> scores (..., n_q, n_k), ``scores[i, j] = q_i . k_j``.
    Two 1-D vectors (d,) give a scalar array.
    """
    q, k = as_array(q, "q"), as_array(k, "k")
    if q.ndim == 1 and k.ndim == 1:
        check_dim(k.shape[0], q.shape[0], "k's length d vs q's", "(d,)", k.shape)
        return np.asarray(q @ k)
    check_min_ndim(q, "q", 2, "(..., n_q, d)")
    check_min_ndim(k, "k", 2, "(..., n_k, d)")
    check_dim(k.shape[-1], q.shape[-1], "k's last dim d vs q's", "(..., n_k, d)", k.shape)
    return q @ np.swapaxes(k, -1, -2)  # (..., n_q, d) x (..., d, n_k) -> (..., n_q, n_k)


def additive_score(q, k, W_q, W_k, w) -> np.ndarray:
    """Additive relevance w^T tanh(W_q q_i + W_k k_j) for every pair (Bahdanau et al. 2015).

    q: (n_q, d_q) or (d_q,), k: (n_k, d_k) or (d_k,), W_q: (d_h, d_q), W_k: (d_h, d_k),
    w: (d_h,) -> scores (n_q, n_k) (a scalar array for two vectors).
    """
    q, k = as_array(q, "q"), as_array(k, "k")
    W_q, W_k, w = as_array(W_q, "W_q"), as_array(W_k, "W_k"), as_array(w, "w")
    single = q.ndim == 1 and k.ndim == 1
    q2, k2 = np.atleast_2d(q), np.atleast_2d(k)
    check_ndim(q2, "q", 2, "(n_q, d_q)")
    check_ndim(k2, "k", 2, "(n_k, d_k)")
    check_ndim(W_q, "W_q", 2, "(d_h, d_q)")
    check_ndim(W_k, "W_k", 2, "(d_h, d_k)")
    check_ndim(w, "w", 1, "(d_h,)")
    check_dim(W_q.shape[1], q2.shape[1], "W_q's columns vs q's d_q", "(d_h, d_q)", W_q.shape)
    check_dim(W_k.shape[1], k2.shape[1], "W_k's columns vs k's d_k", "(d_h, d_k)", W_k.shape)
    check_dim(W_k.shape[0], W_q.shape[0], "W_k's rows vs W_q's d_h", "(d_h, d_k)", W_k.shape)
    check_dim(w.shape[0], W_q.shape[0], "w's length vs d_h", "(d_h,)", w.shape)
    hq = q2 @ W_q.T  # (n_q, d_h)
    hk = k2 @ W_k.T  # (n_k, d_h)
    h = np.tanh(hq[:, None, :] + hk[None, :, :])  # (n_q, n_k, d_h)
    scores = h @ w  # (n_q, n_k)
    return scores[0, 0] if single else scores
