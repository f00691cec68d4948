"""Relevance scores between two vectors (lecture: Dot-product, Additive).

* dot product (Vaswani et al. 2017):  alpha = q . k
* additive (Bahdanau, Cho & Bengio 2015):  alpha = w^T tanh(W_q a_i + W_k a_j), from the raw vectors
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


def additive_score(a_i, a_j, W_q, W_k, w) -> np.ndarray:
    """Additive relevance w^T tanh(W_q a_i + W_k a_j) for every pair (Bahdanau et al. 2015).

    The arguments are the raw vectors, not queries and keys: the function applies W_q and W_k itself.
    a_i: (n_i, d_i) or (d_i,), the vectors whose relevance to the others is asked (one per row);
    a_j: (n_j, d_j) or (d_j,), the vectors asked about; W_q: (d_h, d_i), W_k: (d_h, d_j), w: (d_h,)
    -> scores (n_i, n_j), ``scores[i, j] = w . tanh(W_q a_i[i] + W_k a_j[j])`` (a scalar array for
    two vectors).
    """
    a_i, a_j = as_array(a_i, "a_i"), as_array(a_j, "a_j")
    W_q, W_k, w = as_array(W_q, "W_q"), as_array(W_k, "W_k"), as_array(w, "w")
    single = a_i.ndim == 1 and a_j.ndim == 1
    x_i, x_j = np.atleast_2d(a_i), np.atleast_2d(a_j)
    check_ndim(x_i, "a_i", 2, "(n_i, d_i)")
    check_ndim(x_j, "a_j", 2, "(n_j, d_j)")
    check_ndim(W_q, "W_q", 2, "(d_h, d_i)")
    check_ndim(W_k, "W_k", 2, "(d_h, d_j)")
    check_ndim(w, "w", 1, "(d_h,)")
    check_dim(W_q.shape[1], x_i.shape[1], "W_q's columns vs a_i's d_i", "(d_h, d_i)", W_q.shape)
    check_dim(W_k.shape[1], x_j.shape[1], "W_k's columns vs a_j's d_j", "(d_h, d_j)", W_k.shape)
    check_dim(W_k.shape[0], W_q.shape[0], "W_k's rows vs W_q's d_h", "(d_h, d_j)", W_k.shape)
    check_dim(w.shape[0], W_q.shape[0], "w's length vs d_h", "(d_h,)", w.shape)
    hq = x_i @ W_q.T  # (n_i, d_h): the q^i as rows
    hk = x_j @ W_k.T  # (n_j, d_h): the k^j as rows
    h = np.tanh(hq[:, None, :] + hk[None, :, :])  # (n_i, n_j, d_h)
    scores = h @ w  # (n_i, n_j)
    return scores[0, 0] if single else scores
