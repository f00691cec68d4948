"""Sinusoidal positional encoding (lecture: Positional Encoding; Vaswani et al. 2017, sec. 3.5).

Positions are counted from 1 as in the book, i = 1 .. n; the paper counts them from 0, so its
position is p = i - 1. Row i - 1 of the table is the positional vector e^i of position i (m is the
frequency index, omega_m = 1 / 10000^(2m / d_model); entries are numbered from 0, as in the paper):

e^i[2m]   = sin((i - 1) * omega_m)
e^i[2m+1] = cos((i - 1) * omega_m)

Because each (sin, cos) pair rotates at a fixed frequency, e^(i + delta) = R_delta e^i
for a block-diagonal rotation R_delta that depends on the offset delta only
(:func:`shift_matrix`; its argument ``k`` is the offset delta).
"""

from __future__ import annotations

import numpy as np


def _frequencies(d_model: int) -> np.ndarray:
    """omega_m = 1 / 10000^(2m / d_model) for m = 0 .. ceil(d_model / 2) - 1."""
    two_i = np.arange(0, d_model, 2, dtype=np.float64)
    return 1.0 / (10000.0 ** (two_i / d_model))


def sinusoidal_positional_encoding(n_positions: int, d_model: int) -> np.ndarray:
    """The table (n_positions, d_model): row i - 1 is position i's vector e^i; sin on even, cos on odd dims."""
    if n_positions < 0 or d_model < 1:
        raise ValueError(f"expected n_positions >= 0 and d_model >= 1, got ({n_positions}, {d_model})")
    pos = np.arange(n_positions, dtype=np.float64)[:, None]  # (n, 1)
    angles = pos * _frequencies(d_model)[None, :]  # (n, ceil(d/2))
    pe = np.empty((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return pe


def shift_matrix(k: int, d_model: int) -> np.ndarray:
    """R_k (d_model, d_model) with e^(i + k) = R_k @ e^i for every position i (d_model even).

    k is the offset (the book's delta). Block m rotates the pair (sin, cos) of frequency
    omega_m by the angle k * omega_m:
    [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a].
    """
    if d_model % 2:
        raise ValueError(f"d_model: expected an even number, got {d_model}")
    R = np.zeros((d_model, d_model))
    for m, w in enumerate(_frequencies(d_model)):
        c, s = np.cos(k * w), np.sin(k * w)
        R[2 * m : 2 * m + 2, 2 * m : 2 * m + 2] = [[c, s], [-s, c]]
    return R
