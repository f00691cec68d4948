"""Attention without the n x n matrix: the online softmax, block by block.

The matrix form softmax(Q K^T * scale) V (see :mod:`attn_ref.attention`) holds the
scores of every query against every key, an (n, n) array: 64 MiB in float32 at
n = 4096, 1 GiB at n = 16384.  Two observations remove it (Milakov & Gimelshein 2018,
"Online normalizer calculation for softmax"; Dao et al. 2022, FlashAttention):

1. the softmax of a row can be computed in **one streaming pass**: keep a running
   maximum ``m`` and a running sum ``l = sum_j exp(x_j - m)``; when a larger maximum
   ``m'`` arrives, the old sum is rescaled by ``exp(m - m')``;
2. the output row ``b = sum_j softmax(x)_j v^j`` is a weighted sum, so it can be
   accumulated unnormalised alongside ``l`` (rescaled by the same factor) and divided
   by ``l`` once at the end.

So :func:`blocked_attention` takes the keys and values in blocks of ``block`` rows
and the queries in blocks too: only a (block_q, block) tile of scores exists at any
time, memory O(n * block) instead of O(n^2).  The attention weights are never formed
(that is the point), so the function returns the output only.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ._checks import as_array, as_qkv


class OnlineSoftmax(NamedTuple):
    """What :func:`online_softmax_trace` records after each block of one row."""

    m: np.ndarray  # (n_blocks,) running maximum after each block
    l: np.ndarray  # (n_blocks,) running sum of exp(x_j - m) after each block  # noqa: E741
    softmax: np.ndarray  # (n,) the softmax of the row, from the final m and l


def online_softmax_trace(x, block: int) -> OnlineSoftmax:
    """Softmax of one row ``x`` (n,) read ``block`` entries at a time (Milakov & Gimelshein 2018, alg. 3).

    After each block: m_new = max(m, max(block)); l = l * exp(m - m_new) + sum exp(block - m_new).
    Returns the running m and l after every block and the softmax exp(x - m) / l.
    A row of only -inf gives zeros (the :func:`attn_ref.softmax` convention).
    """
    x = as_array(x, "x")
    if x.ndim != 1:
        raise ValueError(f"x: expected shape (n,), got {x.shape} ({x.ndim}-D)")
    if block < 1:
        raise ValueError(f"block: expected a block size >= 1, got {block}")
    m, l = -np.inf, 0.0  # noqa: E741
    ms, ls = [], []
    for j0 in range(0, len(x), block):
        xb = x[j0:j0 + block]
        m_new = max(m, float(xb.max()))
        if m_new > -np.inf:
            l = l * math.exp(m - m_new) + float(np.exp(xb - m_new).sum())  # noqa: E741
        m = m_new
        ms.append(m)
        ls.append(l)
    if l == 0:
        p = np.zeros_like(x)
    else:
        p = np.exp(x - x.dtype.type(m)) / x.dtype.type(l)
    return OnlineSoftmax(np.array(ms, dtype=x.dtype), np.array(ls, dtype=x.dtype), p)


def _blocks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(start + size, n)


def _with_ones(v: np.ndarray, dtype) -> np.ndarray:
    """v (n_k, d_v) with a column of ones appended (n_k, d_v + 1): the product that accumulates
    sum_j p_j v^j then also gives the running sum l = sum_j p_j, with no pass of its own."""
    v1 = np.empty((v.shape[0], v.shape[1] + 1), dtype=dtype)
    v1[:, :-1] = v
    v1[:, -1] = 1
    return v1


def _attention_rows(q, k, v1, mask, causal: bool, row_blocks, block_q: int, block_k: int, out) -> None:
    """Attention of the query blocks ``row_blocks`` [(i0, i1), ...] into ``out`` (n_q, d_v); q already scaled.

    q: (n_q, d_k), k: (n_k, d_k), v1: (n_k, d_v + 1) from :func:`_with_ones`; mask: (n_q, n_k) or None.
    """
    n_k, d_v = k.shape[0], v1.shape[1] - 1
    dtype = out.dtype
    k_t = k.T  # (d_k, n_k), a view: BLAS reads the transpose
    scores = np.empty((block_q, block_k), dtype=dtype)  # the only score tile that ever exists
    tile_out = np.empty((block_q, d_v + 1), dtype=dtype)
    neg_inf = dtype.type(-np.inf)
    for i0, i1 in row_blocks:
        r = i1 - i0
        m = np.full((r, 1), neg_inf, dtype=dtype)  # running maximum per query
        acc = np.zeros((r, d_v + 1), dtype=dtype)  # unnormalised output | running sum l
        for j0, j1 in _blocks(n_k, block_k):
            if causal and j0 > i1 - 1:
                break  # every key of this and later blocks is in every query's future
            s = scores[:r, : j1 - j0]
            np.matmul(q[i0:i1], k_t[:, j0:j1], out=s)  # (r, d_k) x (d_k, c) -> (r, c)
            if mask is not None:
                mb = mask[i0:i1, j0:j1]
                if mb.dtype == bool:
                    np.copyto(s, neg_inf, where=~mb)
                else:
                    s += mb
            if causal and j1 - 1 > i0:
                future = np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None]  # (r, c)
                np.copyto(s, neg_inf, where=future)
            m_new = np.maximum(m, s.max(axis=1, keepdims=True))  # (r, 1)
            m_safe = np.where(np.isneginf(m_new), dtype.type(0), m_new)  # fully masked so far: no -inf - -inf
            correction = np.exp(m - m_safe)  # exp(m_old - m_new) <= 1, 0 while m_old = -inf
            s -= m_safe
            np.exp(s, out=s)  # p_ij = exp(x_ij - m_new), in place
            acc *= correction
            np.matmul(s, v1[j0:j1], out=tile_out[:r])  # (r, c) x (c, d_v + 1) -> (r, d_v + 1)
            acc += tile_out[:r]
            m = m_new
        l = acc[:, d_v:]  # (r, 1)  # noqa: E741
        np.divide(acc[:, :d_v], np.where(l == 0, dtype.type(1), l), out=out[i0:i1])  # no key: zeros


def blocked_attention(q, k, v, mask=None, scale: float | None = None, block: int = 512, *,
                      causal: bool = False, block_q: int | None = None):
    """softmax(q k^T * scale + mask) v without forming the (n_q, n_k) matrix.

    q: (..., n_q, d_k), k: (..., n_k, d_k), v: (..., n_k, d_v), batch dims broadcast;
    mask: None, or broadcastable to (..., n_q, n_k), boolean (True = may attend) or
    additive float, as in :func:`attn_ref.attention.scaled_dot_product_attention`
    (a dense mask is itself n_q x n_k: for long sequences use ``causal=True``);
    causal: key j may be attended by query i only when j <= i (PyTorch's ``is_causal``);
    scale: None means 1/sqrt(d_k); block: keys per block; block_q: queries per block
    (default ``min(block, 256)``).
    Returns the output (..., n_q, d_v) only: the weights are never formed.  A query that
    may attend to no key gets a zero output.  The dtype of the inputs is kept (float32
    stays float32): peak memory O((n_q + n_k) * d + block_q * block) per thread.
    For large inputs the query blocks are shared among as many Python threads as NumPy's BLAS
    may use (``threadpoolctl.threadpool_limits`` sets that), each running BLAS on one thread.
    """
    q, k, v = as_qkv(q, k, v)
    if block < 1 or (block_q is not None and block_q < 1):
        raise ValueError(f"block: expected block sizes >= 1, got block={block}, block_q={block_q}")
    dtype = np.result_type(q, k, v)
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"k, v: expected batch dims that broadcast with q's {q.shape[:-2]}, "
                         f"got {k.shape[:-2]} and {v.shape[:-2]}") from None
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool and mask.dtype.kind not in "fiu":
            raise ValueError(f"mask: expected a boolean or float array, got dtype {mask.dtype}")
        try:
            batch = np.broadcast_shapes(batch, mask.shape[:-2]) if mask.ndim > 2 else batch
            mask = np.broadcast_to(mask, (*batch, n_q, n_k))  # a view: no copy
        except ValueError:
            raise ValueError(f"mask: expected a shape that broadcasts to (..., {n_q}, {n_k}), "
                             f"got {mask.shape}") from None
        if mask.dtype != bool:
            mask = mask.astype(dtype, copy=False)
    s = 1.0 / math.sqrt(d_k) if scale is None else float(scale)  # a Python float keeps float32
    q = np.broadcast_to(q, (*batch, n_q, d_k))
    k = np.broadcast_to(k, (*batch, n_k, d_k))
    v = np.broadcast_to(v, (*batch, n_k, d_v))
    out = np.empty((*batch, n_q, d_v), dtype=dtype)
    bq = min(block, 256) if block_q is None else block_q
    bq, bk = max(1, min(bq, n_q)), max(1, min(block, n_k))
    row_blocks = list(_blocks(n_q, bq))
    big = n_q * n_k * math.prod(batch) >= 1 << 20
    workers, one_blas_thread = _workers_and_limiter(len(row_blocks)) if big else (1, contextlib.nullcontext())
    with one_blas_thread, ThreadPoolExecutor(workers) if workers > 1 else contextlib.nullcontext() as pool:
        for idx in np.ndindex(*batch):
            q_scaled = np.multiply(q[idx], dtype.type(s), dtype=dtype)  # (n_q, d_k), scaled once
            v1 = _with_ones(v[idx], dtype)  # (n_k, d_v + 1)
            args = (q_scaled, k[idx], v1, None if mask is None else mask[idx], causal)
            if pool is None:
                _attention_rows(*args, row_blocks, bq, bk, out[idx])
            else:  # query blocks dealt round robin (causal rows cost more further down)
                jobs = [pool.submit(_attention_rows, *args, row_blocks[w::workers], bq, bk, out[idx])
                        for w in range(workers)]
                for job in jobs:
                    job.result()
    return out


def _workers_and_limiter(n_row_blocks: int):
    """How many threads NumPy's BLAS may use, and a context that sets BLAS to one thread meanwhile.

    Small tiles split across BLAS threads spend their time synchronising (on a loaded machine, a
    waiting thread can cost milliseconds per product), so the kernel runs BLAS on one thread and
    deals its query blocks to as many Python threads instead (NumPy releases the GIL in matmul and
    in ufunc loops).  Without threadpoolctl: one thread, BLAS untouched.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            return 1, contextlib.nullcontext()
        _CONTROLLER = ThreadpoolController()  # finding the libraries takes ~0.4 ms: once per process
    blas = _CONTROLLER.select(user_api="blas")
    n = max((lib.num_threads for lib in blas.lib_controllers), default=1)  # the current limit, read live
    return max(1, min(n, n_row_blocks)), blas.limit(limits=1)


_CONTROLLER = None


# --- measuring the matrix form (used by the chapter "Efficient attention" and by bench/) ---------

def median_time(fn, *args, repeat: int = 5, warmup: int = 1, **kwargs) -> float:
    """Median wall time in seconds of ``fn(*args, **kwargs)`` over ``repeat`` runs after ``warmup`` runs.

    The median, not the mean: on a shared machine a few runs are slowed by other processes.
    """
    import time

    for _ in range(warmup):
        fn(*args, **kwargs)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def compare_times(fns: dict, repeat: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median seconds of each zero-argument callable in ``fns``, measured in interleaved rounds.

    Every round runs each function once, in turn, so that a burst of load from other processes
    slows all of them alike: the *ratios* of the medians are what a shared machine can measure.
    """
    import time

    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(ts)) for name, ts in times.items()}


def peak_bytes(fn, *args, **kwargs) -> int:
    """Peak bytes allocated while ``fn(*args, **kwargs)`` runs, by :mod:`tracemalloc`.

    NumPy reports its array buffers to tracemalloc, so the figure is deterministic (unlike time).
    """
    import tracemalloc

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
    q, k, v = as_array(q, "q"), as_array(k, "k"), as_array(v, "v")
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
