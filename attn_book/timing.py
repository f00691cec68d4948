"""Timing and memory measurements of the book's chapters (and of ``bench/``): one family.

Every wall time comes from :func:`run_times` (``time.perf_counter`` around each call, after
``warmup`` untimed calls); the chapters report its median (:func:`median_time`), its minimum
(:func:`best_time`) or, for functions compared with one another on a shared machine, the medians of
interleaved rounds (:func:`compare_times`).  Memory comes from :func:`peak_bytes` (``tracemalloc``,
which sees every NumPy array buffer, so it is deterministic; times are not).
"""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np


def run_times(fn, *args, repeat: int = 5, warmup: int = 0, **kwargs) -> list[float]:
    """Wall times in seconds of ``repeat`` calls ``fn(*args, **kwargs)``, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        fn(*args, **kwargs)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return times


def median_time(fn, *args, repeat: int = 5, warmup: int = 1, **kwargs) -> float:
    """Median wall time in seconds of ``fn(*args, **kwargs)`` over ``repeat`` runs after ``warmup`` runs.

    The median, not the mean: on a shared machine a few runs are slowed by other processes.
    """
    return float(np.median(run_times(fn, *args, repeat=repeat, warmup=warmup, **kwargs)))


def best_time(fn, *args, repeat: int = 3, warmup: int = 0, **kwargs) -> float:
    """The fastest of ``repeat`` runs of ``fn(*args, **kwargs)``, in seconds (the least disturbed one)."""
    return min(run_times(fn, *args, repeat=repeat, warmup=warmup, **kwargs))


def compare_times(fns: dict, repeat: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median seconds of each zero-argument callable in ``fns``, measured in interleaved rounds.

    Every round runs each function once, in turn, so that a burst of load from other processes
    slows all of them alike: the *ratios* of the medians are what a shared machine can measure.
    """
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            times[name] += run_times(fn, repeat=1)
    return {name: float(np.median(ts)) for name, ts in times.items()}


def peak_bytes(fn, *args, **kwargs) -> int:
    """Peak bytes allocated while ``fn(*args, **kwargs)`` runs, by :mod:`tracemalloc`.

    NumPy reports its array buffers to tracemalloc, so the figure is deterministic (unlike time).
    """
    tracemalloc.start()
    try:
        fn(*args, **kwargs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(fn, *args, repeat: int = 1) -> tuple[float, int]:
    """``(best time in seconds over repeat runs, peak bytes of one run)`` of ``fn(*args)``.

    The traced run comes first (and serves as the warm-up); the timed runs are not traced.
    """
    peak = peak_bytes(fn, *args)
    return best_time(fn, *args, repeat=repeat), peak


#: The stages of the matrix form softmax(q k^T * scale) v, as :func:`attn_ref.softmax.softmax` runs them.
MATRIX_FORM_STAGES = ("q k^T", "× scale", "row max", "exp(x − m)", "row sum", "divide", "weights v")


def matrix_form_stages(q, k, v, scale: float | None = None, repeat: int = 3) -> dict[str, float]:
    """Median seconds of each stage of the plain matrix form on q (n_q, d_k), k (n_k, d_k), v (n_k, d_v).

    The stages are the NumPy expressions of ``softmax(q @ k.T * scale) @ v`` as one first writes them
    (:func:`attn_ref.softmax.softmax`; each stage allocates a new (n_q, n_k) array), timed one at a time.
    """
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    raw = q @ k.T
    scores = raw * s
    m = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - m)
    total = e.sum(axis=-1, keepdims=True)
    weights = e / total
    stages = {
        "q k^T": lambda: q @ k.T,  # (n_q, d_k) x (d_k, n_k) -> (n_q, n_k)
        "× scale": lambda: raw * s,
        "row max": lambda: scores.max(axis=-1, keepdims=True),
        "exp(x − m)": lambda: np.exp(scores - m),
        "row sum": lambda: e.sum(axis=-1, keepdims=True),
        "divide": lambda: e / total,
        "weights v": lambda: weights @ v,  # (n_q, n_k) x (n_k, d_v) -> (n_q, d_v)
    }
    return {name: median_time(fn, repeat=repeat) for name, fn in stages.items()}
