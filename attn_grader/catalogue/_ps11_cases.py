"""ps11_graphs' hidden inputs with large scores (issues 17, 33, 41), kept here so that the catalogue stays short;
:mod:`attn_grader.catalogue.ps11_graphs` draws them in its case generators (hidden tests and re-check alike).
"""

from __future__ import annotations

import numpy as np

from . import _stability
from ._shared import random_mask


def masked_high(rng):
    """Masked scores of +1000 beside allowed ones near 0: subtract the allowed entries' max."""
    mask = random_mask(rng, 5, 0.4) & ~np.eye(5, k=1, dtype=bool)  # key i + 1 masked for each query i < 4
    return np.where(mask, rng.standard_normal((5, 5)), 1e3), mask


def large_gat_args(rng, n, d_in, d_out, wide, rows_signed=False):
    """Scores e_ij = LeakyReLU(a_dst . W x_i + a_src . W x_j) near +1000 for every i, j (narrow: a_dst reads a
    large common component of x); wide: a_src reads it as +-10, so e_ij is near +1000 or 0.2 * -1000;
    rows_signed: a_dst reads it as +-10, five times stronger, so row i is all near +5000 or all near
    0.2 * -5000 = -1000, with masked entries beside them (issue 33)."""
    X = _stability.small(rng, (n, d_in))
    X[:, 0] = 10.0 * (_stability.signs(rng, n) if wide or rows_signed else 1.0)
    W = _stability.small(rng, (d_out, d_in))
    W[:, 0], W[0] = 0.0, 0.0
    W[0, 0] = 4.0  # (W x_i)[0] = 40 or +-40
    X[:, 1] = rng.permutation(np.resize([1.0, 0.0, -1.0], n))
    W[1, :2] = 0.0, 1.0  # (W x_j)[1] = x_j[1] + ...: the neighbours' scores differ by a few units
    a_src, a_dst = _stability.small(rng, d_out), _stability.small(rng, d_out)
    a_src[1] = 1.0
    (a_src if wide else a_dst)[0] = _stability.OFFSET / 40.0 * (5.0 if rows_signed else 1.0)
    (a_dst if wide else a_src)[0] = 0.0
    if rows_signed:
        return X, _stability.mask_beside(rng, (n, n)), W, a_src, a_dst
    mask = random_mask(rng, n, 0.4)
    if wide:  # every node attends to a node of each sign: its scores spread over about 1200
        mask[:, [np.argmax(X[:, 0]), np.argmin(X[:, 0])]] = True
    return X, mask, W, a_src, a_dst
