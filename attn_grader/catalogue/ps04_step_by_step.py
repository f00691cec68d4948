"""Catalogue of ps04_step_by_step: the lecture's self-attention for one query, one step at a time.

Practises the chapter "Self-attention step by step" (逐步计算自注意力): q^i = W^q a^i, k^j = W^k a^j,
v^j = W^v a^j, alpha_{i,j} = q^i . k^j (the lecture's unscaled dot product), alpha'_{i,.} =
softmax(alpha_{i,.}), b^i = sum_j alpha'_{i,j} v^j.  Inputs use the lecture's column layout:
a (d_in, n) holds a^1..a^n as columns; weights have nn.Linear's shape (d_out, d_in).
References: :func:`attn_ref.attention.attend_one` with ``scale=1.0`` and :func:`attn_ref.softmax.softmax`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import attend_one
from attn_ref.softmax import softmax

from ..checking.core import Mistake, Task
from . import _stability
from ._shared import qkv_weights

ASSIGNMENT = "ps04_step_by_step"
EXAMPLE = '''# The book's running example (chapters "Self-attention step by step" and "Matrix form"):
# four input vectors a^1..a^4, the columns of a (a[:, 0] is a^1); d_in = 3, d_k = d_v = 2.
a = np.array([[1.0, 2.0, 0.0, -1.0],
              [-1.0, 1.0, -1.0, -1.0],
              [0.0, 0.0, 2.0, 0.0]])  # (d_in=3, n=4)
W_q = np.array([[1.0, 1.0, 0.0], [0.0, -1.0, 0.0]])  # (d_k=2, d_in=3)
W_k = np.array([[-1.0, 1.0, -1.0], [1.0, 0.0, 0.0]])  # (d_k=2, d_in=3)
W_v = np.array([[1.0, 1.0, 0.0], [-1.0, 1.0, 1.0]])  # (d_v=2, d_in=3)
'''
#: The notebook's setup cell: the imports and the running example (a^1..a^4 and the weights).
SETUP = "import numpy as np\n\n" + EXAMPLE
#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).
NORMALISING = ("normalise", "output_for_query")


# --- task 1: q, k, v of one input vector ------------------------------------------------------

def _ref_qkv(a_j, W_q, W_k, W_v):
    a_j = np.asarray(a_j, dtype=float)
    return (W_q @ a_j, W_k @ a_j, W_v @ a_j)


def _cases_qkv(rng):
    # The first case is square (d_in = d_k = d_v) so that a transposed weight still runs and is named.
    cases = [(rng.standard_normal(4), *qkv_weights(rng, 4, 4, 4))]
    for d_in, d_k, d_v in [(3, 2, 5), (1, 1, 1), (6, 4, 3)]:
        cases.append((rng.standard_normal(d_in), *qkv_weights(rng, d_in, d_k, d_v)))
    return cases


QKV_MISTAKES = (
    Mistake("wq_wk_swapped", "q was computed with W_k and k with W_q: qʲ = W_q aʲ, kʲ = W_k aʲ",
            '''def query_key_value(a_j, W_q, W_k, W_v):
    return W_k @ a_j, W_q @ a_j, W_v @ a_j
'''),
    Mistake("weights_transposed", "the weights were applied transposed (aʲ W instead of W aʲ); "
            "W has shape (d_out, d_in), so qʲ = W_q aʲ",
            '''def query_key_value(a_j, W_q, W_k, W_v):
    return a_j @ W_q, a_j @ W_k, a_j @ W_v
'''),
    Mistake("v_from_wk", "v was computed with W_k instead of W_v: vʲ = W_v aʲ",
            '''def query_key_value(a_j, W_q, W_k, W_v):
    return W_q @ a_j, W_k @ a_j, W_k @ a_j
'''),
)


# --- task 2: the raw scores alpha_{i,1..n} ------------------------------------------------------

def _ref_scores(a, i, W_q, W_k):
    a = np.asarray(a, dtype=float)
    W_v = np.zeros((1, a.shape[0]))
    return attend_one(a, i, W_q, W_k, W_v, scale=1.0).alpha


def _cases_scores(rng):
    cases = []
    for d_in, d_k, n, i in [(3, 2, 4, 0), (4, 4, 5, 3), (2, 3, 1, 0), (5, 2, 6, 5), (3, 1, 3, 1)]:
        W_q, W_k, _ = qkv_weights(rng, d_in, d_k, 1)
        cases.append((rng.standard_normal((d_in, n)), i, W_q, W_k))
    return cases


SCORES_MISTAKES = (
    Mistake("self_score_missing", "the query's own score αᵢᵢ = qⁱ · kⁱ was left out; "
            "every vector is also compared with itself, so there are n scores",
            '''def attention_scores_for_query(a, i, W_q, W_k):
    q_i = W_q @ a[:, i]
    return np.array([q_i @ (W_k @ a[:, j]) for j in range(a.shape[1]) if j != i])
'''),
    Mistake("wq_wk_swapped", "W_q and W_k were swapped: the query is qⁱ = W_q aⁱ and the keys kʲ = W_k aʲ",
            '''def attention_scores_for_query(a, i, W_q, W_k):
    q_i = W_k @ a[:, i]
    return (W_q @ a).T @ q_i
'''),
    Mistake("scaled_by_sqrt_dk", "the scores were divided by sqrt(d_k); this task asks for the lecture's "
            "plain dot product αᵢⱼ = qⁱ · kʲ",
            '''def attention_scores_for_query(a, i, W_q, W_k):
    q_i = W_q @ a[:, i]
    return (W_k @ a).T @ q_i / np.sqrt(W_q.shape[0])
'''),
    Mistake("one_based_query", "the query index was read as counting from 1 (a[:, i - 1]); in code the "
            "argument i is 0-based: a[:, i] is the query vector (i = 0 computes the scores of a¹)",
            '''def attention_scores_for_query(a, i, W_q, W_k):
    q_i = W_q @ a[:, i - 1]
    return (W_k @ a).T @ q_i
'''),
    Mistake("softmax_applied_early", "softmax was already applied; this task asks for the raw scores "
            "αᵢⱼ, normalising is the next task",
            '''def attention_scores_for_query(a, i, W_q, W_k):
    s = (W_k @ a).T @ (W_q @ a[:, i])
    e = np.exp(s - s.max())
    return e / e.sum()
'''),
)


# --- task 3: softmax ----------------------------------------------------------------------------

def _ref_normalise(alpha):
    return softmax(np.asarray(alpha))


def _cases_normalise(rng):
    return [
        (rng.standard_normal(5),),
        (np.array([2.0]),),  # n = 1: the one weight is 1
        (rng.standard_normal(7) * 3,),
        (np.array([1e4, 1e4 - 1.0, -1e4]),),  # large scores: exp overflows unless the max is subtracted
        (rng.standard_normal(4).astype(np.float32),),
        (_stability.scores(rng, 6, wide=False),),  # near +1000, a few units apart: a min-shift still works
        (_stability.scores(rng, 5, wide=False, low=True),),  # all near -1000: every exp underflows to 0
    ]


NORMALISE_MISTAKES = (
    Mistake("exp_forgotten", "the scores were divided by their sum without exp: softmax is "
            "exp(alpha_j) / sum_l exp(alpha_l)",
            '''def normalise(alpha):
    return alpha / np.sum(alpha)
'''),
    Mistake("not_divided_by_sum", "exp was taken but not divided by the sum, so the weights do not add up to 1",
            '''def normalise(alpha):
    return np.exp(alpha - np.max(alpha))
'''),
    Mistake("hard_max", "the largest score got weight 1 and the others 0 (a hard max); softmax gives "
            "every score a positive weight",
            '''def normalise(alpha):
    out = np.zeros_like(alpha)
    out[np.argmax(alpha)] = 1.0
    return out
'''),
    Mistake("not_stabilised", _stability.not_stabilised("the"),
            '''def normalise(alpha):
    e = np.exp(alpha)
    return e / e.sum()
'''),
    Mistake("shifted_by_min", _stability.shifted_by_min("the"),
            '''def normalise(alpha):
    e = np.exp(alpha - np.min(alpha))
    return e / e.sum()
'''),
)


# --- task 4: the output b^i ---------------------------------------------------------------------

def _ref_output(a, i, W_q, W_k, W_v):
    return attend_one(np.asarray(a, dtype=float), i, W_q, W_k, W_v, scale=1.0).b


def _cases_output(rng):
    cases = []
    for d_in, d_k, d_v, n, i in [(3, 2, 4, 4, 0), (4, 3, 2, 5, 2), (2, 2, 3, 1, 0), (5, 4, 6, 6, 5)]:
        cases.append((rng.standard_normal((d_in, n)), i, *qkv_weights(rng, d_in, d_k, d_v)))
    # large scores (the lecture's unscaled q^i . k^j): near +1000 for every j, then near +1000 and -1000
    for n, i, wide in [(5, 2, False), (6, 4, True)]:
        x, W_q, W_k, W_v = _stability.projections(rng, n, 3, 4, 2, wide=wide, scale=1.0)
        cases.append((x.T, i, W_q, W_k, W_v))
    # every score of the query near -1000: exp underflows to 0 for each
    x, W_q, W_k, W_v = _stability.projections(rng, 5, 3, 4, 2, wide=False, scale=1.0, rows_signed=True)
    cases.append((x.T, int(np.argmin(x[:, 0])), W_q, W_k, W_v))
    return cases


OUTPUT_MISTAKES = (
    Mistake("softmax_forgotten", "the raw scores αᵢⱼ weighted the values; they must be normalised "
            "with softmax first (α′ᵢⱼ)",
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_k @ a).T @ (W_q @ a[:, i])
    return (W_v @ a) @ alpha
'''),
    Mistake("weights_on_inputs", "the weights α′ᵢⱼ multiplied the inputs aʲ instead of the values "
            "vʲ = W_v aʲ",
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_k @ a).T @ (W_q @ a[:, i])
    e = np.exp(alpha - alpha.max())
    return a @ (e / e.sum())
'''),
    Mistake("wq_wk_swapped", "W_q and W_k were swapped: the query is qⁱ = W_q aⁱ and the keys kʲ = W_k aʲ",
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_q @ a).T @ (W_k @ a[:, i])
    e = np.exp(alpha - alpha.max())
    return (W_v @ a) @ (e / e.sum())
'''),
    Mistake("only_own_value", "bⁱ was taken as vⁱ alone; bⁱ is the weighted sum over all values "
            "Σⱼ α′ᵢⱼ vʲ",
            '''def output_for_query(a, i, W_q, W_k, W_v):
    return W_v @ a[:, i]
'''),
    Mistake("not_stabilised", _stability.not_stabilised("the"),
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_k @ a).T @ (W_q @ a[:, i])
    e = np.exp(alpha)
    return (W_v @ a) @ (e / e.sum())
'''),
    Mistake("shifted_by_min", _stability.shifted_by_min("the"),
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_k @ a).T @ (W_q @ a[:, i])
    e = np.exp(alpha - alpha.min())
    return (W_v @ a) @ (e / e.sum())
'''),
    Mistake("one_based_query", "the query index was read as counting from 1 (a[:, i - 1]); in code the "
            "argument i is 0-based: a[:, i] is the query vector (i = 0 computes b¹)",
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_k @ a).T @ (W_q @ a[:, i - 1])
    e = np.exp(alpha - alpha.max())
    return (W_v @ a) @ (e / e.sum())
'''),
    Mistake("scaled_by_sqrt_dk", "the scores were divided by √d_k; this task uses the lecture's plain dot "
            "product αᵢⱼ = qⁱ · kʲ (as in task 2), then b = Σⱼ softmax(α)ⱼ vʲ",
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_k @ a).T @ (W_q @ a[:, i]) / np.sqrt(W_q.shape[0])
    e = np.exp(alpha - alpha.max())
    return (W_v @ a) @ (e / e.sum())
'''),
)


TASKS = [
    Task(ASSIGNMENT, "query_key_value", _ref_qkv, _cases_qkv, QKV_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "attention_scores_for_query", _ref_scores, _cases_scores, SCORES_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "normalise", _ref_normalise, _cases_normalise, NORMALISE_MISTAKES, setup=SETUP,
         rtol=1e-5, atol=1e-7),
    Task(ASSIGNMENT, "output_for_query", _ref_output, _cases_output, OUTPUT_MISTAKES, setup=SETUP),
]
