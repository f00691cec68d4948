"""Catalogue of ps03_relevance: relevance scores (dot-product and additive) and a stable softmax.

Practises the chapter "Relevance: dot-product and additive" (Dot-product, Additive): the dot-product
score q . k for every query-key pair, the additive score w^T tanh(W_q q + W_k k) of Bahdanau et al.
(2015), a numerically stable softmax, and the Transformer's weights softmax(Q K^T / sqrt(d)).
Row layout: queries and keys are the rows of Q (n_q, d) and K (n_k, d).
References: :func:`attn_ref.scores.dot_product_score`, :func:`attn_ref.scores.additive_score`,
:func:`attn_ref.softmax.softmax`, :func:`attn_ref.attention.scaled_dot_product_attention`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import scaled_dot_product_attention
from attn_ref.scores import additive_score, dot_product_score
from attn_ref.softmax import softmax

from ..checking.core import Mistake, Task
from . import _stability

#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).
NORMALISING = ("softmax", "attention_weights")

ASSIGNMENT = "ps03_relevance"
#: The notebook's setup cell.
SETUP = "import numpy as np"


# --- task 1: dot-product scores -----------------------------------------------------------------

def _ref_dot(Q, K):
    return dot_product_score(np.asarray(Q, dtype=float), np.asarray(K, dtype=float))


def _cases_dot(rng):
    # The first case is square (n_q = n_k) so that a transposed or diagonal-only answer still runs and is named.
    cases = [(rng.standard_normal((4, 3)), rng.standard_normal((4, 3)))]
    for n_q, n_k, d in [(2, 5, 4), (1, 1, 1), (6, 3, 8), (3, 1, 2)]:
        cases.append((rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d))))
    return cases


DOT_MISTAKES = (
    Mistake("transposed", "the result is transposed (K Qᵀ): row i must hold query i's scores, "
            "scores = Q Kᵀ of shape (n_q, n_k)",
            '''def dot_product_scores(Q, K):
    return K @ Q.T
'''),
    Mistake("diagonal_only", "only q_i . k_i (each query with the key of the same index) was computed; "
            "every query is compared with every key",
            '''def dot_product_scores(Q, K):
    return np.sum(Q * K, axis=1)
'''),
    Mistake("scaled_by_sqrt_d", "the scores were divided by sqrt(d); this task asks for the plain dot "
            "product q_i . k_j (the scaling is task 4)",
            '''def dot_product_scores(Q, K):
    return Q @ K.T / np.sqrt(Q.shape[1])
'''),
    Mistake("cosine_similarity", "the vectors were normalised to length 1 first (cosine similarity); the "
            "dot product uses the vectors as they are",
            '''def dot_product_scores(Q, K):
    Qn = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    Kn = K / np.linalg.norm(K, axis=1, keepdims=True)
    return Qn @ Kn.T
'''),
)


# --- task 2: additive scores --------------------------------------------------------------------

def _ref_additive(Q, K, W_q, W_k, w):
    return additive_score(np.atleast_2d(Q), np.atleast_2d(K), W_q, W_k, w)


def _cases_additive(rng):
    cases = []
    # First case: d_q = d_k so that swapped weights still run and are named; n_q != n_k.
    for n_q, n_k, d_q, d_k, d_h in [(3, 4, 3, 3, 5), (2, 5, 4, 3, 6), (1, 1, 2, 2, 1), (4, 2, 1, 3, 3)]:
        cases.append((rng.standard_normal((n_q, d_q)), rng.standard_normal((n_k, d_k)),
                      rng.standard_normal((d_h, d_q)), rng.standard_normal((d_h, d_k)), rng.standard_normal(d_h)))
    return cases


ADDITIVE_MISTAKES = (
    Mistake("tanh_forgotten", "tanh was left out: the score is w . tanh(W_q q_i + W_k k_j), and without the "
            "activation it is just a sum of a query term and a key term",
            '''def additive_scores(Q, K, W_q, W_k, w):
    h = (Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :]
    return h @ w
'''),
    Mistake("tanh_after_w", "tanh was applied after the last weights w; it acts on W_q q_i + W_k k_j, "
            "before w: w . tanh(...)",
            '''def additive_scores(Q, K, W_q, W_k, w):
    h = (Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :]
    return np.tanh(h @ w)
'''),
    Mistake("wq_wk_swapped", "W_q and W_k were swapped: the query goes through W_q and the key through W_k",
            '''def additive_scores(Q, K, W_q, W_k, w):
    h = np.tanh((Q @ W_k.T)[:, None, :] + (K @ W_q.T)[None, :, :])
    return h @ w
'''),
    Mistake("multiplied_not_added", "the two projections were multiplied; the additive score adds them: "
            "tanh(W_q q_i + W_k k_j)",
            '''def additive_scores(Q, K, W_q, W_k, w):
    h = np.tanh((Q @ W_q.T)[:, None, :] * (K @ W_k.T)[None, :, :])
    return h @ w
'''),
)


# --- task 3: a stable softmax -------------------------------------------------------------------

def _ref_softmax(x, axis=-1):
    return softmax(np.asarray(x), axis=axis)


def _cases_softmax(rng):
    masked = rng.standard_normal((3, 4))
    masked[1, :] = -np.inf  # a row that may attend to nothing: zeros, not NaN
    masked[2, 0] = -np.inf
    return [
        (rng.standard_normal((3, 5)), 0),  # axis 0 first: an answer that ignores axis is named here
        (rng.standard_normal((4, 6)), -1),
        (np.array([[709.0, 709.0, 708.0], [0.5, -0.5, 0.0]]), -1),  # exp(709) ~ 8e307: the sum overflows
        (rng.standard_normal((2, 3, 4)), 1),
        (np.array([[2.0]]), -1),  # n = 1: the one weight is 1
        (np.array([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4]]), -1),  # huge scores
        (masked, -1),
        (_stability.scores(rng, (3, 5), wide=False), -1),  # near +1000: exp overflows, a min-shift does not
        (_stability.scores(rng, (3, 4), wide=True).T, 0),  # +-1000 down each column: a min-shift overflows
        (_low_rows_masked(rng, (4, 5)), -1),  # each row all near -1000 or all near +1000, with -inf beside
    ]


def _low_rows_masked(rng, shape):
    """Scores whose rows' finite entries are all near -1000 or all near +1000, each row with a -inf entry."""
    s = _stability.signed_rows(rng, shape)
    return np.where(_stability.mask_beside(rng, shape), s, -np.inf)


