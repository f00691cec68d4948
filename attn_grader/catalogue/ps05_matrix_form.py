"""Catalogue of ps05_matrix_form: self-attention as matrix products, in both layouts.

Practises the chapter "Matrix form" (矩阵形式): in the lecture's column layout I (d_in, n) holds
a^1..a^n as columns, Q = W^q I, K = W^k I, V = W^v I, A = K^T Q (scaled by 1/sqrt(d_k)),
A' = softmax of each column, O = V A'; in PyTorch's row layout X (..., n, d_in),
softmax(Q K^T / sqrt(d_k)) V with Q = X W_q^T.  Weights have nn.Linear's shape (d_out, d_in).
References: :func:`attn_ref.softmax.softmax` (A'), :func:`attn_ref.attention.self_attention`; task 4 measures
what the scale does: the mean largest weight max_j α'_{i,j} of a softmax over raw and over scaled scores.
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import self_attention
from attn_ref.softmax import softmax

from ..checking.core import Mistake, Task
from . import _stability
from ._shared import GIVEN_SOFTMAX, edited, qkv_weights, running_example

ASSIGNMENT = "ps05_matrix_form"
EXAMPLE = running_example("I")
#: The notebook's setup cell: the imports, the running example (same numbers as attn_ref.examples), a softmax.
SETUP = "import numpy as np\n\n" + EXAMPLE + GIVEN_SOFTMAX
#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).
NORMALISING = ("attention_matrix", "self_attention_rows", "peak_weights")


# --- task 1: Q, K, V ----------------------------------------------------------------------------

def _ref_project(I, W_q, W_k, W_v):
    I = np.asarray(I, dtype=float)
    return (W_q @ I, W_k @ I, W_v @ I)


def _cases_project(rng):
    # The first case is square (d_in = d_k = d_v = n) so that every catalogued mistake still runs and is named.
    cases = [(rng.standard_normal((3, 3)), *qkv_weights(rng, 3, 3, 3))]
    for d_in, d_k, d_v, n in [(4, 3, 2, 5), (2, 2, 3, 1), (5, 4, 6, 7)]:
        cases.append((rng.standard_normal((d_in, n)), *qkv_weights(rng, d_in, d_k, d_v)))
    return cases


PROJECT_MISTAKES = (
    Mistake("row_layout", "the result is in the row layout (Iᵀ Wᵀ, one vector per row); this task uses the "
            "lecture's columns: Q = W_q I has shape (d_k, n)",
            '''def project(I, W_q, W_k, W_v):
    return I.T @ W_q.T, I.T @ W_k.T, I.T @ W_v.T
'''),
    Mistake("wq_wk_swapped", "W_q and W_k were swapped: Q = W_q I and K = W_k I",
            '''def project(I, W_q, W_k, W_v):
    return W_k @ I, W_q @ I, W_v @ I
'''),
    Mistake("weights_transposed", "the weights were used transposed (Wᵀ I); W has shape (d_out, d_in), "
            "so Q = W_q I",
            '''def project(I, W_q, W_k, W_v):
    return W_q.T @ I, W_k.T @ I, W_v.T @ I
'''),
)


# --- task 2: A' ---------------------------------------------------------------------------------

def _ref_attention_matrix(Q, K):
    K, Q = np.asarray(K, dtype=float), np.asarray(Q, dtype=float)
    return softmax((K.T @ Q) / np.sqrt(K.shape[0]), axis=0)


def _cases_attention_matrix(rng):
    cases = [(rng.standard_normal((4, 5)), rng.standard_normal((4, 5)))]  # d_k = 4, n = 5
    for d_k, n in [(9, 3), (2, 1), (16, 6)]:
        cases.append((rng.standard_normal((d_k, n)), rng.standard_normal((d_k, n))))
    cases.append((60.0 * rng.standard_normal((4, 4)), 60.0 * rng.standard_normal((4, 4))))  # scores ~ 1e4
    for n, wide in [(5, False), (6, True)]:  # scores near +1000 in each column; then near +1000 and -1000
        Q, K = _stability.query_keys(rng, n, n, 4, wide=wide)
        cases.append((Q.T, K.T))
    Q, K = _stability.query_keys(rng, 5, 5, 4, wide=False, rows_signed=True)  # columns all near -1000 or +1000
    cases.append((Q.T, K.T))
    return cases


def _column_slips(build, d_k: str) -> dict[str, Mistake]:
    """The slips that tasks 2 and 3 share, by name: missing_scale, scaled_by_d and shifted_by_min.

    ``build(A)`` is the task's answer cell computing the scores A; ``d_k`` is how that cell spells d_k.
    """
    slips = (Mistake("missing_scale", "the scores were not divided by sqrt(d_k): A' = softmax(Kᵀ Q / sqrt(d_k))",
                     build("K.T @ Q")),
             Mistake("scaled_by_d", "the scores were divided by d_k instead of sqrt(d_k) (or by sqrt(d_k) twice)",
                     build(f"K.T @ Q / {d_k}")),
             Mistake("shifted_by_min", _stability.shifted_by_min("each column's"),
                     edited(build(f"K.T @ Q / np.sqrt({d_k})"), ("A.max(", "A.min("))))
    return {m.name: m for m in slips}


def _col_softmax_mistake(expr: str, axis: int = 0) -> str:
    return f'''def attention_matrix(Q, K):
    A = {expr}
    e = np.exp(A - A.max(axis={axis}, keepdims=True))
    return e / e.sum(axis={axis}, keepdims=True)
'''


_MATRIX_SLIPS = _column_slips(_col_softmax_mistake, "K.shape[0]")
ATTENTION_MATRIX_MISTAKES = (
    Mistake("softmax_wrong_axis", "the softmax ran along each row; in the column layout each column of A "
            "(one query's scores) is normalised, so the columns of A′ sum to 1",
            _col_softmax_mistake("K.T @ Q / np.sqrt(K.shape[0])", axis=1)),
    _MATRIX_SLIPS["missing_scale"],
    _MATRIX_SLIPS["scaled_by_d"],
    Mistake("qt_k", "A was computed as Qᵀ K; the lecture's A = Kᵀ Q puts query i's scores in column i",
            _col_softmax_mistake("Q.T @ K / np.sqrt(K.shape[0])")),
    Mistake("not_stabilised", _stability.not_stabilised("each column's"),
            '''def attention_matrix(Q, K):
    e = np.exp(K.T @ Q / np.sqrt(K.shape[0]))
    return e / e.sum(axis=0, keepdims=True)
'''),
    _MATRIX_SLIPS["shifted_by_min"],
    Mistake("scaled_by_sqrt_n", "the scores were divided by sqrt(n), the number of queries (Q.shape[1]), instead "
            "of sqrt(d_k): in the column layout each query is a column, so d_k = Q.shape[0]",
            _col_softmax_mistake("K.T @ Q / np.sqrt(Q.shape[1])")),
)


# --- task 3: the whole layer, rows, with batch dimensions ---------------------------------------

def _ref_rows(X, W_q, W_k, W_v):
    return self_attention(np.asarray(X, dtype=float), W_q, W_k, W_v)


def _cases_rows(rng):
    cases = []
    # First case square (d_in = d_k = d_v) and unbatched, so that every mistake runs and is named.
    for batch, n, d_in, d_k, d_v in [((), 4, 3, 3, 3), ((2,), 5, 4, 2, 3), ((2, 3), 3, 2, 4, 5), ((), 1, 3, 2, 2),
                                     ((3,), 6, 5, 8, 4)]:
        cases.append((rng.standard_normal((*batch, n, d_in)), *qkv_weights(rng, d_in, d_k, d_v)))
    # scores near +1000 in each row (a batch of two sequences); then near +1000 and -1000
    x, W_q, W_k, W_v = _stability.projections(rng, 2 * 4, 3, 4, 2, wide=False)
    cases.append((x.reshape(2, 4, 3), W_q, W_k, W_v))
    cases.append(_stability.projections(rng, 6, 3, 4, 2, wide=True))
    cases.append(_stability.projections(rng, 5, 3, 4, 2, wide=False, rows_signed=True))  # rows all -1000 or +1000
    return cases


def _rows_mistake(q="X @ W_q.T", k="X @ W_k.T", v="X @ W_v.T", scale="/ np.sqrt(W_q.shape[0])", axis=-1):
    return f'''def self_attention_rows(X, W_q, W_k, W_v):
    Q, K, V = {q}, {k}, {v}
    s = Q @ np.swapaxes(K, -1, -2) {scale}
    e = np.exp(s - s.max(axis={axis}, keepdims=True))
    w = e / e.sum(axis={axis}, keepdims=True)
    return w @ V, w
'''


ROWS_MISTAKES = (
    Mistake("softmax_wrong_axis", "the softmax ran over the queries (axis -2); in the row layout each row "
            "(one query) is normalised: axis=-1", _rows_mistake(axis=-2)),
    Mistake("missing_scale", "the scores were not divided by sqrt(d_k): softmax(Q Kᵀ / sqrt(d_k))",
            _rows_mistake(scale="")),
    Mistake("scaled_by_d", "the scores were divided by d_k instead of sqrt(d_k) (or by sqrt(d_k) twice)",
            _rows_mistake(scale="/ W_q.shape[0]")),
    Mistake("wq_wk_swapped", "W_q and W_k were swapped: Q = X W_qᵀ, K = X W_kᵀ",
            _rows_mistake(q="X @ W_k.T", k="X @ W_q.T")),
    Mistake("weights_not_transposed", "the weights were applied without transposing (X W); W has nn.Linear's "
            "shape (d_out, d_in), so Q = X W_qᵀ", _rows_mistake(q="X @ W_q", k="X @ W_k", v="X @ W_v")),
    Mistake("k_T_on_a_batch", "K.T was used for Kᵀ: on a batch (..., n, d_k) it reverses every axis, batch "
            "axes included; transpose the last two axes only, np.swapaxes(K, -1, -2)",
            _rows_mistake().replace("np.swapaxes(K, -1, -2)", "K.T")),
    Mistake("not_stabilised", _stability.not_stabilised(),
            _rows_mistake().replace("np.exp(s - s.max(axis=-1, keepdims=True))", "np.exp(s)")),
    Mistake("shifted_by_min", _stability.shifted_by_min(), _rows_mistake().replace("s.max(", "s.min(")),
    Mistake("scaled_by_sqrt_d_in", "the scores were divided by sqrt(d_in), the width of the inputs (X.shape[-1]), "
            "instead of sqrt(d_k), the width of the queries and keys (W_q.shape[0])",
            _rows_mistake(scale="/ np.sqrt(X.shape[-1])")),
    Mistake("outputs_swapped", "the two results were returned in the other order; the function returns "
            "(outputs, weights)", _rows_mistake().replace("return w @ V, w", "return w, w @ V")),
)


# --- task 4: what the scale does to the softmax, measured -----------------------------------------

def _ref_peaks(Q, K):
    """The mean over the m queries of the largest weight max_j α'ᵢⱼ, from the raw scores A = Kᵀ Q and from the
    scaled ones A / sqrt(d_k) (column i of A holds query i's scores; the softmax runs over the keys j)."""
    Q, K = np.asarray(Q, dtype=float), np.asarray(K, dtype=float)
    A = K.T @ Q  # (n, m)
    return tuple(float(softmax(S, axis=0).max(axis=0).mean()) for S in (A, A / np.sqrt(Q.shape[0])))


def _cases_peaks(rng):
    cases = []
    for d_k, n, m in [(4, 6, 30), (64, 16, 20), (1, 3, 10), (256, 5, 12), (3, 3, 3)]:  # n != m: no axis confusion
        cases.append((rng.standard_normal((d_k, m)), rng.standard_normal((d_k, n))))
    # scaled scores near +1000 (a few units apart), then near +1000 and -1000, then every query's all near -1000
    for n, wide, rows_signed in [(5, False, False), (6, True, False), (5, False, True)]:
        Q, K = _stability.query_keys(rng, 4, n, 4, wide=wide, rows_signed=rows_signed)
        cases.append((Q.T, K.T))
    return cases


#: The right answer, with its own stable softmax; each mistake below edits it.
_PEAKS = '''def peak_weights(Q, K):
    d_k = Q.shape[0]
    A = K.T @ Q
    peaks = []
    for S in (A, A / np.sqrt(d_k)):
        e = np.exp(S - S.max(axis=0, keepdims=True))
        w = e / e.sum(axis=0, keepdims=True)
        peaks.append(w.max(axis=0).mean())
    return tuple(peaks)
'''

PEAKS_MISTAKES = (
    Mistake("softmax_over_queries", "each key's scores were normalised over the queries; query i's weights α′ᵢⱼ over "
            "the keys j sum to 1 (a column of A, the matrix Kᵀ Q), and its largest weight is taken among them",
            edited(_PEAKS, ("S.max(axis=0, keepdims=True)", "S.max(axis=1, keepdims=True)"),
                   ("e.sum(axis=0, keepdims=True)", "e.sum(axis=1, keepdims=True)"))),
    Mistake("scaled_by_d", "the scores were divided by d_k instead of √d_k: their variance then shrinks like 1/d_k and "
            "every query's weights flatten towards 1/n; the Transformer divides by √d_k",
            edited(_PEAKS, ("A / np.sqrt(d_k)", "A / d_k"))),
    Mistake("mean_weight_not_largest", "the mean weight was taken instead of the largest: the weights of a query "
            "sum to 1, so their mean is 1/n whatever the scale; the experiment asks for max_j α′ᵢⱼ",
            edited(_PEAKS, ("w.max(axis=0).mean()", "w.mean(axis=0).mean()"))),
    Mistake("largest_over_all_queries", "the largest weight of all the queries was returned; the task averages, over "
            "the m queries, each query's largest weight",
            edited(_PEAKS, ("w.max(axis=0).mean()", "w.max()"))),
    Mistake("raw_and_scaled_swapped", "the two numbers were returned in the other order; the tuple is "
            "(from the raw scores, from the scaled scores)",
            edited(_PEAKS, ("return tuple(peaks)", "return tuple(peaks[::-1])"))),
    Mistake("not_stabilised", _stability.not_stabilised("each query's"),
            edited(_PEAKS, ("np.exp(S - S.max(axis=0, keepdims=True))", "np.exp(S)"))),
    Mistake("shifted_by_min", _stability.shifted_by_min("each query's"),
            edited(_PEAKS, ("S.max(axis=0, keepdims=True)", "S.min(axis=0, keepdims=True)"))),
    Mistake("scaled_by_sqrt_m", "the scores were scaled by the number of queries, not by their width: in the column "
            "layout each query is a column, so look again at which axis of Q is the queries' width",
            edited(_PEAKS, ("A / np.sqrt(d_k)", "A / np.sqrt(Q.shape[1])"))),
    Mistake("median_not_mean", "the median of the queries' largest weights was taken; the task asks for their "
            "mean over the m queries", edited(_PEAKS, ("w.max(axis=0).mean()", "np.median(w.max(axis=0))"))),
)


TASKS = [
    Task(ASSIGNMENT, "project", _ref_project, _cases_project, PROJECT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "attention_matrix", _ref_attention_matrix, _cases_attention_matrix,
         ATTENTION_MATRIX_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "self_attention_rows", _ref_rows, _cases_rows, ROWS_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "peak_weights", _ref_peaks, _cases_peaks, PEAKS_MISTAKES, setup=SETUP),
]
