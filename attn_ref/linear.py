"""Linear (kernel) attention: no n x n matrix, and its causal form is an RNN.

Softmax attention weighs key j for query i by exp(q^i . k^j / sqrt(d_k)) and divides by the sum
over j.  Katharopoulos et al. 2020 ("Transformers are RNNs: Fast Autoregressive Transformers with
Linear Attention", ICML 2020) replace that similarity by a dot product of **features**,
sim(q, k) = phi(q) . phi(k) with phi: R^{d_k} -> R^D positive (their section "Linearized attention"), so that

    b^i = sum_j (phi(q^i) . phi(k^j)) v^j / sum_j phi(q^i) . phi(k^j)
        = phi(q^i)^T S / phi(q^i)^T z,   S = sum_j phi(k^j) v^j^T  (D, d_v),   z = sum_j phi(k^j)  (D,)

S and z do not depend on i, so they are computed once.  In matrices (row layout),
(phi(Q) phi(K)^T) V = phi(Q) (phi(K)^T V): the right-hand side never forms the (n, n)
matrix and costs O(n D d_v) instead of O(n^2 max(D, d_v)) -- linear in n.  Their feature map is
phi(x) = elu(x) + 1 (section "Feature maps and computational cost"), :func:`elu_feature_map`, so D = d_k.

**Causal** (query i sees keys j <= i, their section "Causal masking"): S and z become prefix sums
S_i, z_i, and the output b^i = phi(q^i)^T S_i / phi(q^i)^T z_i.  Read one position at a time, that
is a recurrent network whose hidden state is the (D, d_v) matrix S_i and the vector z_i (their section
"Transformers are RNNs"):

    S_i = S_{i-1} + phi(k^i) v^i^T,   z_i = z_{i-1} + phi(k^i),   S_0 = 0, z_0 = 0

(:func:`linear_rnn_step`, :func:`causal_linear_attention_rnn`): a constant-size state, n
sequential steps, like the RNN chapter's h^t; :func:`linear_attention` with ``causal=True``
computes the same prefix sums in parallel (a cumulative sum, O(n D d_v) memory).

**Performer** (Choromanski et al. 2021, "Rethinking Attention with Performers", ICLR 2021): the
softmax kernel itself has positive random features (FAVOR+, their section on positive random features
for softmax): for w ~ N(0, Id),
E[exp(w^T x - |x|^2/2) exp(w^T y - |y|^2/2)] = exp(x^T y).  With D samples w_1..w_D,
phi(x) = exp(W x - |x|^2/2) / sqrt(D) (:func:`positive_random_features`) gives an unbiased
estimate phi(x) . phi(y) of exp(x^T y); its relative error shrinks like 1/sqrt(D), and less with
orthogonal w's (their section on orthogonal random features, :func:`random_features`).  Scaling
queries and keys by d_k^{-1/4} makes exp(x^T y) = exp(q . k / sqrt(d_k)), so
:func:`performer_attention` estimates exact softmax attention with the linear algorithm above.  (Its output is
a ratio of two unbiased estimates, so it is consistent -- exact as D -> infinity -- but not itself unbiased.)

Shapes as in :mod:`attn_ref.attention`: q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v),
batch dimensions broadcast.  A general (n_q, n_k) mask would bring back the n x n matrix; what
stays linear is ``causal=True`` and a ``key_mask`` (..., n_k), True = the key may be attended to
(padding).  A query whose normaliser phi(q^i)^T z is 0 (no key it may attend to) gets a zero
output (the :func:`attn_ref.softmax` convention).  Names in the code and the book (efficient.md): D is the
book's d_phi (the paper's m, number of random features); S and z are the book's U_i and zeta_i (the
paper's S_i and Z_i).  Checked in tests/test_linear_attention.py against a direct O(n^2) computation of the
same kernel and, for Performer, against torch's exact softmax attention.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ._checks import as_array, as_qkv, check_dim, check_min_ndim, check_ndim, check_positive_int, default_scale

FeatureMap = Callable[[np.ndarray], np.ndarray]


class LinearRNNState(NamedTuple):
    """What :func:`causal_linear_attention_rnn` returns: the outputs and the final state."""

    output: np.ndarray  # (n, d_v) b^1..b^n as rows
    S: np.ndarray  # (D, d_v) S_n = sum_j phi(k^j) v^j^T
    z: np.ndarray  # (D,) z_n = sum_j phi(k^j)


def elu_feature_map(x) -> np.ndarray:
    """phi(x) = elu(x) + 1, elementwise (Katharopoulos et al. 2020): x + 1 for x > 0, exp(x) else.

    Always > 0 (until exp underflows far below -80), so every weight phi(q).phi(k) is positive as
    softmax's are.  exp(x) is computed directly rather than as -1 + exp(x) + 1, which in float32 would
    round to 0 already at x < -17.3.  Any shape; dtype kept.
    """
    x = as_array(x, "x")
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def _features(feature_map: FeatureMap | None, x: np.ndarray, name: str) -> np.ndarray:
    fx = elu_feature_map(x) if feature_map is None else as_array(feature_map(x), f"feature_map({name})")
    if fx.shape[:-1] != x.shape[:-1]:
        raise ValueError(f"feature_map({name}): expected shape {x.shape[:-1]} + (D,), got {fx.shape}")
    return fx


def _normalise(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num (..., n, d_v) / den (..., n), a zero normaliser giving a zero output."""
    den = den[..., None]
    return num / np.where(den == 0, 1, den)