SOFTMAX_MISTAKES = (
    Mistake("axis_ignored", "the softmax always ran over the last axis; use the axis argument",
            '''def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
'''),
    Mistake("not_stabilised", "the maximum was not subtracted before exp, so exp overflows for large scores "
            "(exp(709) + exp(709) is already inf); subtracting the max changes nothing mathematically",
            '''def softmax(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)
'''),
    Mistake("sum_over_everything", "exp was divided by the sum over the whole array; each slice along axis "
            "must sum to 1 on its own (keep axis and keepdims in the sum)",
            '''def softmax(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)
'''),
    Mistake("divided_by_max", "exp was divided by its maximum instead of its sum, so the weights do not "
            "add up to 1",
            '''def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.max(e, axis=axis, keepdims=True)
'''),
    Mistake("shifted_by_min", _stability.shifted_by_min("each slice's"),
            '''def softmax(x, axis=-1):
    e = np.exp(x - np.min(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
'''),
    Mistake("nan_on_masked_row", _stability.nan_on_masked_row(
        "a slice whose entries are all -inf (a query that may attend to nothing)", "slice"),
            '''def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
'''),
)


# --- task 4: the Transformer's weights ----------------------------------------------------------

def _ref_weights(Q, K):
    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
    return scaled_dot_product_attention(Q, K, np.zeros((K.shape[0], 1)))[1]


def _cases_weights(rng):
    cases = [(rng.standard_normal((4, 4)), rng.standard_normal((4, 4)))]  # square, d = 4: every mistake runs
    for n_q, n_k, d in [(2, 5, 9), (3, 3, 16), (1, 4, 2), (5, 2, 3)]:
        cases.append((rng.standard_normal((n_q, d)), rng.standard_normal((n_k, d))))
    cases.append((100.0 * rng.standard_normal((3, 4)), 100.0 * rng.standard_normal((4, 4))))  # scores ~ 1e4
    cases.append(_stability.query_keys(rng, 3, 5, 4, wide=False))  # scores near +1000, a few units apart
    cases.append(_stability.query_keys(rng, 4, 3, 4, wide=True))  # scores near +1000 and -1000 in each row
    cases.append(_stability.query_keys(rng, 4, 5, 4, wide=False, rows_signed=True))  # rows all near -1000 or +1000
    return cases


WEIGHTS_MISTAKES = (
    Mistake("missing_scale", "the scores were not divided by sqrt(d): weights = softmax(Q Kᵀ / sqrt(d))",
            '''def attention_weights(Q, K):
    s = Q @ K.T
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Mistake("scaled_by_d", "the scores were divided by d instead of sqrt(d) (or by sqrt(d) twice)",
            '''def attention_weights(Q, K):
    s = Q @ K.T / Q.shape[-1]
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Mistake("softmax_wrong_axis", "the softmax ran down each column (over the queries); each query's row of "
            "weights must sum to 1",
            '''def attention_weights(Q, K):
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
'''),
    Mistake("transposed", "the weights are transposed (keys as rows); row i must hold query i's weights, "
            "shape (n_q, n_k)",
            '''def attention_weights(Q, K):
    s = K @ Q.T / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Mistake("not_stabilised", _stability.not_stabilised(),
            '''def attention_weights(Q, K):
    e = np.exp(Q @ K.T / np.sqrt(Q.shape[-1]))
    return e / e.sum(axis=-1, keepdims=True)
'''),
    Mistake("shifted_by_min", _stability.shifted_by_min(),
            '''def attention_weights(Q, K):
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.min(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''),
)


TASKS = [
    Task(ASSIGNMENT, "dot_product_scores", _ref_dot, _cases_dot, DOT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "additive_scores", _ref_additive, _cases_additive, ADDITIVE_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "softmax", _ref_softmax, _cases_softmax, SOFTMAX_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "attention_weights", _ref_weights, _cases_weights, WEIGHTS_MISTAKES, setup=SETUP),
]
