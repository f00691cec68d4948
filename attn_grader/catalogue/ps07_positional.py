"""Catalogue of ps07_positional: the sinusoidal table, adding it, and the shift matrix M_k.

Practises the chapter "Positional encoding" (位置编码): for i = 0 .. d/2 - 1,
PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)), positions
pos = 0 .. n-1; the inputs become a^i + e^i; PE[pos + k] = M_k PE[pos] with M_k block-diagonal,
block i = [[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]], w_i = 10000^(-2i/d).
d is even throughout.
References: :func:`attn_ref.positional.sinusoidal_positional_encoding`, :func:`~attn_ref.positional.shift_matrix`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.positional import shift_matrix, sinusoidal_positional_encoding

from ..checking.core import Mistake, Task

ASSIGNMENT = "ps07_positional"
#: The notebook's setup cell.
SETUP = "import numpy as np"


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
    Mistake("sin_cos_swapped", "cos was put on the even dimensions and sin on the odd ones; PE[pos, 2i] is "
            "the sine, PE[pos, 2i+1] the cosine",
            _table_mistake("pos / 10000 ** (2 * i / d)",
                           "    PE[:, 0::2] = np.cos(angles)\n    PE[:, 1::2] = np.sin(angles)\n")),
    Mistake("exponent_i_over_d", "the exponent was i/d instead of 2i/d (i counts the (sin, cos) pairs), "
            "so the frequencies fall only half as fast",
            _table_mistake("pos / 10000 ** (i / d)")),
    Mistake("exponent_per_dimension", "each dimension j got its own frequency 10000^(-j/d) (or 10000^(-2j/d)); "
            "the sine and cosine of a pair share one frequency w_i = 10000^(-2i/d)",
            "def sinusoidal_table(n, d):\n"
            "    pos = np.arange(n)[:, None]\n"
            "    j = np.arange(d)[None, :]\n"
            "    angles = pos / 10000 ** (j / d)\n"
            "    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))\n"),
    Mistake("base_1000", "the base was 1000 instead of 10000", _table_mistake("pos / 1000 ** (2 * i / d)")),
    Mistake("positions_from_1", "positions were counted from 1; the first row is position 0 "
            "(sin 0 = 0, cos 0 = 1)", _table_mistake("pos / 10000 ** (2 * i / d)", pos="np.arange(1, n + 1)[:, None]")),
    Mistake("halves_not_interleaved", "all the sines were put in the first half and all the cosines in the "
            "second; they alternate: even dimensions sin, odd dimensions cos",
            _table_mistake("pos / 10000 ** (2 * i / d)",
                           "    PE[:, : d // 2] = np.sin(angles)\n    PE[:, d // 2 :] = np.cos(angles)\n")),
    Mistake("multiplied_not_divided", "pos was multiplied by 10000^(2i/d) instead of divided by it",
            _table_mistake("pos * 10000 ** (2 * i / d)")),
    Mistake("block_layout_of_fairseq", "this is the layout of fairseq and tensor2tensor: all sines, then all "
            "cosines, with frequencies 10000^(-i/(d/2 - 1)); the table of Vaswani et al. (and this task) "
            "interleaves them (PE[pos, 2i] = sin, PE[pos, 2i+1] = cos) with frequencies 10000^(-2i/d)",
            "import math\n\n\ndef sinusoidal_table(n, d):\n"
            "    half = d // 2\n"
            "    freq = np.exp(np.arange(half) * -(math.log(10000) / (half - 1)))  # d = 2: ZeroDivisionError\n"
            "    angles = np.arange(n)[:, None] * freq[None, :]\n"
            "    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)\n"),
    Mistake("block_layout_of_tensor2tensor", "this is the layout of tensor2tensor: all sines, then all cosines, "
            "with frequencies 10000^(-i/max(d/2 - 1, 1)); the table of Vaswani et al. (and this task) "
            "interleaves them (PE[pos, 2i] = sin, PE[pos, 2i+1] = cos) with frequencies 10000^(-2i/d)",
            "import math\n\n\ndef sinusoidal_table(n, d):\n"
            "    half = d // 2\n"
            "    freq = np.exp(np.arange(half) * -(math.log(10000) / max(half - 1, 1)))\n"
            "    angles = np.arange(n)[:, None] * freq[None, :]\n"
            "    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)\n"),
    Mistake("exponent_doubled", "the exponent was doubled: 2i/d was computed from indices that already step "
            "by 2 (0, 2, 4, ...), giving 10000^(4i/d); use either i = 0, 1, 2, ... with 2i/d or "
            "2i = 0, 2, 4, ... with 2i/d, not both",
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
    ]


_TABLE = '''def _table(n, d, first=0):
    pos = np.arange(first, first + n)[:, None]
    angles = pos / 10000 ** (np.arange(0, d, 2)[None, :] / d)
    PE = np.zeros((n, d))
    PE[:, 0::2], PE[:, 1::2] = np.sin(angles), np.cos(angles)
    return PE


'''

ADD_MISTAKES = (
    Mistake("concatenated", "eⁱ was concatenated to aⁱ; the lecture adds it, aⁱ + eⁱ, keeping shape (..., n, d)",
            _TABLE + '''def add_positions(X):
    n, d = X.shape[-2], X.shape[-1]
    return np.concatenate([X, np.broadcast_to(_table(n, d), X.shape)], axis=-1)
'''),
    Mistake("positions_from_1", "the positions were counted from 1; a¹ (row 0) gets e for position 0",
            _TABLE + '''def add_positions(X):
    return X + _table(X.shape[-2], X.shape[-1], first=1)
'''),
    Mistake("table_transposed", "the table was built with the roles of n and d exchanged (d positions, n "
            "dimensions) and transposed; row i of the table is eⁱ, built from n positions and d dimensions",
            _TABLE + '''def add_positions(X):
    n, d = X.shape[-2], X.shape[-1]
    return X + _table(d, n).T
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
            "is M₋ₖ, which moves back by k; with PE = (sin, cos) pairs the block is [[cos, sin], [-sin, cos]]",
            _shift_mistake("1 / 10000 ** (2 * i / d)", "[[c, -s], [s, c]]")),
    Mistake("angle_without_frequency", "each block turned by the angle k; pair i turns by k * w_i with "
            "w_i = 10000^(-2i/d)", _shift_mistake("1.0", "[[c, s], [-s, c]]")),
    Mistake("exponent_i_over_d", "the frequency was 10000^(-i/d) instead of 10000^(-2i/d)",
            _shift_mistake("1 / 10000 ** (i / d)", "[[c, s], [-s, c]]")),
    Mistake("sin_terms_missing", "the blocks were cos(k w_i) times the identity, without the sin terms; "
            "sin(a+b) = cos(b) sin(a) + sin(b) cos(a) mixes the two entries of a pair",
            _shift_mistake("1 / 10000 ** (2 * i / d)", "[[c, 0], [0, c]]")),
)


TASKS = [
    Task(ASSIGNMENT, "sinusoidal_table", _ref_table, _cases_table, TABLE_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "add_positions", _ref_add, _cases_add, ADD_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "relative_shift_matrix", _ref_shift, _cases_shift, SHIFT_MISTAKES, setup=SETUP),
]
