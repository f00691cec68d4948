"""Sequence labeling (序列标注) without attention: a fully connected network per token, then per window.

Lee, ML 2021 "Self-attention", Sequence Labeling: the same fully connected network (FCN) is
applied to every input vector; it cannot tell the two ``saw`` of ``I saw a saw`` apart since
their vectors are identical.  Feeding it a window of neighbours (x_{t-r}, ..., x_{t+r})
concatenated fixes that, at the price of (2r+1) times the input parameters (r, the window radius).

What the exercises check (the chapter trains the same network with PyTorch, in
:mod:`attn_book.models.tagger`):

* :func:`window_features` — (..., n, d) -> (..., n, (2r+1) d), zero (or ``pad``) beyond the ends;
* :func:`fcn_tag_logits` — relu(X W1^T + b1) W2^T + b2 for every row (weights shaped like nn.Linear);
* :func:`windowed_logits` — the same FCN on the windowed features;
* :func:`n_tagger_params` — the size of the windowed FCN;
* :func:`token_dataset` — the windowed features of every token of a corpus.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_dim, check_min_ndim, check_ndim


def window_features(X, r: int, pad: float = 0.0) -> np.ndarray:
    """Concatenate each vector with its r left and r right neighbours (r: the window radius).

    X: (..., n, d) -> (..., n, (2r+1) d); row t is [x_{t-r}, ..., x_t, ..., x_{t+r}], positions
    outside 0..n-1 filled with ``pad`` (default zeros, as ``torch.nn.functional.pad``).
    """
    X = as_array(X, "X")
    check_min_ndim(X, "X", 2, "(..., n, d)")
    if r < 0:
        raise ValueError(f"r: expected a window radius >= 0, got {r}")
    n = X.shape[-2]
    widths = [(0, 0)] * (X.ndim - 2) + [(r, r), (0, 0)]
    P = np.pad(X, widths, constant_values=pad)  # (..., n + 2r, d)
    return np.concatenate([P[..., k:k + n, :] for k in range(2 * r + 1)], axis=-1)  # (..., n, (2r+1) d)


def _check_fcn(X, W1, b1, W2, b2):
    X, W1, b1, W2, b2 = (as_array(a, name) for a, name in
                         ((X, "X"), (W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2")))
    check_min_ndim(X, "X", 2, "(..., n, d)")
    check_ndim(W1, "W1", 2, "(h, d)")
    check_ndim(W2, "W2", 2, "(k, h)")
    check_dim(W1.shape[1], X.shape[-1], "W1's columns vs X's d", f"(h, d={X.shape[-1]})", W1.shape)
    check_dim(b1.shape[0] if b1.ndim == 1 else -1, W1.shape[0], "b1 vs W1's rows", f"(h={W1.shape[0]},)", b1.shape)
    check_dim(W2.shape[1], W1.shape[0], "W2's columns vs h", f"(k, h={W1.shape[0]})", W2.shape)
    check_dim(b2.shape[0] if b2.ndim == 1 else -1, W2.shape[0], "b2 vs W2's rows", f"(k={W2.shape[0]},)", b2.shape)
    return X, W1, b1, W2, b2


def fcn_tag_logits(X, W1, b1, W2, b2) -> np.ndarray:
    """The same two-layer FCN on every vector: (..., n, d) -> (..., n, k) tag scores.

    h_t = relu(W1 x_t + b1), y_t = W2 h_t + b2; W1 (h, d), b1 (h,), W2 (k, h), b2 (k,).
    """
    X, W1, b1, W2, b2 = _check_fcn(X, W1, b1, W2, b2)
    H = np.maximum(X @ W1.T + b1, 0.0)  # (..., n, h)
    return H @ W2.T + b2  # (..., n, k)


def windowed_logits(X, r: int, W1, b1, W2, b2) -> np.ndarray:
    """The FCN on windows of 2r+1 vectors: (..., n, d) -> (..., n, k); W1 is (h, (2r+1) d)."""
    return fcn_tag_logits(window_features(X, r), W1, b1, W2, b2)


def n_tagger_params(d: int, r: int, hidden: int, n_tags: int) -> int:
    """Parameters of the windowed FCN: (2r+1) d h + h + h k + k — linear in the window size."""
    return (2 * r + 1) * d * hidden + hidden + hidden * n_tags + n_tags


def token_dataset(sentences, vectors, labels, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Windowed features of every token of every sentence, stacked: ((N, (2r+1) d), (N,)).

    sentences: list of int arrays (word indices); vectors: (V, d) the word vectors (e.g. one-hot);
    labels: list of int arrays, one label per word.  Windows never cross sentence boundaries.
    """
    vectors = as_array(vectors, "vectors")
    feats = [window_features(vectors[s], r) for s in sentences]
    return np.concatenate(feats).astype(np.float32), np.concatenate(labels).astype(np.int64)
