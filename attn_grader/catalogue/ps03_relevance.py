"""Catalogue of ps03_relevance: relevance scores (dot-product and additive) and a stable softmax.

Practises the chapter "Relevance: dot-product and additive" (Dot-product, Additive): the dot-product
score q . k for every query-key pair, the additive score w^T tanh(W_q a^i + W_k a^j) of Bahdanau et al.
(2015), a numerically stable softmax, and the weights under a causal and a padding mask.
Row layout: queries and keys are the rows of Q (n_q, d) and K (n_k, d).
References: :func:`attn_ref.scores.dot_product_score`, :func:`attn_ref.scores.additive_score`,
:func:`attn_ref.softmax.softmax` (also under the masks of task 4).
"""

from __future__ import annotations

import numpy as np

from attn_ref.scores import additive_score, dot_product_score
from attn_ref.softmax import softmax

from ..checking.core import Mistake, Task
from . import _stability
from ._shared import edited

#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).
NORMALISING = ("softmax", "masked_weights")

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
    Mistake("diagonal_only", "only qⁱ · kⁱ (each query with the key of the same index) was computed; "
            "every query is compared with every key",
            '''def dot_product_scores(Q, K):
    return np.sum(Q * K, axis=1)
'''),
    Mistake("scaled_by_sqrt_d", "the scores were divided by sqrt(d); this task asks for the plain dot "
            "product qⁱ · kʲ (the Transformer's scaling comes with the matrix form, problem set 5)",
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
    Mistake("tanh_forgotten", "tanh was left out: the score is wᵀ tanh(W_q aⁱ + W_k aʲ), and without the "
            "activation it is just a sum of a query term and a key term",
            '''def additive_scores(Q, K, W_q, W_k, w):
    h = (Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :]
    return h @ w
'''),
    Mistake("tanh_after_w", "tanh was applied after the last weights w; it acts on W_q aⁱ + W_k aʲ, "
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
    Mistake("w_ignored", "the last weights w were left out: tanh(W_q aⁱ + W_k aʲ) was summed over its "
            "components (as if w were all ones); the score is wᵀ tanh(W_q aⁱ + W_k aʲ)",
            '''def additive_scores(Q, K, W_q, W_k, w):
    h = np.tanh((Q @ W_q.T)[:, None, :] + (K @ W_k.T)[None, :, :])
    return h.sum(-1)
'''),
    Mistake("diagonal_pairs_only", "only the pairs of the same index (row i of Q with row i of K) were scored (the "
            "projections added row by row, without broadcasting); every query is scored against every key: "
            "W_q aⁱ + W_k aʲ for all i and j, shape (n_q, n_k)",
            '''def additive_scores(Q, K, W_q, W_k, w):
    return np.tanh(Q @ W_q.T + K @ W_k.T) @ w
'''),
    Mistake("multiplied_not_added", "the two projections were multiplied; the additive score adds them: "
            "tanh(W_q aⁱ + W_k aʲ)",
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
            "(exp(710) is already inf, and exp(709) + exp(709) + exp(708) overflows too); subtracting the max "
            "changes nothing mathematically",
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
    Mistake("shifted_by_global_max", "the maximum of the whole array was subtracted instead of each slice's: a "
            "slice whose scores all lie far below the global maximum (near -1000 while another is near +1000) "
            "underflows to 0 / 0 = NaN; subtract each slice's own maximum (axis and keepdims in the max)",
            '''def softmax(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / np.sum(e, axis=axis, keepdims=True)
'''),
    Mistake("keepdims_forgotten", "the maximum and the sum were taken without keepdims=True: the reduced "
            "array then lines up with the wrong axis (or does not broadcast); keep the reduced axis, "
            "np.max(x, axis=axis, keepdims=True)",
            '''def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis))
    return e / np.sum(e, axis=axis)
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


# --- task 4: causal and padding masks -----------------------------------------------------------

def _allowed(n, length, causal):
    """What masked_weights allows, in code's layout (row = query i, column = key j), 0-based."""
    i = np.arange(n)
    allowed = (i[None, :] < length) & (i[:, None] < length)  # keys and queries inside the text
    if causal:
        allowed &= i[None, :] <= i[:, None]  # key j at or before query i
    return allowed


def _ref_masked(scores, length, causal):
    scores = np.asarray(scores, dtype=float)
    return softmax(np.where(_allowed(scores.shape[-1], length, causal), scores, -np.inf), axis=-1)


def _cases_masked(rng):
    return [
        (rng.standard_normal((5, 5)), 3, True),  # padding and causal: the last two rows attend to nothing
        (rng.standard_normal((4, 4)), 4, False),  # no padding, no mask: the plain softmax of each row
        (rng.standard_normal((6, 6)), 6, True),  # causal only
        (rng.standard_normal((5, 5)), 2, False),  # padding only
        (rng.standard_normal((1, 1)), 1, True),
        (_stability.scores(rng, (5, 5), wide=False), 4, True),  # near +1000: exp overflows, a min-shift does not
        (_stability.scores(rng, (4, 4), wide=True), 4, False),  # +-1000 in each row: a min-shift overflows
        (_stability.signed_rows(rng, (6, 6)), 5, True),  # rows all near -1000 or +1000, masked entries beside
        (_stability.signed_rows(rng, (5, 5)), 3, False),
        # blocked scores near +1000 beside allowed ones near 0: a softmax before the mask loses the allowed weights
        (_stability.blocked_high(rng, _allowed(5, 5, True)), 5, True),
        (_stability.blocked_high(rng, _allowed(4, 3, False)), 3, False),
    ]


#: The right answer with its own stable softmax; each mistake below edits it.
_MASKED = '''def masked_weights(scores, length, causal):
    n = scores.shape[-1]
    i = np.arange(n)
    allowed = (i[None, :] < length) & (i[:, None] < length)
    if causal:
        allowed &= i[None, :] <= i[:, None]
    s = np.where(allowed, scores, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    e = np.exp(s - m)
    total = np.sum(e, axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)
'''

MASKED_MISTAKES = (
    Mistake("causal_mask_transposed", "the causal mask was transposed: each query attended to the keys after it (the "
            "future) instead of those up to its own position; check which triangle of scores[i, j] holds a query's "
            "past",
            edited(_MASKED, ("i[None, :] <= i[:, None]", "i[None, :] >= i[:, None]"))),
    Mistake("self_excluded", "the causal mask also blocked the query's own key; a position may attend to itself as "
            "well as to the earlier ones",
            edited(_MASKED, ("i[None, :] <= i[:, None]", "i[None, :] < i[:, None]"))),
    Mistake("padded_queries_kept", "only the padded keys were masked; a padded query (a row at or past length) still "
            "got weights, but it attends to nothing: its row is all zeros",
            edited(_MASKED, ("(i[None, :] < length) & (i[:, None] < length)",
                             "(i[None, :] < length) & (i[:, None] >= 0)"))),
    Mistake("padded_keys_kept", "only the padded queries were blocked; the padded keys (the columns at or past length) "
            "still got weight from the real queries: mask them too",
            edited(_MASKED, ("(i[None, :] < length) & (i[:, None] < length)",
                             "(i[:, None] < length) & (i[None, :] >= 0)"))),
    Mistake("masked_with_zero", "the masked scores were set to 0 instead of -inf: a score of 0 still gets "
            "weight exp(0) after the softmax; fill them with -inf so that they get weight 0",
            edited(_MASKED, ("np.where(allowed, scores, -np.inf)", "np.where(allowed, scores, 0.0)"))),
    Mistake("masked_by_multiplying", "the scores were masked by multiplying with the mask (softmax(scores · "
            "mask) · mask, renormalised over the allowed entries with a small epsilon, as AllenNLP's "
            "masked_softmax): a masked entry then counts as a score of 0, not −∞, so when a query's allowed "
            "scores are all far below 0 the masked 0 takes nearly all the weight; fill the masked scores with "
            "−∞ before the softmax",
            '''def masked_weights(scores, length, causal):
    n = scores.shape[-1]
    i = np.arange(n)
    allowed = (i[None, :] < length) & (i[:, None] < length)
    if causal:
        allowed &= i[None, :] <= i[:, None]
    s = scores * allowed
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True) * allowed
    return p / (p.sum(axis=-1, keepdims=True) + 1e-13)
'''),
    Mistake("filled_with_large_negative", _stability.filled_with_large_negative(
        "-1e9 or np.finfo(float).min, as masked_fill(mask, -1e9) does", "a padded query's row, whose keys are all "
        "masked,"),
            edited(_MASKED, ("np.where(allowed, scores, -np.inf)", "np.where(allowed, scores, -1e9)"))),
    Mistake("nan_on_masked_row", _stability.nan_on_masked_row(
        "a padded query's row, whose scores are all masked (-inf),"),
            edited(_MASKED, ("    m = np.where(np.isneginf(m), 0.0, m)\n", ""),
                   ("np.where(total == 0, 1.0, total)", "total"))),
    Mistake("not_stabilised", _stability.not_stabilised(),
            edited(_MASKED, ("e = np.exp(s - m)", "e = np.exp(s)"))),
    Mistake("shifted_by_min", _stability.shifted_by_min("each row's (allowed)"),
            edited(_MASKED, ("m = np.max(s, axis=-1, keepdims=True)",
                             "m = np.min(np.where(allowed, scores, np.inf), axis=-1, keepdims=True)"),
                   ("np.isneginf(m)", "np.isposinf(m)"))),
    Mistake("renormalised_after_softmax", _stability.renormalised_after_softmax(),
            edited(_MASKED, ("    s = np.where(allowed, scores, -np.inf)\n", "    s = scores\n"),
                   ("return e / np.where(total == 0, 1.0, total)",
                    "w = e / total * allowed\n    t = w.sum(axis=-1, keepdims=True)\n"
                    "    return np.divide(w, t, out=np.zeros_like(w), where=t > 0)"))),
)


TASKS = [
    Task(ASSIGNMENT, "dot_product_scores", _ref_dot, _cases_dot, DOT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "additive_scores", _ref_additive, _cases_additive, ADDITIVE_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "softmax", _ref_softmax, _cases_softmax, SOFTMAX_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "masked_weights", _ref_masked, _cases_masked, MASKED_MISTAKES, setup=SETUP),
]
