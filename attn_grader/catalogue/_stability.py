"""Hidden inputs with large scores, for every task that normalises scores with a softmax (issue 17).

Two kinds of case, so that the two stability mistakes are told apart:

* ``narrow``: every score of a row lies near +1000, a few units apart.  exp(1000) is inf, so a
  softmax that does not subtract the maximum returns NaN; a shift by the row's *minimum* still works.
* ``wide``: each row holds scores near +1000 and near -1000 (a spread of 2000): a shift by the minimum
  overflows too (exp(2000) is inf), only the shift by the maximum survives.
* ``low`` (issue 33): every score of a row lies near -1000, so exp of each underflows to 0.  An answer that
  lets anything else into the row (a masked entry as a score of 0, as softmax(scores * mask) does; an
  epsilon beside the sum) gives that row all the weight or none; a softmax without the max-shift gives 0 / 0.
  ``signed_rows`` and ``rows_signed=`` give some rows all near -1000 and the others all near +1000, both
  always present; where a task masks, the masked entries lie beside the allowed ones in such rows.

Every value is a small integer times a power of two (scales 1/2, 1/4 or 1 only), so a float32 answer
computes the same scores exactly and passes (tests/test_catalogues.py grades a float32 solution).
Which extreme a row takes in a wide case is drawn from ``rng``; both are always present.
"""

from __future__ import annotations

import numpy as np

from ._shared import random_mask

#: The size of the large scores: exp(OFFSET) overflows float64 (exp(709.8) is the largest finite).
OFFSET = 1000.0


def signs(rng: np.random.Generator, n: int) -> np.ndarray:
    """n values +1 and -1 in random order, both present when n >= 2."""
    return rng.permutation(np.resize([1.0, -1.0], n))


def small(rng: np.random.Generator, shape) -> np.ndarray:
    """Small integers -1, 0, 1 (the part of an input that spreads the scores by a few units)."""
    return rng.integers(-1, 2, size=shape).astype(float)


def scores(rng: np.random.Generator, shape, wide: bool, low: bool = False) -> np.ndarray:
    """Raw scores (..., n): OFFSET plus quarter units (narrow; -OFFSET when ``low``), or +-OFFSET along the
    last axis (wide)."""
    out = OFFSET + rng.integers(-8, 9, size=shape) / 4
    if wide:
        out = out * signs(rng, shape if isinstance(shape, int) else shape[-1])
    return -out if low else out


def signed_rows(rng: np.random.Generator, shape) -> np.ndarray:
    """Narrow scores (n, m) whose rows lie all near -OFFSET or all near +OFFSET (both kinds present)."""
    return scores(rng, shape, wide=False) * signs(rng, shape[0])[:, None]


def mask_beside(rng: np.random.Generator, shape) -> np.ndarray:
    """A boolean mask (n, m), m >= 2, with at least one allowed (True) and one masked entry in every row."""
    n, m = shape
    mask = rng.random(shape) < 0.5
    cols = np.array([rng.permutation(m)[:2] for _ in range(n)])
    mask[np.arange(n), cols[:, 0]] = True
    mask[np.arange(n), cols[:, 1]] = False
    return mask


def query_keys(rng: np.random.Generator, n_q: int, n_k: int, d: int, wide: bool, scale: float | None = None,
               rows_signed: bool = False):
    """Q (n_q, d), K (n_k, d) with q_i . k_j * scale = OFFSET (narrow) or +-OFFSET (wide), plus a few units;
    ``rows_signed``: +-OFFSET by query, so that each query's scores are all near +OFFSET or all near -OFFSET.

    scale: None means 1/sqrt(d); d must be 1, 4 or 16 (a power of two square root, exact in float32).
    Column 0 carries the large common component, the other columns are small integers.
    """
    scale = 1 / np.sqrt(d) if scale is None else scale
    Q, K = small(rng, (n_q, d)), small(rng, (n_k, d))
    Q[:, 0] = 40.0 * (signs(rng, n_q) if wide or rows_signed else 1.0)
    K[:, 0] = OFFSET / (40.0 * scale) * (signs(rng, n_k) if wide else 1.0)
    return Q, K


