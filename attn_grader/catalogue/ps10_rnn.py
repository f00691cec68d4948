"""Catalogue of ps10_rnn: a recurrent network step by step, path lengths, a bidirectional RNN.

Practises the chapter "Self-attention vs RNN" (自注意力与 RNN), in the book's notation: the vanilla RNN
h^t = tanh(W^in a^t + W^rec h^{t-1} + β^h), h^0 = 0, as a loop of n sequential steps; the path length (Vaswani
et al. 2017, Table 1 and §4) as the number of layers or steps from a^s to b^t, for every pair (the chapter
derives it for a^1 to b^n), with convolution kernels of width κ; and the bidirectional RNN, whose row t - 1 has
seen both sides of a^t.
References: :func:`attn_ref.recurrent.rnn_forward`, :func:`attn_ref.recurrent.path_length_table` (task 2: one
model's (n, n) table), :func:`attn_ref.recurrent.birnn_forward`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.recurrent import PATH_KINDS
from attn_ref.recurrent import birnn_forward as _birnn_forward
from attn_ref.recurrent import path_length_table as _path_length_table
from attn_ref.recurrent import rnn_forward as _rnn_forward

from ..checking.core import Mistake, Task
from ._shared import edited

ASSIGNMENT = "ps10_rnn"
SETUP = "import numpy as np"
#: No task here normalises scores with a softmax (tests/test_stability_cases.py): the set's self-attention task
#: was dropped (issue 29: problem sets 5 and 6 already write it).
NORMALISING = ()


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
    Mistake("state_not_carried", "the hidden state was reset to zero at every step, so hᵗ only saw aᵗ; the "
            "memory hᵗ⁻¹ of the previous step must enter hᵗ",
            _rnn_mistake("        h = np.tanh(W_xh @ x[t] + W_hh @ np.zeros_like(h) + b)\n")),
    Mistake("W_hh_transposed", "W_rec was transposed: the new state uses W_rec @ h (W_rec hᵗ⁻¹), not h @ W_rec "
            "(= W_recᵀ hᵗ⁻¹)",
            _rnn_mistake("        h = np.tanh(W_xh @ x[t] + W_hh.T @ h + b)\n")),
    Mistake("input_row_times_W_in", "the input was multiplied from the left, a[t] @ W_in (= W_inᵀ aᵗ); W_in has "
            "the shape (d_hid, d_in) of torch.nn.Linear.weight, so the input enters as W_in @ a[t] (W_in aᵗ)",
            _rnn_mistake("        h = np.tanh(x[t] @ W_xh + W_hh @ h + b)\n")),
    Mistake("tanh_forgotten", "the tanh was forgotten: hᵗ = tanh(W_in aᵗ + W_rec hᵗ⁻¹ + β_h)",
            _rnn_mistake("        h = W_xh @ x[t] + W_hh @ h + b\n")),
    Mistake("states_shifted", "row t - 1 holds hᵗ⁻¹ instead of hᵗ (the state was stored before the update): "
            "row 0 must be h¹, the state after reading a¹",
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


# --- task 2: the path length between every input and every output ---------------------------------

def _ref_path_lengths(kind, n, kappa=3):
    return _path_length_table(kind, n, kappa)  # (n, n), entry [t - 1, s - 1]: a^s -> b^t, -1 where none


def _cases_path(rng):
    """Every kind at the same sizes; 125 with κ = 5 holds the distance 124 = 5³ - 1 (3 dilated layers) and
    125 = 5³ (4), where a floating-point logarithm rounds the wrong way."""
    sizes = [(10, 3), (1, 3), (6, 4), (9, 2), (2, 2), (int(rng.integers(12, 40)), int(rng.integers(2, 6))),
             (126, 5), (28, 3)]
    return [(kind, n, kappa) for n, kappa in sizes for kind in PATH_KINDS]


#: The right answer, with the distance back d = t - s; each mistake below edits it.
_TABLE = '''def path_lengths(kind, n, kappa=3):
    t = np.arange(n)[:, None]
    s = np.arange(n)[None, :]
    d = t - s
    if kind == "attention":
        return np.ones((n, n), dtype=int)
    if kind == "recurrent":
        steps = d + 1
    elif kind == "conv":
        steps = np.maximum(1, -(-d // (kappa - 1)))
    else:
        steps = np.ones((n, n), dtype=int)
        while np.any(kappa**steps <= d):
            steps += kappa**steps <= d
    return np.where(d >= 0, steps, -1)
'''

PATH_MISTAKES = (
    Mistake("recurrent_off_by_one", "the RNN's path from aˢ to bᵗ was counted with the hidden-to-hidden steps only; "
            "the step from the input aˢ into the hidden state hˢ is on the path too",
            edited(_TABLE, ("steps = d + 1", "steps = d"))),
    Mistake("conv_divides_by_kappa", "each convolution layer was taken to reach κ positions further back; a kernel of "
            "width κ covers the position itself too: count how many positions back one layer really adds",
            edited(_TABLE, ("-(-d // (kappa - 1))", "-(-d // kappa)"))),
    Mistake("conv_rounded_down", "the number of convolution layers was rounded down; a partial layer is still a layer, "
            "and even the input at the output's own position is one layer below it",
            edited(_TABLE, ("-(-d // (kappa - 1))", "d // (kappa - 1)"))),
    Mistake("dilated_reach_off_by_one", "L dilated layers were taken to reach κᴸ positions back; the κᴸ positions they "
            "see include the output's own: count how far back that leaves",
            edited(_TABLE, ("kappa**steps <= d", "kappa**steps < d"))),
    Mistake("float_logarithm", "the dilated layers were counted with a floating-point logarithm: at an exact power of "
            "κ (125 with κ of 5) it comes out a hair above the whole number and rounds up one layer too many; count "
            "the layers in integers",
            edited(_TABLE, ("        steps = np.ones((n, n), dtype=int)\n        while np.any(kappa**steps <= d):\n"
                            "            steps += kappa**steps <= d\n",
                            "        steps = np.maximum(1, np.ceil(np.log(np.maximum(d, 0) + 1) / np.log(kappa)))\n"))),
    Mistake("zero_layers_on_diagonal", "aᵗ to bᵗ was counted as 0 layers for a convolution; the output bᵗ is still "
            "one layer above aᵗ (the path length is at least 1)",
            edited(_TABLE, ("np.maximum(1, -(-d // (kappa - 1)))", "-(-d // (kappa - 1))"),
                   ("steps = np.ones((n, n), dtype=int)", "steps = np.zeros((n, n), dtype=int)"))),
    Mistake("attention_causal", "self-attention was given a causal mask (-1 above the diagonal); one layer links every "
            "pair both ways, so bᵗ also reads the later inputs in 1 layer",
            edited(_TABLE, ("return np.ones((n, n), dtype=int)", "return np.where(d >= 0, 1, -1)"))),
    Mistake("future_reachable", "the RNN and the causal convolutions were given paths from later inputs; they read "
            "only the past: bᵗ cannot depend on an input after it, -1",
            edited(_TABLE, ("d = t - s", "d = np.abs(t - s)"))),
    Mistake("table_transposed", "the table was transposed; row t - 1 is the output bᵗ and column s - 1 the input "
            "aˢ, so the -1 of the causal models are above the diagonal",
            edited(_TABLE, ("return np.where(d >= 0, steps, -1)", "return np.where(d >= 0, steps, -1).T"))),
)


# --- task 3: the bidirectional RNN -------------------------------------------------------------------

def _ref_birnn(a, W_in_f, W_rec_f, beta_f, W_in_b, W_rec_b, beta_b):
    return _birnn_forward(np.asarray(a, dtype=float), (W_in_f, W_rec_f, beta_f), (W_in_b, W_rec_b, beta_b))


def _cases_birnn(rng):
    cases = []
    for n, d_in, d_hid in [(6, 3, 4), (1, 2, 3), (7, 4, 4), (5, 1, 2), (9, 3, 5)]:
        weights = []
        for _ in range(2):  # forward, backward: different weights
            weights += [0.8 * rng.standard_normal((d_hid, d_in)), 0.8 * rng.standard_normal((d_hid, d_hid)),
                        0.5 * rng.standard_normal(d_hid)]
        cases.append((rng.standard_normal((n, d_in)), *weights))
    return cases


#: The right answer, self-contained (a mistake runs after the setup cell only, without the student's task 1).
_BIRNN = '''def _rnn(a, W_in, W_rec, beta_h):
    h, states = np.zeros(W_in.shape[0]), []
    for a_t in a:
        h = np.tanh(W_in @ a_t + W_rec @ h + beta_h)
        states.append(h)
    return np.array(states)


def birnn_forward(a, W_in_f, W_rec_f, beta_f, W_in_b, W_rec_b, beta_b):
    forward = _rnn(a, W_in_f, W_rec_f, beta_f)
    backward = _rnn(a[::-1], W_in_b, W_rec_b, beta_b)[::-1]
    return np.concatenate([forward, backward], axis=1)
'''

BIRNN_MISTAKES = (
    Mistake("backward_not_reversed_back", "the backward RNN's states were left in the order it computed them (its "
            "first row is the state after aⁿ); row t - 1 must hold the backward state that has read aⁿ, ..., aᵗ, "
            "beside the forward state that has read a¹, ..., aᵗ: check in which order the backward states come out",
            edited(_BIRNN, ("beta_b)[::-1]", "beta_b)"))),
    Mistake("backward_reads_forwards", "the backward RNN read the sequence from left to right, like the forward one: "
            "it must start from aⁿ so that row t - 1 has seen the right context aᵗ, ..., aⁿ",
            edited(_BIRNN, ("_rnn(a[::-1], W_in_b, W_rec_b, beta_b)[::-1]", "_rnn(a, W_in_b, W_rec_b, beta_b)"))),
    Mistake("halves_swapped", "the backward states were put first; row t - 1 is [forward hᵗ; backward hᵗ], "
            "as torch.nn.RNN(bidirectional=True) returns it",
            edited(_BIRNN, ("[forward, backward]", "[backward, forward]"))),
    Mistake("forward_weights_twice", "the backward RNN used the forward weights; each direction has its own "
            "W_in, W_rec and β_h",
            edited(_BIRNN, ("_rnn(a[::-1], W_in_b, W_rec_b, beta_b)", "_rnn(a[::-1], W_in_f, W_rec_f, beta_f)"))),
)


TASKS = [
    Task(ASSIGNMENT, "rnn_forward", _ref_rnn, _cases_rnn, RNN_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "path_lengths", _ref_path_lengths, _cases_path, PATH_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "birnn_forward", _ref_birnn, _cases_birnn, BIRNN_MISTAKES, setup=SETUP),
]
