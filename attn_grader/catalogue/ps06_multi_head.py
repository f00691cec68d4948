"""Catalogue of ps06_multi_head: split the heads, merge them, and the whole multi-head layer.

Practises the chapter "Multi-head self-attention" (多头自注意力), in the book's notation: H heads
(``n_heads``) of width d_k = d_model / H; head ℓ = 1..H (index ℓ - 1 in code) uses the rows
(ℓ-1) d_k .. ℓ d_k - 1 of W^q, W^k, W^v (its q^{i,ℓ}, k^{j,ℓ}, v^{j,ℓ} are those columns of Q, K, V),
computes softmax(q k^T / sqrt(d_k)) v, and the heads' outputs b^{i,ℓ} are concatenated in head
order and multiplied by W^O; task 4 tells what a head does from its weights (previous token, same word,
uniform: the ideal map nearest in summed absolute difference).  Row layout: X (n, d_model), row i - 1 is a^i;
weights have
nn.Linear's shape (d_out, d_in) and no biases.
References: :func:`attn_ref.multihead.split_heads`, :func:`~attn_ref.multihead.merge_heads`,
:func:`~attn_ref.multihead.multi_head_attention`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.multihead import merge_heads, multi_head_attention, split_heads

from ..checking.core import Mistake, Task
from . import _stability
from ._shared import GIVEN_SOFTMAX, edited

ASSIGNMENT = "ps06_multi_head"
#: The notebook's setup cell.
SETUP = "import numpy as np\n" + GIVEN_SOFTMAX
#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).
NORMALISING = ("multi_head_attention",)


# --- task 1: split_heads --------------------------------------------------------------------------

def _ref_split(X, h):
    return split_heads(np.asarray(X, dtype=float), h)


def _cases_split(rng):
    return [
        (rng.standard_normal((4, 6)), 2),   # first: a general case where every mistake differs
        (rng.standard_normal((5, 12)), 3),
        (rng.standard_normal((1, 8)), 4),   # n = 1
        (rng.standard_normal((3, 4)), 4),   # d_h = 1
        (rng.standard_normal((6, 5)), 1),   # one head: the whole X
    ]


SPLIT_MISTAKES = (
    Mistake("reshape_without_transpose", "X was reshaped straight to (H, n, d_k): that cuts the *rows* "
            "(tokens) into groups, so a head mixes the features of several tokens; reshape to (n, H, d_k) "
            "first, then move the head axis to the front",
            '''def split_heads(X, h):
    n, d = X.shape
    return X.reshape(h, n, d // h)
'''),
    Mistake("interleaved_features", "head ℓ got every H-th feature (columns ℓ, ℓ + H, ℓ + 2H, ... counted "
            "from 1); head ℓ "
            "takes the d_k consecutive columns (ℓ - 1) d_k + 1 .. ℓ d_k",
            '''def split_heads(X, h):
    n, d = X.shape
    return X.reshape(n, d // h, h).transpose(2, 0, 1)
'''),
    Mistake("heads_last", "the heads were returned with shape (n, H, d_k); the head axis comes first: (H, n, d_k)",
            '''def split_heads(X, h):
    n, d = X.shape
    return X.reshape(n, h, d // h)
'''),
    Mistake("rows_and_columns_swapped", "each head was returned transposed, (H, d_k, n); head ℓ is an (n, d_k) "
            "matrix whose row i - 1 is q^(i,ℓ)",
            '''def split_heads(X, h):
    n, d = X.shape
    return X.reshape(n, h, d // h).transpose(1, 2, 0)
'''),
)


# --- task 2: merge_heads --------------------------------------------------------------------------

def _ref_merge(H):
    return merge_heads(np.asarray(H, dtype=float))


def _cases_merge(rng):
    return [
        (rng.standard_normal((2, 4, 3)),),   # h = 2, n = 4, d_h = 3
        (rng.standard_normal((3, 5, 2)),),
        (rng.standard_normal((4, 1, 2)),),   # n = 1
        (rng.standard_normal((1, 3, 4)),),   # one head
        (rng.standard_normal((6, 2, 1)),),   # d_h = 1
    ]


MERGE_MISTAKES = (
    Mistake("reshape_without_transpose", "the heads were reshaped straight to (n, H*d_k): a row then holds pieces of "
            "several tokens; move the head axis behind the token axis (n, H, d_k) first, then reshape",
            '''def merge_heads(H):
    h, n, d_h = H.shape
    return H.reshape(n, h * d_h)
'''),
    Mistake("heads_reversed", "the heads were concatenated in reverse order; head 1's columns come first",
            '''def merge_heads(H):
    h, n, d_h = H.shape
    return H[::-1].transpose(1, 0, 2).reshape(n, h * d_h)
'''),
    Mistake("interleaved_features", "the heads' features were interleaved (one column of each head in turn); the "
            "concatenation puts head 1's d_k columns, then head 2's, ...",
            '''def merge_heads(H):
    h, n, d_h = H.shape
    return H.transpose(1, 2, 0).reshape(n, h * d_h)
'''),
    Mistake("heads_averaged", "the heads were averaged; multi-head attention concatenates them into "
            "(n, H * d_k)",
            '''def merge_heads(H):
    return H.mean(axis=0)
'''),
)


# --- task 3: the whole layer --------------------------------------------------------------------

def _ref_mha(X, W_q, W_k, W_v, W_o, h):
    params = {"W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}
    return multi_head_attention(np.asarray(X, dtype=float), params, h)


def _mha_args(rng, n, d, h, x_scale=1.0, w_scale=None):
    w_scale = 1 / np.sqrt(d) if w_scale is None else w_scale
    W = [rng.standard_normal((d, d)) * w_scale for _ in range(4)]
    return (rng.standard_normal((n, d)) * x_scale, *W, h)


def _cases_mha(rng):
    return [
        _mha_args(rng, 5, 8, 2, w_scale=0.8),     # first: general, scores far from uniform
        _mha_args(rng, 4, 6, 3, w_scale=0.8),
        _mha_args(rng, 1, 4, 2),                  # n = 1: every weight is 1
        _mha_args(rng, 3, 4, 4),                  # d_h = 1
        _mha_args(rng, 6, 6, 1),                  # one head: plain self-attention + W_o
        _mha_args(rng, 4, 8, 2, x_scale=30.0, w_scale=3.0),   # huge scores: softmax must subtract the max
        _large_mha_args(rng, 5, 8, 2, wide=False),  # every head's scores near +1000: a min-shift still works
        _large_mha_args(rng, 6, 8, 2, wide=True),  # near +1000 and -1000 in every row: only the max-shift works
        _large_mha_args(rng, 5, 8, 2, wide=False, rows_signed=True),  # each row all near -1000 or all near +1000
    ]


def _large_mha_args(rng, n, d, h, wide, rows_signed=False):
    X, W_q, W_k, W_v = _stability.projections(rng, n, d, d, d, wide=wide, heads=h, rows_signed=rows_signed)
    return X, W_q, W_k, W_v, _stability.small(rng, (d, d)), h


#: Helpers every wrong answer of task 3 uses (the student's notebook has its own split/merge).
_HELPERS = '''def _split(X, h):
    n, d = X.shape
    return X.reshape(n, h, d // h).transpose(1, 0, 2)


def _merge(H):
    h, n, d_h = H.shape
    return H.transpose(1, 0, 2).reshape(n, h * d_h)


def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


'''


def _mha_mistake(body: str) -> str:
    return _HELPERS + "def multi_head_attention(X, W_q, W_k, W_v, W_o, h):\n" + body


MHA_MISTAKES = (
    Mistake("weights_transposed", "the weights were used untransposed (X @ W_q instead of X @ W_q.T); they have "
            "the shape of torch.nn.Linear.weight, (d_out, d_in), so Q = X W_qᵀ, and out = merge(...) W_Oᵀ",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q, h), _split(X @ W_k, h), _split(X @ W_v, h)
    w = _softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d // h))
    return _merge(w @ V) @ W_o, w
''')),
    Mistake("scale_by_d_model", "the scores were divided by sqrt(d_model); each head's dot products are "
            "between vectors of length d_k = d_model / H, so divide by sqrt(d_k)",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    w = _softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d))
    return _merge(w @ V) @ W_o.T, w
''')),
    Mistake("no_scaling", "the scores were not divided by sqrt(d_k): each head's scores are q^(i,ℓ) · k^(j,ℓ) "
            "/ sqrt(d_k), d_k = d_model / H, so that the softmax does not saturate as d_k grows",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    w = _softmax(Q @ K.transpose(0, 2, 1))
    return _merge(w @ V) @ W_o.T, w
''')),
    Mistake("w_o_forgotten", "the concatenated heads were returned without the output projection W_O: "
            "bⁱ = W_O [b^(i,1); …; b^(i,H)]",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    w = _softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d // h))
    return _merge(w @ V), w
''')),
    Mistake("merge_without_transpose", "the heads were merged with a reshape but no transpose, so rows of "
            "different tokens got mixed; transpose (H, n, d_k) to (n, H, d_k) before reshaping",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    w = _softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d // h))
    return (w @ V).reshape(n, d) @ W_o.T, w
''')),
    Mistake("not_stabilised", _stability.not_stabilised("each row's"),
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    e = np.exp(Q @ K.transpose(0, 2, 1) / np.sqrt(d // h))
    w = e / e.sum(axis=-1, keepdims=True)
    return _merge(w @ V) @ W_o.T, w
''')),
    Mistake("shifted_by_min", _stability.shifted_by_min("each row's"),
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(d // h)
    e = np.exp(s - s.min(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return _merge(w @ V) @ W_o.T, w
''')),
    Mistake("heads_averaged", "the heads' attention weights were averaged into one (n, n) matrix applied "
            "to all the values; each head applies its own weights to its own values (head ℓ's v^(j,ℓ)), and the "
            "heads are concatenated",
            _mha_mistake('''    n, d = X.shape
    Q, K = _split(X @ W_q.T, h), _split(X @ W_k.T, h)
    w = _softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d // h))
    return (w.mean(axis=0) @ (X @ W_v.T)) @ W_o.T, w
''')),
    Mistake("softmax_wrong_axis", "softmax was taken over the queries (axis -2); each query's weights over "
            "the keys (the last axis) must add up to 1",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    w = _softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d // h), axis=-2)
    return _merge(w @ V) @ W_o.T, w
''')),
    Mistake("one_head_for_all", "all heads used the full W_q, W_k, W_v (one single-head attention); head ℓ "
            "uses only its d_k rows (ℓ - 1) d_k + 1 .. ℓ d_k of each",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = X @ W_q.T, X @ W_k.T, X @ W_v.T
    w = _softmax(Q @ K.T / np.sqrt(d // h))
    return (w @ V) @ W_o.T, np.repeat(w[None], h, axis=0)
''')),
    Mistake("causal_mask", "a causal mask was applied (query i attended only to the keys j ≤ i, as in a "
            "decoder); this layer is self-attention over the whole sequence: every query attends to every key",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    s = Q @ K.transpose(0, 2, 1) / np.sqrt(d // h)
    w = _softmax(np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf))
    return _merge(w @ V) @ W_o.T, w
''')),
    Mistake("softmax_over_heads", "the softmax ran over the heads (axis 0 of the (H, n, n) scores), so the "
            "weights of each query-key pair added up to 1 across the heads; each head normalises each query's "
            "scores over the keys, the last axis",
            _mha_mistake('''    n, d = X.shape
    Q, K, V = _split(X @ W_q.T, h), _split(X @ W_k.T, h), _split(X @ W_v.T, h)
    w = _softmax(Q @ K.transpose(0, 2, 1) / np.sqrt(d // h), axis=0)
    return _merge(w @ V) @ W_o.T, w
''')),
)


# --- task 4: what each head does ------------------------------------------------------------------

#: The three roles, in the order of their codes.
ROLES = ("previous token", "same word", "uniform")


def _ideal_maps(tokens):
    """The three ideal (n, n) weight matrices, row = query: previous token (the first token, which has none,
    on itself), same word (uniform over the positions holding the query's word, itself included), uniform."""
    tokens = np.asarray(tokens)
    n = len(tokens)
    previous = np.zeros((n, n))
    previous[0, 0] = 1.0
    previous[np.arange(1, n), np.arange(n - 1)] = 1.0
    same = (tokens[:, None] == tokens[None, :]).astype(float)
    same /= same.sum(axis=1, keepdims=True)
    return previous, same, np.full((n, n), 1.0 / n)


def _ref_roles(weights, tokens):
    ideals = _ideal_maps(tokens)
    weights = np.asarray(weights, dtype=float)
    distances = np.array([[np.abs(w - ideal).sum() for ideal in ideals] for w in weights])  # (H, 3)
    return np.argmin(distances, axis=1)


def _noisy(rng, ideal, noise):
    """A weight matrix near ``ideal``: (1 - noise) ideal + noise times random rows that sum to 1."""
    r = rng.random(ideal.shape)
    return (1 - noise) * ideal + noise * r / r.sum(axis=1, keepdims=True)


def _roles_args(rng, tokens, roles, noise):
    ideals = _ideal_maps(tokens)
    return (np.stack([_noisy(rng, ideals[r], noise) for r in roles]), np.asarray(tokens))


def _drawn_spec(rng):
    """Drawn heads that test the spec (issue 41: the self-check's fresh draws meet them too): a previous-token head
    of n tokens with one query on the next token (sum 2 from 'previous', max 1 > max 1 - 1/n from 'uniform'), and
    heads just nearer 'previous' than 'uniform', the first query on itself or on the last key."""
    n = int(rng.integers(5, 12))
    head = _ideal_maps(np.arange(n))[0]
    k = int(rng.integers(1, n - 1))
    head[k] = np.eye(n)[k + 1]
    previous, _, uniform = _ideal_maps(np.arange(4))
    a, b = rng.uniform(0.505, 0.52, size=2)
    wrapped = b * np.roll(np.eye(4), -1, axis=1) + (1 - b) * uniform  # first query on the last key: 'uniform'
    tokens = rng.permutation(10)[[0, 1, 0, 2, 1, 3]]  # word ids drawn: an L2 distance picks 'uniform' here
    p6, s6, u6 = _ideal_maps(tokens)
    return [(head[None], np.arange(n)), (np.stack([a * previous + (1 - a) * uniform, wrapped]), np.arange(4)),
            ((0.42 * p6 + 0.48 * s6 + 0.1 * u6)[None], tokens)]


def _cases_roles(rng):
    return [
        _roles_args(rng, [0, 1, 2, 0, 1, 0, 3, 2], [0, 1, 2, 1, 0], 0.3),  # first: every mistake differs
        _roles_args(rng, [5, 6, 5, 7, 5, 6], [2, 1, 0], 0.2),
        _roles_args(rng, [1, 2, 3, 1], [1, 0], 0.0),                        # exact maps
        _roles_args(rng, [0, 0, 1, 1, 2, 2, 0], [2, 2, 1, 0], 0.4),
        _roles_args(rng, list(rng.integers(0, 4, size=10)) + [9], [0, 1, 2], 0.25),
    ] + _roles_spec_cases() + _drawn_spec(rng)


def _roles_spec_cases():
    """Heads that test the spec itself (issue 41): the distance is the sum of |differences| (an L-infinity
    distance differs), and the first query's previous-token weight is on itself (a first row left empty or
    wrapped round to the last key differs)."""
    previous, _, uniform = _ideal_maps(np.arange(6))
    stray = previous.copy()
    stray[3] = np.eye(6)[4]  # one query on the next token: sum 2 from 'previous', but max 1 > max 5/6 from uniform
    previous, _, uniform = _ideal_maps(np.arange(4))
    near = 0.52 * previous + 0.48 * uniform  # just nearer 'previous' than 'uniform', its first row on itself
    wrapped = 0.51 * np.roll(np.eye(4), -1, axis=1) + 0.49 * uniform  # first query on the last key: 'uniform'
    tokens = np.array([0, 1, 0, 2, 1, 3])  # issue 41: mixtures on which other distances pick other roles
    p6, s6, u6 = _ideal_maps(tokens)
    mixed = [0.42 * p6 + 0.48 * s6 + 0.1 * u6,  # L2 distance: 'uniform'
             0.8 * s6 + 0.2 * u6, 0.54 * s6 + 0.46 * u6,  # KL divergence (either way): 'uniform'
             0.42 * p6 + 0.58 * u6,  # cosine similarity: 'previous token'
             0.52 * p6 + 0.48 * s6]  # first row uniform (1/n): 'same word'
    return [(stray[None], np.arange(6)), (np.stack([near, uniform, wrapped]), np.arange(4)),
            (np.stack(mixed), tokens)]


_ROLES = '''def head_roles(weights, tokens):
    n = len(tokens)
    previous = np.zeros((n, n))
    previous[0, 0] = 1.0
    previous[np.arange(1, n), np.arange(n - 1)] = 1.0
    same = (tokens[:, None] == tokens[None, :]).astype(float)
    same = same / same.sum(axis=1, keepdims=True)
    uniform = np.full((n, n), 1.0 / n)
    return np.array([np.argmin([np.abs(w - m).sum() for m in (previous, same, uniform)]) for w in weights])
'''

ROLES_MISTAKES = (
    Mistake("next_token", "the 'previous token' map put each query's weight on the *next* token (row i - 1, column "
            "i); a previous-token head puts query i's weight on key i - 1, below the diagonal",
            edited(_ROLES, ("previous[np.arange(1, n), np.arange(n - 1)] = 1.0",
                            "previous[np.arange(n - 1), np.arange(1, n)] = 1.0"),
                   ("previous[0, 0] = 1.0", "previous[n - 1, n - 1] = 1.0"))),
    Mistake("same_word_not_normalised", "the 'same word' map was left as 0s and 1s; it is a weight matrix like the "
            "others: query i spreads its weight 1 over the positions of its word (each row adds up to 1)",
            edited(_ROLES, ("    same = same / same.sum(axis=1, keepdims=True)\n", ""))),
    Mistake("max_distance", "the distance was the largest absolute difference (an L∞ distance); the task's "
            "distance is the sum of the absolute differences of all n² entries, so one stray query costs 2, not "
            "the whole verdict",
            edited(_ROLES, ("np.abs(w - m).sum()", "np.abs(w - m).max()"))),
    Mistake("first_row_empty", "the 'previous token' map left the first query's row empty (an identity shifted below "
            "the diagonal); the first token has no previous token and puts its weight on itself, so that every row "
            "adds up to 1",
            edited(_ROLES, ("    previous[0, 0] = 1.0\n", ""))),
    Mistake("first_row_wraps", "the 'previous token' map sent the first query to the last token (a rolled "
            "identity); the first token has no previous token and puts its weight on itself",
            edited(_ROLES, ("previous[0, 0] = 1.0", "previous[0, n - 1] = 1.0"))),
    Mistake("maps_transposed", "each head's weights were read as columns (weights[l].T); row i - 1 of a head's "
            "(n, n) weights holds query i's weights over the keys, as in task 3",
            edited(_ROLES, ("np.abs(w - m)", "np.abs(w.T - m)"))),
    Mistake("euclidean_distance", "the distance was the Euclidean one (the square root of the sum of squared "
            "differences, np.linalg.norm(w - m)); the task's distance is the sum of the absolute differences, which "
            "weighs many small differences more and one large difference less",
            edited(_ROLES, ("np.abs(w - m).sum()", "np.linalg.norm(w - m)"))),
    Mistake("first_row_uniform", "the 'previous token' map spread the first query's weight uniformly (1/n on "
            "every key); the first token has no previous token and puts its weight on itself",
            edited(_ROLES, ("previous[0, 0] = 1.0", "previous[0] = 1.0 / n"))),
)


TASKS = [
    Task(ASSIGNMENT, "split_heads", _ref_split, _cases_split, SPLIT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "merge_heads", _ref_merge, _cases_merge, MERGE_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "multi_head_attention", _ref_mha, _cases_mha, MHA_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "head_roles", _ref_roles, _cases_roles, ROLES_MISTAKES, setup=SETUP),
]