def linear_attention(q, k, v, causal: bool = False, key_mask=None,
                     feature_map: FeatureMap | None = None) -> np.ndarray:
    """phi(Q) (phi(K)^T V) normalised by phi(Q) (phi(K)^T 1) (Katharopoulos et al. 2020, "Linearized attention").

    q: (..., n_q, d_k), k: (..., n_k, d_k), v: (..., n_k, d_v), batch dims broadcast;
    feature_map: phi, applied to the last axis (d_k -> D), None = elu(x) + 1;
    key_mask: None or boolean broadcastable to (..., n_k), True = the key may be attended to;
    causal: query i sees keys j <= i only (self-attention, n_q = n_k): S_i and z_i as prefix sums
    (a cumulative sum over positions, the parallel form of :func:`causal_linear_attention_rnn`).
    Non-causal: S = phi(K)^T V (..., D, d_v), z = phi(K)^T 1 (..., D), b^i = phi(q^i)^T S / phi(q^i)^T z.
    O(n D d_v) time; no (n_q, n_k) array.  Returns the output (..., n_q, d_v).
    """
    q, k, v = as_qkv(q, k, v, same_length=causal)
    fq = _features(feature_map, q, "q")  # (..., n_q, D)
    fk = _features(feature_map, k, "k")  # (..., n_k, D)
    check_dim(fk.shape[-1], fq.shape[-1], "feature_map(k)'s D vs feature_map(q)'s", "(..., n_k, D)", fk.shape)
    if key_mask is not None:
        key_mask = np.asarray(key_mask)
        if key_mask.dtype != bool:
            raise ValueError(f"key_mask: expected a boolean array (True = may attend), got dtype {key_mask.dtype}")
        try:
            np.broadcast_shapes(key_mask.shape, fk.shape[:-1])
        except ValueError:
            raise ValueError(f"key_mask: expected a shape that broadcasts to (..., {k.shape[-2]}), "
                             f"got {key_mask.shape}") from None
        fk = fk * key_mask[..., None]  # a masked key contributes nothing to S or z
    if not causal:
        S = np.swapaxes(fk, -1, -2) @ v  # (..., D, n_k) x (..., n_k, d_v) -> (..., D, d_v)
        z = fk.sum(axis=-2)  # (..., D)
        num = fq @ S  # (..., n_q, D) x (..., D, d_v) -> (..., n_q, d_v)
        den = np.einsum("...id,...d->...i", fq, z)  # (..., n_q)
        return _normalise(num, den)
    S = np.cumsum(fk[..., :, :, None] * v[..., :, None, :], axis=-3)  # (..., n, D, d_v): S_1..S_n
    z = np.cumsum(fk, axis=-2)  # (..., n, D): z_1..z_n
    num = np.einsum("...id,...idv->...iv", fq, S)  # phi(q^i)^T S_i
    den = np.einsum("...id,...id->...i", fq, z)  # phi(q^i)^T z_i
    return _normalise(num, den)


