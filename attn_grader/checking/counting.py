"""What the self-check says of a wrong count (issue 41): how it differs, never the expected value.

A count (bytes moved, memory of the scores) is a whole number a student can copy: printed on the notebook's own
question, it answers it.  :func:`attn_grader.checking.core.examine` with ``reveal=False`` (the self-check) says
instead whether the answer is too large or too small, and by what simple factor.
"""

from __future__ import annotations

import numpy as np


def is_counting(expected) -> bool:
    """An output that is a number, or a tuple of numbers, all whole (a count of bytes, of steps; not an array of
    indices): the self-check never shows its value."""
    if isinstance(expected, tuple | list):
        return all(is_counting(e) for e in expected)
    arr = np.asarray(expected)
    if arr.ndim:
        return False
    return arr.dtype.kind in "iu" or (arr.dtype.kind == "f" and bool(np.all(np.isfinite(arr))) and
                                      bool(np.all(arr == np.round(arr))) and bool(np.all(np.abs(arr) >= 2)))


def describe_count(got, expected, path: str = "output") -> str | None:
    """What differs between two outputs of whole numbers, without the expected value: the shape, or for the
    first value that differs, too large or too small and by what simple factor (``2 times``, ``half``)."""
    if isinstance(expected, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(expected):
            return f"{path}: expected a tuple of {len(expected)} values"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            if msg := describe_count(g, e, f"{path}[{i}]"):
                return msg
        return None
    try:
        from .core import to_numpy

        g, e = np.asarray(to_numpy(got), dtype=float), np.asarray(expected, dtype=float)
    except Exception:  # noqa: BLE001
        return f"{path}: expected numbers, got {type(got).__name__}"
    if g.shape != e.shape:
        return f"{path}: expected shape {e.shape}, got {g.shape}"
    bad = ~np.isclose(g, e, rtol=0, atol=0.5)
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    gv, ev = float(g[where]), float(e[where])
    at = f" at index {where}" if g.ndim else ""
    if not np.isfinite(gv) or ev == 0 or gv == 0 or (gv > 0) != (ev > 0):
        return f"{path}{at}: wrong ({'not a finite number' if not np.isfinite(gv) else 'wrong sign or zero'})"
    ratio = gv / ev
    size = "too large" if abs(gv) > abs(ev) else "too small"
    for k in (2, 3, 4, 8):
        if abs(ratio - k) < 1e-3 * k:
            return f"{path}{at}: {size}, {k} times the expected value"
        if abs(ratio - 1 / k) < 1e-3 / k:
            return f"{path}{at}: {size}, 1/{k} of the expected value"
    near = "close to it (within 10%)" if abs(ratio - 1) < 0.1 else "not by a simple factor"
    return f"{path}{at}: {size}, {near}"
