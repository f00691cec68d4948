"""Numerically stable softmax (the lecture's normalisation step, 归一化).

softmax(x)_j = exp(x_j - max x) / sum_l exp(x_l - max x)

Subtracting the maximum changes nothing mathematically (softmax is shift
invariant) but keeps ``exp`` from overflowing for scores like 1e4.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array


def softmax(x, axis: int = -1) -> np.ndarray:
    """Softmax of ``x`` along ``axis``; any shape, dtype kept (float32 stays float32).

    Masked entries are ``-inf``. A slice whose entries are *all* ``-inf`` (a query
    that may attend to nothing) returns all zeros, not NaN: it has no weight to
    give. This is the documented convention of every attention function in
    :mod:`attn_ref` (its output for such a query is the zero vector).
    """
    x = as_array(x, "x")
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isneginf(m), 0, m)  # fully masked slice: avoid (-inf) - (-inf) = nan
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(s == 0, 1, s)
