"""Catalogue of ps04_step_by_step: the lecture's self-attention for one query, one step at a time.

Practises the chapter "Self-attention step by step" (逐步计算自注意力): q^i = W^q a^i, k^j = W^k a^j,
v^j = W^v a^j, alpha_{i,j} = q^i . k^j (the lecture's unscaled dot product), alpha'_{i,.} =
softmax(alpha_{i,.}), b^i = sum_j alpha'_{i,j} v^j.  Inputs use the lecture's column layout:
a (d_in, n) holds a^1..a^n as columns; weights have nn.Linear's shape (d_out, d_in).  The setup cell
gives q/k/v of every column (``queries_keys_values``) and a tested ``softmax``: the tasks are the scores
(task 1), the output b^i (task 2) and, from the outputs alone (no input, no weights: attention cannot be run
again), the outputs of a shuffled input (task 3, permutation equivariance: they move with their inputs).
References: :func:`attn_ref.attention.attend_one` with ``scale=1.0`` and :func:`attn_ref.softmax.softmax`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import attend_one

from ..checking.core import Mistake, Task
from . import _stability
from ._shared import edited, qkv_weights, running_example

ASSIGNMENT = "ps04_step_by_step"
EXAMPLE = running_example("a")
#: The notebook's setup cell: the imports, the running example (a^1..a^4 and the weights), q/k/v of every
#: column and a tested softmax (the steps ps03 practised; issue 29 dropped the tasks that rewrote them).
SETUP = "import numpy as np\n\n" + EXAMPLE + '''

def queries_keys_values(a, W_q, W_k, W_v):
    """q^j = W^q a^j, k^j = W^k a^j, v^j = W^v a^j of every column of a at once: column j - 1 of each result is
    q^j, k^j, v^j. a: (d_in, n) -> (d_k, n), (d_k, n), (d_v, n)."""
    return W_q @ a, W_k @ a, W_v @ a


def softmax(alpha):
    """alpha'_{i,j} = exp(alpha_{i,j}) / sum_l exp(alpha_{i,l}) along the last axis. Subtracting the largest
    score first changes nothing mathematically and keeps np.exp from overflowing on scores like 1e4."""
    e = np.exp(alpha - np.max(alpha, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


assert [x[:, 0].tolist() for x in queries_keys_values(a, W_q, W_k, W_v)] == [[0, 1], [-2, 1], [0, -2]]  # q^1, k^1, v^1
assert np.allclose(softmax(np.array([0.0, np.log(3.0)])), [0.25, 0.75])
assert np.allclose(softmax(np.array([1e4, 1e4 - np.log(3.0), -1e4])), [0.75, 0.25, 0.0])  # large scores
'''
#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).
NORMALISING = ("output_for_query",)


# --- task 1: the raw scores alpha_{i,1..n} ------------------------------------------------------

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
            "αᵢⱼ, the softmax comes in task 2",
            '''def attention_scores_for_query(a, i, W_q, W_k):
    s = (W_k @ a).T @ (W_q @ a[:, i])
    e = np.exp(s - s.max())
    return e / e.sum()
'''),
)


# --- task 2: the output b^i ---------------------------------------------------------------------

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
            "product αᵢⱼ = qⁱ · kʲ (as in task 1), then b = Σⱼ softmax(α)ⱼ vʲ",
            '''def output_for_query(a, i, W_q, W_k, W_v):
    alpha = (W_k @ a).T @ (W_q @ a[:, i]) / np.sqrt(W_q.shape[0])
    e = np.exp(alpha - alpha.max())
    return (W_v @ a) @ (e / e.sum())
'''),
)


# --- task 3: the outputs of a shuffled input, from the outputs alone ----------------------------

def _ref_permuted(B, perm):
    """The outputs of the shuffled input a[:, perm], given only the outputs B = [b^1 ... b^n] of the original order:
    self-attention is permutation-equivariant, so column j is b of the original column perm[j]
    (tests/test_catalogue_ps03_ps05.py holds this against attention run on the shuffled input)."""
    return np.asarray(B, dtype=float)[:, np.asarray(perm)]


def _cases_permuted(rng):
    """Outputs B of any (d_v, n), never ones of the running example: nothing here can be recomputed, only moved."""
    cases = []
    for d_v, n in [(2, 5), (3, 3), (4, 6), (6, 4), (2, 1), (5, 7)]:
        perm = rng.permutation(n)
        if n > 2 and (np.array_equal(np.argsort(perm), perm) or np.array_equal(perm, np.arange(n))):
            perm = np.roll(np.arange(n), 1)  # not its own inverse (nor the identity): every mistake shows
        cases.append((rng.standard_normal((d_v, n)), perm))
    return cases


#: The right answer; each mistake below edits it.
_PERMUTED = '''def permuted_outputs(B, perm):
    return B[:, perm]
'''

PERMUTED_MISTAKES = (
    Mistake("not_shuffled", "the outputs were returned in their original order, as if shuffling the input changed "
            "nothing; ask what each output depends on, and so where it goes when its input moves",
            edited(_PERMUTED, ("B[:, perm]", "B.copy()"))),
    Mistake("inverse_permutation", "the outputs were moved with the inverse permutation; read again which original "
            "column the shuffled input's column j is, and which output belongs to it",
            edited(_PERMUTED, ("B[:, perm]", "B[:, np.argsort(perm)]"))),
    Mistake("rows_shuffled", "the rows of B were shuffled (its d_v features); the outputs b¹ … bⁿ are its columns, one "
            "per position: a shuffle of the positions moves whole outputs, not features",
            edited(_PERMUTED, ("B[:, perm]", "B[perm]"))),
    Mistake("outputs_averaged", "every output was replaced by the mean of the outputs, as if shuffling mixed them; "
            "each output bⁱ depends on its own query qⁱ and on the set of keys and values, which a shuffle does not "
            "change, so it stays bⁱ and moves with its input",
            edited(_PERMUTED, ("B[:, perm]", "np.repeat(B.mean(axis=1, keepdims=True), B.shape[1], axis=1)"))),
)


TASKS = [
    Task(ASSIGNMENT, "attention_scores_for_query", _ref_scores, _cases_scores, SCORES_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "output_for_query", _ref_output, _cases_output, OUTPUT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "permuted_outputs", _ref_permuted, _cases_permuted, PERMUTED_MISTAKES, setup=SETUP),
]