def projections(rng: np.random.Generator, n: int, d_in: int, d_k: int, d_v: int, wide: bool, heads: int = 1,
                scale: float | None = None, rows_signed: bool = False):
    """x (n, d_in) and W_q, W_k (d_k, d_in), W_v (d_v, d_in) whose scores are large (row layout).

    Column 0 of x is a large common component (10, or +-10 when ``wide``); the first row of each head's
    block of W_q and W_k reads only that column, the other rows only the small integers of the other
    columns.  So head h's score q^{i,h} . k^{j,h} * scale is OFFSET (narrow; +-OFFSET wide) plus a few
    units.  ``rows_signed``: column 0 is +-10 and column 1 is 10, the queries read column 0 and the keys
    column 1, so that query i's scores are all near +OFFSET or all near -OFFSET (d_in >= 3).
    scale: None means 1/sqrt(d_k / heads); d_k / heads must be 1, 4 or 16.
    """
    d_h = d_k // heads
    scale = 1 / np.sqrt(d_h) if scale is None else scale
    x = small(rng, (n, d_in))
    x[:, 0] = 10.0 * (signs(rng, n) if wide or rows_signed else 1.0)
    W_q, W_k, W_v = small(rng, (d_k, d_in)), small(rng, (d_k, d_in)), small(rng, (d_v, d_in))
    W_q[:, 0] = W_k[:, 0] = 0.0
    key_column = 0
    if rows_signed:
        x[:, 1] = 10.0
        W_q[:, 1] = W_k[:, 1] = 0.0
        key_column = 1
    for h in range(heads):
        r = h * d_h
        W_q[r], W_k[r] = 0.0, 0.0
        W_q[r, 0] = 4.0
        W_k[r, key_column] = OFFSET / (400.0 * scale)  # (4 * 10) * (W_k[r, 0] * 10) * scale = OFFSET
    return x, W_q, W_k, W_v


def wide_masked_scores(rng: np.random.Generator, n: int, p: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    """Scores near +1000 in some columns and -1000 in the others, and a random mask (the diagonal allowed) that
    lets every query attend to one of each."""
    scores_ = scores(rng, (n, n), wide=True)
    mask = random_mask(rng, n, p)
    mask[:, [np.argmax(scores_[0]), np.argmin(scores_[0])]] = True
    return scores_, mask


def nan_on_masked_row(what: str = "a row whose entries are all masked", row: str = "row") -> str:
    """The message of ``nan_on_masked_row``: why a fully masked row gave NaN, and what to do instead."""
    return (f"{what} gave NaN: its maximum is -inf, and -inf - (-inf) is NaN (then 0 / 0); such a {row} has "
            f"no weight to give and must be all zeros: subtract 0 where the maximum is -inf and divide by 1 "
            f"where the sum is 0")


def not_stabilised(where: str = "each row's") -> str:
    """The message of ``not_stabilised``: no shift before exp."""
    return (f"exp was taken of the raw scores without subtracting {where} maximum, so exp overflows for large "
            f"scores (exp(710) is already inf) and the weights become NaN; subtract the maximum first: "
            f"softmax(s) = softmax(s - max s), and every exponent is then <= 0")


def shifted_by_min(where: str = "each row's") -> str:
    """The message of ``shifted_by_min``: the wrong extreme subtracted."""
    return (f"{where} minimum was subtracted before exp instead of the maximum: exp(s - min s) reaches "
            f"exp(max s - min s), which overflows once the scores spread over more than about 709 (scores "
            f"near +1000 and -1000); subtract the maximum, so that every exponent is <= 0")


def filled_with_large_negative(where: str, row: str = "a row whose entries are all masked", what: str = "key") -> str:
    """The message of a mask filled with a large finite negative number (-1e9, finfo.min, -9e15) instead of -inf,
    the commonest masking in real code: right wherever a row has an allowed entry, uniform on a fully masked row."""
    return (f"the masked scores were filled with a large negative number ({where}) instead of -inf: {row} then "
            f"gets the uniform weight 1/n on every {what} instead of zero weights; fill with -inf, and give a row "
            f"with no allowed entry zeros")


def renormalised_after_softmax(what: str = "key", blocked: str = "blocked") -> str:
    """The message of ``renormalised_after_softmax`` (issue 41): a softmax over every entry, the blocked weights
    zeroed after it and the rest renormalised; equal to the masked softmax until a blocked score beats the allowed
    ones by about 745, where every allowed exp underflows to 0 before the zeroing."""
    return (f"the softmax ran over the {blocked} {what}s too, and their weights were zeroed and the rest renormalised "
            f"afterwards: a {blocked} {what} with a large score (about 745 above the allowed ones) takes all the "
            f"weight before you zero it, and the allowed weights underflow to 0; mask the scores (-inf) first, then "
            f"take the softmax")


def blocked_high(rng: np.random.Generator, allowed: np.ndarray) -> np.ndarray:
    """Scores whose allowed entries are small integers and whose blocked entries lie near +OFFSET (issue 41): a
    softmax over the whole row gives the allowed entries exp(-1000) = 0 before any mask is applied."""
    return np.where(allowed, small(rng, allowed.shape), scores(rng, allowed.shape, wide=False))
