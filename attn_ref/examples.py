"""The book's small integer example, used by the chapters "Self-attention step by step" and "Matrix form".

Four input vectors a^1..a^4 (d_in = 3) as the columns of ``a``, and weights with small integer
entries, chosen for this book (the lecture draws its vectors without numbers), so that every step of
the lecture can be redone on paper: with the lecture's unscaled
scores (``scale=1.0``) query 1 gets alpha_{1,.} = (1, 2, 0, -1).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Example(NamedTuple):
    """a: (d_in, n) = (3, 4) columns a^j; W_q, W_k: (d_k, d_in) = (2, 3); W_v: (d_v, d_in) = (2, 3)."""

    a: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray


def lecture_example() -> Example:
    """A fresh copy of the book's worked example (float64 arrays, safe to modify)."""
    a = np.array([[1.0, 2.0, 0.0, -1.0],  # (d_in, n) = (3, 4): column j is a^j
                  [-1.0, 1.0, -1.0, -1.0],
                  [0.0, 0.0, 2.0, 0.0]])
    W_q = np.array([[1.0, 1.0, 0.0], [0.0, -1.0, 0.0]])  # (d_k, d_in)
    W_k = np.array([[-1.0, 1.0, -1.0], [1.0, 0.0, 0.0]])  # (d_k, d_in)
    W_v = np.array([[1.0, 1.0, 0.0], [-1.0, 1.0, 1.0]])  # (d_v, d_in); 2-D so the outputs can be drawn
    return Example(a, W_q, W_k, W_v)