def linear_rnn_step(S, z, q_i, k_i, v_i, feature_map: FeatureMap | None = None):
    """One step of causal linear attention as an RNN (Katharopoulos et al. 2020, "Transformers are RNNs").

    S: (D, d_v), z: (D,) the state after i - 1 positions (zeros before the first);
    q_i, k_i: (d_k,), v_i: (d_v,) position i's query, key and value.
    S_i = S_{i-1} + phi(k^i) v^i^T;  z_i = z_{i-1} + phi(k^i);  b^i = phi(q^i)^T S_i / phi(q^i)^T z_i.
    Returns ``(b_i (d_v,), S_i, z_i)``; the inputs are not modified.
    """
    S, z = as_array(S, "S"), as_array(z, "z")
    check_ndim(S, "S", 2, "(D, d_v)")
    check_ndim(z, "z", 1, f"(D={S.shape[0]},)")
    check_dim(z.shape[0], S.shape[0], "z's D vs S's", f"(D={S.shape[0]},)", z.shape)
    q_i, k_i, v_i = as_array(q_i, "q_i"), as_array(k_i, "k_i"), as_array(v_i, "v_i")
    check_ndim(q_i, "q_i", 1, "(d_k,)")
    check_ndim(k_i, "k_i", 1, "(d_k,)")
    check_dim(k_i.shape[0], q_i.shape[0], "k_i's d_k vs q_i's", "(d_k,)", k_i.shape)
    check_ndim(v_i, "v_i", 1, f"(d_v={S.shape[1]},)")
    check_dim(v_i.shape[0], S.shape[1], "v_i's d_v vs S's", f"(d_v={S.shape[1]},)", v_i.shape)
    fq, fk = _features(feature_map, q_i, "q_i"), _features(feature_map, k_i, "k_i")  # (D,)
    check_dim(fk.shape[0], S.shape[0], "feature_map(k_i)'s D vs S's", f"(D={S.shape[0]},)", fk.shape)
    S = S + np.outer(fk, v_i)  # (D, d_v): add position i's key-value pair
    z = z + fk  # (D,)
    den = float(fq @ z)
    b = (fq @ S) / (den if den != 0 else 1)  # (d_v,)
    return b, S, z


def causal_linear_attention_rnn(q, k, v, feature_map: FeatureMap | None = None) -> LinearRNNState:
    """Causal linear attention read one position at a time: an RNN with state (S, z) ("Transformers are RNNs").

    q: (n, d_k), k: (n, d_k), v: (n, d_v), one sequence (no batch).  S_0 = 0 (D, d_v), z_0 = 0 (D,),
    then :func:`linear_rnn_step` for i = 1..n.  The state has the same size at every step whatever
    n is (the memory of softmax attention's keys and values grows with n).  Returns
    ``LinearRNNState(output (n, d_v), S_n (D, d_v), z_n (D,))``; equals
    ``linear_attention(q, k, v, causal=True)``.
    """
    q, k, v = as_qkv(q, k, v, same_length=True)
    check_ndim(q, "q", 2, "(n, d_k)")
    check_ndim(k, "k", 2, "(n, d_k)")
    check_ndim(v, "v", 2, "(n, d_v)")
    n, d_v = v.shape
    D = _features(feature_map, k[:1], "k").shape[-1]
    dtype = np.result_type(q, k, v)
    S, z = np.zeros((D, d_v), dtype=dtype), np.zeros(D, dtype=dtype)
    out = np.zeros((n, d_v), dtype=dtype)
    for i in range(n):
        out[i], S, z = linear_rnn_step(S, z, q[i], k[i], v[i], feature_map)
    return LinearRNNState(out, S, z)


