"""Timing and memory measurements of the book's chapters (and of ``bench/``): one family.

Every time comes from :func:`run_times` (a clock read around each call, after ``warmup`` untimed
calls; wall time by default); the chapters report its median (:func:`median_time`) or, for
functions compared with one another on a shared machine, the medians (:func:`compare_times`) or
the fastest CPU times (:func:`fastest_times`, what the book's speed claims use) of interleaved
rounds.  Memory comes
from :func:`peak_bytes` (``tracemalloc``, which sees every NumPy array buffer, so it is
deterministic; times are not).  :func:`busy_processes` loads the machine, for the tests and
``make bench`` that check the book still builds on a busy computer.
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator

import numpy as np


def run_times(fn, *args, repeat: int = 5, warmup: int = 0, clock=time.perf_counter, **kwargs) -> list[float]:
    """Times in seconds of ``repeat`` calls ``fn(*args, **kwargs)``, after ``warmup`` untimed calls.

    ``clock``: ``time.perf_counter`` (wall time) or ``time.process_time`` (this process's CPU time).
    """
    for _ in range(warmup):
        fn(*args, **kwargs)
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn(*args, **kwargs)
        times.append(clock() - t0)
    return times


def median_time(fn, *args, repeat: int = 5, warmup: int = 1, **kwargs) -> float:
    """Median wall time in seconds of ``fn(*args, **kwargs)`` over ``repeat`` runs after ``warmup`` runs.

    The median, not the mean: on a shared machine a few runs are slowed by other processes.
    """
    return float(np.median(run_times(fn, *args, repeat=repeat, warmup=warmup, **kwargs)))


def compare_times(fns: dict, repeat: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median seconds of each zero-argument callable in ``fns``, measured in interleaved rounds.

    Every round runs each function once, in turn, so that a burst of load from other processes
    slows all of them alike: the *ratios* of the medians are what a shared machine can measure.
    """
    return {name: float(np.median(ts)) for name, ts in _interleaved(fns, repeat, warmup).items()}


def fastest_times(fns: dict, repeat: int = 5, warmup: int = 1, clock=time.process_time) -> dict[str, float]:
    """The fastest CPU seconds of each zero-argument callable in ``fns``, measured in interleaved rounds.

    What the book's speed claims use, for code that runs on one thread (NumPy's BLAS limited with
    threadpoolctl, ``torch.set_num_threads(1)``).  The clock is this process's CPU time, which
    does not count the time other processes hold the cores (a busy machine multiplies wall times,
    and a call preempted once by a few milliseconds); what is left, caches shared with other
    processes, only slows a run down, so the fastest of several runs is the least disturbed, and
    interleaving spreads what remains over all the functions compared.  ``clock=time.perf_counter``
    for wall time.
    """
    return {name: min(ts) for name, ts in _interleaved(fns, repeat, warmup, clock).items()}


def _interleaved(fns: dict, repeat: int, warmup: int, clock=time.perf_counter) -> dict[str, list[float]]:
    """``repeat`` rounds, each timing every function of ``fns`` once in turn, after ``warmup`` untimed rounds."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            times[name] += run_times(fn, repeat=1, clock=clock)
    return times


@contextlib.contextmanager
def busy_processes(n: int = 2) -> Iterator[list[int]]:
    """``n`` CPU-bound processes (``python -c "while True: pass"``) running while the block runs.

    Yields their process ids; they are killed on the way out, also when the block raises.
    """
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


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
