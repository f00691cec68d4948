"""Catalogue of ps10_rnn: a recurrent network step by step, self-attention all at once, path lengths.

Practises the chapter "Self-attention vs RNN" (RNN 比较): the vanilla RNN
h_t = tanh(W_xh x_t + W_hh h_{t-1} + b) as a loop of n sequential steps; self-attention computing
every position at once (row layout, 1/sqrt(d_k)); the maximum path length of Vaswani et al.
(2017), Table 1, as the number of layers or steps from x_1 to y_n.
References: :func:`attn_ref.recurrent.rnn_forward`, :func:`attn_ref.attention.self_attention`,
:func:`attn_ref.recurrent.path_length` (task 3 returns one column of Table 1: the four
kinds for one n).
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import self_attention
from attn_ref.recurrent import PATH_KINDS
from attn_ref.recurrent import path_length as _path_length
from attn_ref.recurrent import rnn_forward as _rnn_forward

from ..checking.core import Mistake, Task
from . import _stability
from ._shared import qkv_weights

ASSIGNMENT = "ps10_rnn"
SETUP = "import numpy as np"
#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).
NORMALISING = ("attention_all",)


# --- task 1: the RNN loop --------------------------------------------------------------------------

def _ref_rnn(x, W_xh, W_hh, b):
    return _rnn_forward(x, W_xh, W_hh, b)


def _cases_rnn(rng):
    cases = []
    for n, d_in, d_h in [(6, 3, 4), (1, 2, 3), (10, 4, 4), (5, 1, 2), (12, 5, 3)]:
        cases.append((rng.standard_normal((n, d_in)), 0.8 * rng.standard_normal((d_h, d_in)),
                      0.8 * rng.standard_normal((d_h, d_h)), 0.5 * rng.standard_normal(d_h)))
    return cases


def _rnn_mistake(step: str, store: str = "    H[t] = h\n") -> str:
    return '''def rnn_forward(x, W_xh, W_hh, b):
    n = x.shape[0]
    h = np.zeros(W_xh.shape[0])
    H = np.zeros((n, W_xh.shape[0]))
    for t in range(n):
''' + step + "    " + store + "    return H\n"


RNN_MISTAKES = (
    Mistake("state_not_carried", "the hidden state was reset to zero at every step, so hₜ only saw xₜ; the "
            "memory hₜ₋₁ of the previous step must enter hₜ",
            _rnn_mistake("        h = np.tanh(W_xh @ x[t] + W_hh @ np.zeros_like(h) + b)\n")),
    Mistake("W_hh_transposed", "W_hh was transposed: the new state is W_hh @ hₜ₋₁, not hₜ₋₁ @ W_hh "
            "(= W_hhᵀ hₜ₋₁)",
            _rnn_mistake("        h = np.tanh(W_xh @ x[t] + W_hh.T @ h + b)\n")),
    Mistake("tanh_forgotten", "the tanh was forgotten: hₜ = tanh(W_xh xₜ + W_hh hₜ₋₁ + b)",
            _rnn_mistake("        h = W_xh @ x[t] + W_hh @ h + b\n")),
    Mistake("states_shifted", "row t holds hₜ₋₁ instead of hₜ (the state was stored before the update): "
            "row 0 must be h₁, the state after reading x₁",
            '''def rnn_forward(x, W_xh, W_hh, b):
    n = x.shape[0]
    h = np.zeros(W_xh.shape[0])
    H = np.zeros((n, W_xh.shape[0]))
    for t in range(n):
        H[t] = h
        h = np.tanh(W_xh @ x[t] + W_hh @ h + b)
    return H
'''),
)


# --- task 2: self-attention, all positions at once ------------------------------------------------

def _ref_attention(x, W_q, W_k, W_v):
    return self_attention(x, W_q, W_k, W_v)[0]


def _cases_attention(rng):
    cases = []
    for n, d_in, d_k, d_v in [(5, 4, 3, 2), (1, 3, 2, 2), (8, 2, 4, 5), (6, 6, 6, 6)]:
        cases.append((rng.standard_normal((n, d_in)), *qkv_weights(rng, d_in, d_k, d_v)))
    # large scores: exp overflows unless the row maximum is subtracted
    cases.append((30 * rng.standard_normal((4, 3)), rng.standard_normal((3, 3)), rng.standard_normal((3, 3)),
                  rng.standard_normal((2, 3))))
    # scores near +1000 in every row, a few units apart (a min-shift still works); then near +1000 and -1000
    cases.append(_stability.projections(rng, 5, 3, 4, 2, wide=False))
    cases.append(_stability.projections(rng, 6, 3, 4, 3, wide=True))
    cases.append(_stability.projections(rng, 5, 3, 4, 2, wide=False, rows_signed=True))  # rows all -1000 or +1000
    return cases


def _attention_mistake(body: str) -> str:
    return '''def attention_all(x, W_q, W_k, W_v):
    Q, K, V = x @ W_q.T, x @ W_k.T, x @ W_v.T
    n, d_k = Q.shape
''' + body


ATTENTION_MISTAKES = (
    Mistake("softmax_wrong_axis", "the softmax normalised each column (over the queries); query i's weights "
            "over the keys j (row i) must sum to 1",
            _attention_mistake('''    s = Q @ K.T / np.sqrt(d_k)
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return (e / e.sum(axis=0, keepdims=True)) @ V
''')),
    Mistake("no_scaling", "the scores were not divided by sqrt(d_k)",
            _attention_mistake('''    s = Q @ K.T
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("left_context_only", "each position attended only to itself and the positions before it, like a "
            "left-to-right RNN; self-attention sees the whole sequence, both sides",
            _attention_mistake('''    s = Q @ K.T / np.sqrt(d_k)
    s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("W_q_W_k_swapped", "W_q and W_k were swapped: the queries are x W_qᵀ and the keys x W_kᵀ",
            '''def attention_all(x, W_q, W_k, W_v):
    Q, K, V = x @ W_k.T, x @ W_q.T, x @ W_v.T
    s = Q @ K.T / np.sqrt(Q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
'''),
    Mistake("not_stabilised", _stability.not_stabilised(),
            _attention_mistake('''    e = np.exp(Q @ K.T / np.sqrt(d_k))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("shifted_by_min", _stability.shifted_by_min(),
            _attention_mistake('''    s = Q @ K.T / np.sqrt(d_k)
    e = np.exp(s - s.min(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
)


# --- task 3: maximum path length --------------------------------------------------------------------

def _ref_path_lengths(n, k=3):
    return np.array([_path_length(kind, n, k) for kind in PATH_KINDS])  # (4,)


def _cases_path(rng):
    return [(10, 3), (1, 3), (6, 4), (9, 3), (10, 4), (8, 3), (1, 2), (2, 2), (int(rng.integers(20, 200)), 2),
            (int(rng.integers(20, 200)), 5), (27, 3), (28, 3)]


def _path_mistake(recurrent="n", conv="max(1, -(-(n - 1) // (k - 1)))", dilated="max(1, L)") -> str:
    return f'''def path_lengths(n, k=3):
    L = 0
    while k**L < n:
        L += 1
    return np.array([1, {recurrent}, {conv}, {dilated}])
'''


PATH_MISTAKES = (
    Mistake("recurrent_off_by_one", "the RNN's path was counted as n - 1 (only the hₜ₋₁ -> hₜ steps); the "
            "step x₁ -> h₁ is on the path too: x₁ -> h₁ -> ... -> hₙ is n steps",
            _path_mistake(recurrent="n - 1")),
    Mistake("conv_divides_by_k", "each convolution layer was taken to reach k positions further; a kernel of "
            "width k reaches k - 1 positions further back (it also covers the position itself)",
            _path_mistake(conv="max(1, -(-(n - 1) // k))")),
    Mistake("conv_rounded_down", "the number of convolution layers was rounded down; a partial layer is still "
            "a layer: ceil((n - 1) / (k - 1))",
            _path_mistake(conv="max(1, (n - 1) // (k - 1))")),
    Mistake("dilated_log2", "the dilated convolution used log base 2 whatever k is; with dilations 1, k, k², ... "
            "the receptive field after L layers is kᴸ, so L = ceil(log_k n)",
            _path_mistake(dilated="max(1, int(np.ceil(np.log2(n))))")),
    Mistake("zero_layers_for_n1", "with n = 1 a convolution still needs one layer between x₁ and y₁ "
            "(the path length is at least 1)",
            _path_mistake(conv="-(-(n - 1) // (k - 1))", dilated="L")),
)


TASKS = [
    Task(ASSIGNMENT, "rnn_forward", _ref_rnn, _cases_rnn, RNN_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "attention_all", _ref_attention, _cases_attention, ATTENTION_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "path_lengths", _ref_path_lengths, _cases_path, PATH_MISTAKES, setup=SETUP),
]