def random_features(n_features: int, d_k: int, rng=None, orthogonal: bool = False, dtype=np.float64) -> np.ndarray:
    """W (D, d_k): D = ``n_features`` random vectors w_r ~ N(0, Id_{d_k}), the rows of W.

    rng: a ``np.random.Generator``, a seed (int), or None (seed 0: reproducible by default).
    orthogonal: Performer's orthogonal random features (Choromanski et al. 2021): rows drawn in blocks
    of d_k exactly orthogonal directions (QR of a Gaussian matrix), each row rescaled to the length of an
    independent N(0, Id) vector, so every row is still N(0, Id) (the estimate stays unbiased) while the
    directions of a block cannot cluster (lower variance).
    """
    check_positive_int(n_features, "n_features")
    check_positive_int(d_k, "d_k")
    rng = np.random.default_rng(0 if rng is None else rng)
    if not orthogonal:
        return rng.standard_normal((n_features, d_k)).astype(dtype)
    blocks = []
    for _ in range(-(-n_features // d_k)):  # ceil(D / d_k) blocks of d_k orthogonal rows
        G = rng.standard_normal((d_k, d_k))
        Qm, R = np.linalg.qr(G)
        Qm = Qm * np.sign(np.diag(R))  # a uniformly random rotation (Haar), not biased by QR's signs
        blocks.append(Qm.T)  # rows orthonormal
    directions = np.concatenate(blocks)[:n_features]  # (D, d_k), unit rows
    lengths = np.linalg.norm(rng.standard_normal((n_features, d_k)), axis=1)  # chi(d_k), as |N(0, Id)|
    return (directions * lengths[:, None]).astype(dtype)


def positive_random_features(x, W) -> np.ndarray:
    """phi(x) = exp(W x - |x|^2 / 2) / sqrt(D) (Choromanski et al. 2021, positive random features), on the last axis.

    x: (..., d_k); W: (D, d_k) from :func:`random_features`.  Every entry is positive, and
    phi(x) . phi(y) is an unbiased estimate of the softmax kernel exp(x^T y) (averaged over
    w ~ N(0, Id), exp(w^T x - |x|^2/2) exp(w^T y - |y|^2/2) = exp(x^T y)).  Returns (..., D).
    """
    x, W = as_array(x, "x"), as_array(W, "W")
    check_min_ndim(x, "x", 1, "(..., d_k)")
    check_ndim(W, "W", 2, "(D, d_k)")
    check_dim(W.shape[1], x.shape[-1], "W's columns vs x's d_k", f"(D, d_k={x.shape[-1]})", W.shape)
    W = W.astype(x.dtype, copy=False)
    half_sq_norm = 0.5 * np.sum(x * x, axis=-1, keepdims=True)  # (..., 1)
    wx = (x.reshape(-1, x.shape[-1]) @ W.T).reshape(*x.shape[:-1], W.shape[0])  # (..., D): one 2-D product
    return np.exp(wx - half_sq_norm) / np.sqrt(W.shape[0]).astype(x.dtype)


def performer_attention(q, k, v, n_features: int = 256, rng=None, orthogonal: bool = True, causal: bool = False,
                        key_mask=None, scale: float | None = None) -> np.ndarray:
    """Softmax attention estimated with positive random features (Performer's FAVOR+, Choromanski et al. 2021).

    q: (..., n_q, d_k), k: (..., n_k, d_k), v: (..., n_k, d_v); scale: None = 1/sqrt(d_k).
    The scale is split between the two sides, q and k each multiplied by sqrt(scale) (d_k^{-1/4}),
    so exp(x^T y) = exp(scale * q . k); then W = :func:`random_features` (n_features, d_k, rng,
    orthogonal) and :func:`linear_attention` with phi = :func:`positive_random_features`.
    O(n D (d_k + d_v)).  ``causal``, ``key_mask`` as in :func:`linear_attention`.
    As D grows the output tends to ``scaled_dot_product_attention(q, k, v)[0]``.
    Returns the output (..., n_q, d_v).
    """
    q, k, v = as_qkv(q, k, v, same_length=causal)
    root = float(np.sqrt(default_scale(q.shape[-1], scale)))
    W = random_features(n_features, q.shape[-1], rng=rng, orthogonal=orthogonal)
    return linear_attention(q * root, k * root, v, causal=causal, key_mask=key_mask,
                            feature_map=lambda x: positive_random_features(x, W))
