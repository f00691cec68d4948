"""Sinusoidal positional encoding (lecture: Positional Encoding; Vaswani et al. 2017, sec. 3.5).

PE[pos, 2i]   = sin(pos / 10000^(2i / d_model))
PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model))

Because each (sin, cos) pair rotates at a fixed frequency, PE(pos + k) = M_k PE(pos)
for a block-diagonal rotation M_k that depends on k only (:func:`shift_matrix`).
"""

from __future__ import annotations

import numpy as np


def _frequencies(d_model: int) -> np.ndarray:
    """omega_i = 1 / 10000^(2i / d_model) for i = 0 .. ceil(d_model / 2) - 1."""
    two_i = np.arange(0, d_model, 2, dtype=np.float64)
    return 1.0 / (10000.0 ** (two_i / d_model))


def sinusoidal_positional_encoding(n_positions: int, d_model: int) -> np.ndarray:
    """The table PE (n_positions, d_model): row pos is position pos's vector e^pos; sin on even, cos on odd dims."""
    if n_positions < 0 or d_model < 1:
        raise ValueError(f"expected n_positions >= 0 and d_model >= 1, got ({n_positions}, {d_model})")
    pos = np.arange(n_positions, dtype=np.float64)[:, None]  # (n, 1)
    angles = pos * _frequencies(d_model)[None, :]  # (n, ceil(d/2))
    pe = np.empty((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return pe


def shift_matrix(k: int, d_model: int) -> np.ndarray:
    """M_k (d_model, d_model) with PE[pos + k] = M_k @ PE[pos] for every pos (d_model even).

    Block i rotates the pair (sin, cos) of frequency omega_i by the angle k * omega_i:
    [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a].
    """
    if d_model % 2:
        raise ValueError(f"d_model: expected an even number, got {d_model}")
    M = np.zeros((d_model, d_model))
    for i, w in enumerate(_frequencies(d_model)):
        c, s = np.cos(k * w), np.sin(k * w)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return M
