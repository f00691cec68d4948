"""Input checks shared by every function of :mod:`attn_ref`.

Each check raises :class:`ValueError` that names the expected shape and the one
received, so that a reader (or a student's grader) sees what went wrong.
"""

from __future__ import annotations

import numpy as np


def as_array(x, name: str) -> np.ndarray:
    """Return ``x`` as a float ndarray (integers become float64)."""
    arr = np.asarray(x)
    if arr.dtype.kind in "biu":
        arr = arr.astype(np.float64)
    if arr.dtype.kind not in "fc":
        raise ValueError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
    return arr


def check_ndim(x: np.ndarray, name: str, ndim: int, layout: str) -> None:
    """Require ``x.ndim == ndim``; ``layout`` is the expected shape in words, e.g. ``(d_in, n)``."""
    if x.ndim != ndim:
        raise ValueError(f"{name}: expected shape {layout}, got {x.shape} ({x.ndim}-D)")


def check_min_ndim(x: np.ndarray, name: str, ndim: int, layout: str) -> None:
    """Require ``x.ndim >= ndim``."""
    if x.ndim < ndim:
        raise ValueError(f"{name}: expected shape {layout}, got {x.shape} ({x.ndim}-D)")


def check_dim(actual: int, expected: int, what: str, layout: str, shape) -> None:
    """Require one dimension to match another one."""
    if actual != expected:
        raise ValueError(
            f"{what}: expected {expected} to match, got {actual} "
            f"(expected shape {layout}, got {tuple(shape)})"
        )


def as_qkv(q, k, v, same_length: bool = False):
    """q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v) as arrays, their shapes checked.

    ``same_length``: self-attention, where n_q must equal n_k.
    """
    q, k, v = as_array(q, "q"), as_array(k, "k"), as_array(v, "v")
    check_min_ndim(q, "q", 2, "(..., n_q, d_k)")
    check_min_ndim(k, "k", 2, "(..., n_k, d_k)")
    check_min_ndim(v, "v", 2, "(..., n_k, d_v)")
    check_dim(k.shape[-1], q.shape[-1], "k's d_k vs q's", "(..., n_k, d_k)", k.shape)
    if same_length:
        check_dim(k.shape[-2], q.shape[-2], "k's n vs q's (self-attention)", "(..., n, d_k)", k.shape)
    check_dim(v.shape[-2], k.shape[-2], "v's n_k vs k's", "(..., n_k, d_v)", v.shape)
    return q, k, v


def default_scale(d_k: int, scale: float | None) -> float:
    """The paper's (and PyTorch's) default 1/sqrt(d_k); ``scale=1.0`` gives the lecture's unscaled scores.

    A Python float (not a numpy float64) so that float32 arrays stay float32.
    """
    if scale is None:
        return 1.0 / float(np.sqrt(d_k))
    return float(scale)


def check_positive_int(value, name: str) -> int:
    """Require a whole number >= 1 (a size: a number of features, a width, bytes); returns it as int."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name}: expected a whole number >= 1, got {value!r}")
    return int(value)
