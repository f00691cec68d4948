"""Catalogue of ps07_positional: the sinusoidal table, adding it, the shift matrix R_δ, and what positions change.

Practises the chapter "Positional encoding" (位置编码), in the book's notation: for the pair index
m = 0 .. d_model/2 - 1, e^i_{2m} = sin(i ω_m), e^i_{2m+1} = cos(i ω_m), ω_m = 10000^(-2m/d_model), positions
i = 0 .. n-1 (counted from 0, as in the chapter and the paper); the inputs become a^i + e^i;
e^{i+δ} = R_δ e^i with R_δ block-diagonal, block m = [[cos(δ ω_m), sin(δ ω_m)], [-sin(δ ω_m), cos(δ ω_m)]].
Task 4 measures permutation equivariance: without positions a permutation of the inputs permutes the
outputs; with them it does not. d_model is even throughout.
References: :func:`attn_ref.positional.sinusoidal_positional_encoding`, :func:`~attn_ref.positional.shift_matrix`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import self_attention
from attn_ref.positional import shift_matrix, sinusoidal_positional_encoding

from ..checking.core import Mistake, Task

ASSIGNMENT = "ps07_positional"
#: The notebook's setup cell: NumPy, and the tested softmax and row-layout self-attention task 4 uses
#: (tests/test_ps07_ps08_ps09_setups.py compares them with attn_ref).
SETUP = '''import numpy as np


def softmax(scores, axis=-1):
    """The softmax along `axis`, shifted by the maximum first (safe for large scores)."""
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def self_attention(X, W_q, W_k, W_v):
    """softmax(Q K^T / sqrt(d_k)) V with Q = X W_q^T, K = X W_k^T, V = X W_v^T (row layout). X: (n, d_in)."""
    Q, K, V = X @ W_q.T, X @ W_k.T, X @ W_v.T
    return softmax(Q @ K.T / np.sqrt(K.shape[-1])) @ V'''


# --- task 1: the table ----------------------------------------------------------------------------

def _ref_table(n, d):
    return sinusoidal_positional_encoding(n, d)


def _cases_table(rng):
    cases = [(50, 16), (7, 4), (1, 6), (3, 2), (200, 64)]  # the first one shows every mistake
    cases.append((int(rng.integers(2, 40)), 2 * int(rng.integers(1, 20))))
    return cases


def _table_mistake(angles: str, fill: str = "    PE[:, 0::2] = np.sin(angles)\n    PE[:, 1::2] = np.cos(angles)\n",
                   pos: str = "np.arange(n)[:, None]") -> str:
    return ("def sinusoidal_table(n, d):\n"
            f"    pos = {pos}\n"
            "    i = np.arange(d // 2)[None, :]\n"
            f"    angles = {angles}\n"
            "    PE = np.zeros((n, d))\n" + fill + "    return PE\n")


TABLE_MISTAKES = (
    Mistake("sin_cos_swapped", "cos was put on the even dimensions and sin on the odd ones; eⁱ₂ₘ is "
            "the sine, eⁱ₂ₘ₊₁ the cosine",
            _table_mistake("pos / 10000 ** (2 * i / d)",
                           "    PE[:, 0::2] = np.cos(angles)\n    PE[:, 1::2] = np.sin(angles)\n")),
    Mistake("exponent_i_over_d", "the exponent was m/d_model instead of 2m/d_model (m counts the (sin, cos) pairs), "
            "so the frequencies fall only half as fast",
            _table_mistake("pos / 10000 ** (i / d)")),
    Mistake("exponent_per_dimension", "each dimension j got its own frequency 10000^(-j/d_model) "
            "(or 10000^(-2j/d_model)); "
            "the sine and cosine of a pair share one frequency ω_m = 10000^(-2m/d_model)",
            "def sinusoidal_table(n, d):\n"
            "    pos = np.arange(n)[:, None]\n"
            "    j = np.arange(d)[None, :]\n"
            "    angles = pos / 10000 ** (j / d)\n"
            "    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))\n"),
    Mistake("base_1000", "the base was 1000 instead of 10000", _table_mistake("pos / 1000 ** (2 * i / d)")),
    Mistake("positions_from_1", "positions were counted from 1; the first row is position i = 0 "
            "(sin 0 = 0, cos 0 = 1)", _table_mistake("pos / 10000 ** (2 * i / d)", pos="np.arange(1, n + 1)[:, None]")),
    Mistake("halves_not_interleaved", "all the sines were put in the first half and all the cosines in the "
            "second; they alternate: even dimensions sin, odd dimensions cos",
            _table_mistake("pos / 10000 ** (2 * i / d)",
                           "    PE[:, : d // 2] = np.sin(angles)\n    PE[:, d // 2 :] = np.cos(angles)\n")),
    Mistake("integer_division_in_exponent", "the exponent was computed with integer division, 2 * m // d_model, "
            "which is 0 for every pair: all the pairs got the frequency 1; 2m/d_model is a fraction (use /)",
            _table_mistake("pos / 10000 ** (2 * i // d)")),
    Mistake("multiplied_not_divided", "i was multiplied by 10000^(2m/d_model) instead of divided by it",
            _table_mistake("pos * 10000 ** (2 * i / d)")),
    Mistake("block_layout_of_fairseq", "this is the layout of fairseq and tensor2tensor: all sines, then all "
            "cosines, with frequencies 10000^(-m/(d_model/2 - 1)); the table of Vaswani et al. (and this task) "
            "interleaves them (eⁱ₂ₘ = sin, eⁱ₂ₘ₊₁ = cos) with frequencies ω_m = 10000^(-2m/d_model)",
            "import math\n\n\ndef sinusoidal_table(n, d):\n"
            "    half = d // 2\n"
            "    freq = np.exp(np.arange(half) * -(math.log(10000) / (half - 1)))  # d = 2: ZeroDivisionError\n"
            "    angles = np.arange(n)[:, None] * freq[None, :]\n"
            "    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)\n"),
    Mistake("block_layout_of_tensor2tensor", "this is the layout of tensor2tensor: all sines, then all cosines, "
            "with frequencies 10000^(-m/max(d_model/2 - 1, 1)); the table of Vaswani et al. (and this task) "
            "interleaves them (eⁱ₂ₘ = sin, eⁱ₂ₘ₊₁ = cos) with frequencies ω_m = 10000^(-2m/d_model)",
            "import math\n\n\ndef sinusoidal_table(n, d):\n"
            "    half = d // 2\n"
            "    freq = np.exp(np.arange(half) * -(math.log(10000) / max(half - 1, 1)))\n"
            "    angles = np.arange(n)[:, None] * freq[None, :]\n"
            "    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)\n"),
    Mistake("exponent_doubled", "the exponent was doubled: 2m/d_model was computed from indices that already step "
            "by 2 (0, 2, 4, ...), giving 10000^(4m/d_model); use either m = 0, 1, 2, ... with 2m/d_model or "
            "2m = 0, 2, 4, ... with 2m/d_model, not both",
            "def sinusoidal_table(n, d):\n"
            "    pos = np.arange(n)[:, None]\n"
            "    two_i = np.arange(0, d, 2)[None, :]\n"
            "    angles = pos / 10000 ** (2 * two_i / d)\n"
            "    PE = np.zeros((n, d))\n"
            "    PE[:, 0::2] = np.sin(angles)\n"
            "    PE[:, 1::2] = np.cos(angles)\n"
            "    return PE\n"),
)


# --- task 2: add the positions --------------------------------------------------------------------

def _ref_add(X):
    X = np.asarray(X, dtype=float)
    return X + sinusoidal_positional_encoding(X.shape[-2], X.shape[-1])


def _cases_add(rng):
    return [
        (rng.standard_normal((6, 8)),),      # n != d, so a transposed table cannot pass
        (rng.standard_normal((3, 5, 4)),),   # a batch of 3 sequences: the same e^i for each
        (rng.standard_normal((1, 2)),),      # n = 1
        (rng.standard_normal((12, 6)),),
        (rng.standard_normal((1, 4, 4)),),   # a batch of one square sequence: X.shape[0], X.shape[1] give (1, 4)
    ]


_TABLE = '''def _table(n, d, first=0):
    pos = np.arange(first, first + n)[:, None]
    angles = pos / 10000 ** (np.arange(0, d, 2)[None, :] / d)
    PE = np.zeros((n, d))
    PE[:, 0::2], PE[:, 1::2] = np.sin(angles), np.cos(angles)
    return PE


'''

ADD_MISTAKES = (
    Mistake("concatenated", "eⁱ was concatenated to aⁱ; the lecture adds it, aⁱ + eⁱ, keeping shape (..., n, d_model)",
            _TABLE + '''def add_positions(X):
    n, d = X.shape[-2], X.shape[-1]
    return np.concatenate([X, np.broadcast_to(_table(n, d), X.shape)], axis=-1)
'''),
    Mistake("positions_from_1", "the positions were counted from 1; row 0 of each sequence is position i = 0 "
            "and gets e⁰",
            _TABLE + '''def add_positions(X):
    return X + _table(X.shape[-2], X.shape[-1], first=1)
'''),
    Mistake("table_transposed", "the table was built with the roles of n and d_model exchanged (d_model positions, n "
            "dimensions) and transposed; row i of the table is eⁱ, built from n positions and d_model dimensions",
            _TABLE + '''def add_positions(X):
    n, d = X.shape[-2], X.shape[-1]
    return X + _table(d, n).T
'''),
    Mistake("sizes_from_first_axes", "n and d_model were read from the first two axes (X.shape[0], X.shape[1]); "
            "on a batch (B, n, d_model) those are B and n: read them from the last two, X.shape[-2:]",
            _TABLE + '''def add_positions(X):
    n, d = X.shape[0], X.shape[1]
    return X + _table(n, d)
'''),
    Mistake("multiplied", "X was multiplied by the table; the encoding is added: aⁱ + eⁱ",
            _TABLE + '''def add_positions(X):
    return X * _table(X.shape[-2], X.shape[-1])
'''),
)


# --- task 3: the shift matrix ---------------------------------------------------------------------

def _ref_shift(k, d):
    return shift_matrix(k, d)


def _cases_shift(rng):
    return [(3, 8), (1, 2), (0, 4), (17, 16), (-2, 6), (int(rng.integers(1, 50)), 2 * int(rng.integers(1, 16)))]


def _shift_mistake(freq: str, block: str) -> str:
    return ("def relative_shift_matrix(k, d):\n"
            "    M = np.zeros((d, d))\n"
            "    for i in range(d // 2):\n"
            f"        w = {freq}\n"
            "        c, s = np.cos(k * w), np.sin(k * w)\n"
            f"        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = {block}\n"
            "    return M\n")


SHIFT_MISTAKES = (
    Mistake("rotation_transposed", "the rotation turns the wrong way (the signs of sin are swapped): that "
            "is R₋δ, which moves back by δ; with (sin, cos) pairs, sin((i+δ)ω) = cos(δω) sin(iω) + sin(δω) cos(iω) "
            "and cos((i+δ)ω) = -sin(δω) sin(iω) + cos(δω) cos(iω), so the block is [[cos, sin], [-sin, cos]]",
            _shift_mistake("1 / 10000 ** (2 * i / d)", "[[c, -s], [s, c]]")),
    Mistake("angle_without_frequency", "each block turned by the angle δ; pair m turns by δ ω_m with "
            "ω_m = 10000^(-2m/d_model)", _shift_mistake("1.0", "[[c, s], [-s, c]]")),
    Mistake("exponent_i_over_d", "the frequency was 10000^(-m/d_model) instead of ω_m = 10000^(-2m/d_model)",
            _shift_mistake("1 / 10000 ** (i / d)", "[[c, s], [-s, c]]")),
    Mistake("sin_terms_missing", "the blocks were cos(δ ω_m) times the identity, without the sin terms; "
            "sin(a+b) = cos(b) sin(a) + sin(b) cos(a) mixes the two entries of a pair",
            _shift_mistake("1 / 10000 ** (2 * i / d)", "[[c, 0], [0, c]]")),
)


# --- task 4: what the positions change (permutation equivariance) ---------------------------------

def _attention(X, W_q, W_k, W_v):
    return self_attention(X, W_q, W_k, W_v)[0]


def _ref_gaps(X, E, W_q, W_k, W_v, perm):
    X, perm = np.asarray(X, dtype=float), np.asarray(perm)
    without = np.abs(_attention(X[perm], W_q, W_k, W_v) - _attention(X, W_q, W_k, W_v)[perm]).max()
    with_e = np.abs(_attention(X[perm] + E, W_q, W_k, W_v) - _attention(X + E, W_q, W_k, W_v)[perm]).max()
    return np.array([without, with_e])


def _gaps_args(rng, n, d, perm):
    W = [rng.standard_normal((d, d)) * 2 / np.sqrt(d) for _ in range(3)]
    return (rng.standard_normal((n, d)), sinusoidal_positional_encoding(n, d), *W, np.asarray(perm))


def _cycle(rng, n):
    """A random permutation of 0 .. n-1 that is not its own inverse: three rows move in a cycle."""
    cycle = rng.permutation(n)[:3]
    perm = np.arange(n)
    perm[cycle] = np.roll(cycle, 1)
    return perm


def _cases_gaps(rng):
    return [
        _gaps_args(rng, 6, 8, _cycle(rng, 6)),    # first: a general case where every mistake differs
        _gaps_args(rng, 5, 4, rng.permutation(5)),
        _gaps_args(rng, 4, 6, np.arange(4)),      # the identity: both gaps 0
        _gaps_args(rng, 2, 2, np.array([1, 0])),  # a swap of two tokens
        _gaps_args(rng, 9, 16, _cycle(rng, 9)),
    ]


def _gaps_mistake(body: str) -> str:
    return ("def permutation_gaps(X, E, W_q, W_k, W_v, perm):\n"
            "    def att(Z):\n"
            "        return self_attention(Z, W_q, W_k, W_v)\n\n" + body)


GAPS_MISTAKES = (
    Mistake("positions_travel_with_tokens", "the positional vectors were shuffled together with the tokens: then every "
            "token keeps its own eⁱ and the layer still only permutes; ask whether eⁱ belongs to the token or to the "
            "slot i",
            _gaps_mistake('''    without = np.abs(att(X[perm]) - att(X)[perm]).max()
    with_e = np.abs(att((X + E)[perm]) - att(X + E)[perm]).max()
    return np.array([without, with_e])
''')),
    Mistake("compared_unshuffled", "the outputs for the shuffled inputs were compared with the outputs in their "
            "original order; self-attention is equivariant, not invariant: think about where each output of the "
            "unshuffled sequence goes first",
            _gaps_mistake('''    without = np.abs(att(X[perm]) - att(X)).max()
    with_e = np.abs(att(X[perm] + E) - att(X + E)).max()
    return np.array([without, with_e])
''')),
    Mistake("inverse_permutation", "the outputs were shuffled with the inverse permutation (np.argsort(perm)); the "
            "outputs move the way their inputs were moved, not back",
            _gaps_mistake('''    inv = np.argsort(perm)
    without = np.abs(att(X[perm]) - att(X)[inv]).max()
    with_e = np.abs(att(X[perm] + E) - att(X + E)[inv]).max()
    return np.array([without, with_e])
''')),
    Mistake("positions_after_attention", "the positional vectors were added to the outputs of the layer; the "
            "Transformer adds them to its inputs, aⁱ + eⁱ, before the attention",
            _gaps_mistake('''    without = np.abs(att(X[perm]) - att(X)[perm]).max()
    with_e = np.abs(att(X[perm]) + E - (att(X) + E)[perm]).max()
    return np.array([without, with_e])
''')),
)


TASKS = [
    Task(ASSIGNMENT, "sinusoidal_table", _ref_table, _cases_table, TABLE_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "add_positions", _ref_add, _cases_add, ADD_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "relative_shift_matrix", _ref_shift, _cases_shift, SHIFT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "permutation_gaps", _ref_gaps, _cases_gaps, GAPS_MISTAKES, setup=SETUP),
]
