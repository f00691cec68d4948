"""Word vectors: one-hot encoding (独热编码) versus a learned word embedding (词嵌入).

* :func:`one_hot` — every word its own axis: all pairs orthogonal, cosine 0.
* :func:`cosine_similarity_matrix` — cos(x_i, x_j) = x_i . x_j / (|x_i| |x_j|).
* :func:`cooccurrence_matrix`, :func:`ppmi`, :func:`svd_embedding` — a count-based embedding:
  positive pointwise mutual information of word/context co-occurrences, factorised by a
  truncated SVD (Levy & Goldberg 2014 show that skip-gram with negative sampling, Mikolov et
  al. 2013, implicitly factorises a shifted PMI matrix of the same kind).
* :func:`pca_2d` — project vectors to two dimensions for a plot.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_ndim


def one_hot(indices, vocab_size: int) -> np.ndarray:
    """(n,) integer indices in [0, vocab_size) -> (n, vocab_size) float rows with a single 1."""
    idx = np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise ValueError(f"indices: expected integers, got dtype {idx.dtype}")
    check_ndim(idx, "indices", 1, "(n,)")
    if idx.size and (idx.min() < 0 or idx.max() >= vocab_size):
        raise ValueError(f"indices: expected values in [0, {vocab_size}), got {idx.min()}..{idx.max()}")
    out = np.zeros((idx.shape[0], vocab_size))
    out[np.arange(idx.shape[0]), idx] = 1.0
    return out


def cosine_similarity_matrix(X, eps: float = 0.0) -> np.ndarray:
    """(n, d) row vectors -> (n, n) with entry (i, j) = x_i . x_j / (|x_i| |x_j|).

    A zero row has no direction: its similarities are 0 (also with itself).
    """
    X = as_array(X, "X")
    check_ndim(X, "X", 2, "(n, d)")
    norms = np.linalg.norm(X, axis=1, keepdims=True)  # (n, 1)
    U = X / np.where(norms > eps, norms, np.inf)  # unit rows; zero rows stay zero
    return U @ U.T  # (n, n)


def cooccurrence_matrix(sentences, vocab: dict[str, int], window: int = 2) -> np.ndarray:
    """(V, V) counts C[w, c]: how often context word c is within ``window`` positions of w."""
    C = np.zeros((len(vocab), len(vocab)))
    for s in sentences:
        ids = [vocab[w] for w in s]
        for i, w in enumerate(ids):
            for j in range(max(0, i - window), min(len(ids), i + window + 1)):
                if j != i:
                    C[w, ids[j]] += 1
    return C


def ppmi(C) -> np.ndarray:
    """Positive pointwise mutual information max(0, log P(w, c) / (P(w) P(c))) of a count matrix (V, V)."""
    C = as_array(C, "C")
    check_ndim(C, "C", 2, "(V, V)")
    total = C.sum()
    pw = C.sum(axis=1, keepdims=True) / total  # (V, 1)
    pc = C.sum(axis=0, keepdims=True) / total  # (1, V)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log((C / total) / (pw * pc))
    return np.where(np.isfinite(pmi) & (pmi > 0), pmi, 0.0)


def svd_embedding(M, dim: int) -> np.ndarray:
    """Rows of U_k sqrt(S_k): a ``dim``-dimensional embedding (V, dim) from a (V, V) association matrix.

    Signs are fixed (largest entry of each column positive) so the result is deterministic.
    """
    M = as_array(M, "M")
    check_ndim(M, "M", 2, "(V, V)")
    U, S, _ = np.linalg.svd(M)
    E = U[:, :dim] * np.sqrt(S[:dim])  # (V, dim)
    signs = np.sign(E[np.abs(E).argmax(axis=0), np.arange(E.shape[1])])
    return E * np.where(signs == 0, 1, signs)


def learn_embedding(sentences, vocab: dict[str, int], dim: int = 8, window: int = 2) -> np.ndarray:
    """Co-occurrences -> PPMI -> truncated SVD: (V, dim) word vectors, one row per vocabulary entry."""
    return svd_embedding(ppmi(cooccurrence_matrix(sentences, vocab, window)), dim)


def pca_2d(X) -> np.ndarray:
    """(n, d) -> (n, 2): the coordinates of the centred rows on their two principal axes."""
    X = as_array(X, "X")
    check_ndim(X, "X", 2, "(n, d)")
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    P = Xc @ Vt[:2].T  # (n, 2)
    signs = np.sign(P[np.abs(P).argmax(axis=0), [0, 1]])
    return P * np.where(signs == 0, 1, signs)
