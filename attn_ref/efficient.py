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

Two choices make each tile cheap in NumPy, where every pass over the tile is a separate
call: scores are kept in log2 units (log2 e folded into the scale, as FlashAttention's
kernels do, where 2^x is the native instruction; whether ``np.exp2`` beats ``np.exp`` on a CPU
depends on the NumPy build); and the shift of the
exponentials moves *lazily* (see :func:`_attention_block`), so most tiles need no max
pass, no subtraction and no rescaling: a product, an exp2 and a product.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

from ._checks import as_array, as_qkv

LOG2E = 1.0 / math.log(2.0)  # exp(x) = 2^(x log2 e)


class OnlineSoftmax(NamedTuple):
    """What :func:`online_softmax_trace` records after each block of one row."""

    mu: np.ndarray  # (n_blocks,) running maximum after each block
    s: np.ndarray  # (n_blocks,) running sum of exp(x_j - mu) after each block
    softmax: np.ndarray  # (n,) the softmax of the row, from the final mu and s


def online_softmax_trace(x, block: int) -> OnlineSoftmax:
    """Softmax of one row ``x`` (n,) read ``block`` entries at a time (Milakov & Gimelshein 2018, alg. 3).

    After each block: mu_new = max(mu, max(block)); s = s * exp(mu - mu_new) + sum exp(block - mu_new).
    Returns the running mu and s after every block and the softmax exp(x - mu) / s (the book's
    notation; FlashAttention writes m and l).
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
    sum_j p_j v^j then also gives the running sum l = sum_j p_j, with no pass of its own.
    (k^T gets a row of ones for the same reason: with -c_i in q's extra column, the product
    gives the shifted scores x_ij - c_i.)"""
    v1 = np.empty((v.shape[0], v.shape[1] + 1), dtype=dtype)
    v1[:, :-1] = v
    v1[:, -1] = 1
    return v1


# A tile's exponentials may reach LAZY_LIMIT (2^16) before the kernel sets a new shift: large enough
# that the shift is rarely moved after a query's first key block, far below float32's 2^128.
LAZY_LIMIT = 2.0**16


def _scores(q1, k1_t, j0: int, j1: int, mask, causal: bool, i0: int, log2e, s) -> None:
    """s <- the (r, c) tile of shifted scores q1[:, :-1] k^T - c (log2 units), masked; q1 = rows i0.. of qa."""
    np.matmul(q1, k1_t[:, j0:j1], out=s)  # (r, d_k + 1) x (d_k + 1, c): the shift comes with the product
    if mask is not None:
        mb = mask[i0:i0 + len(s), j0:j1]
        if mb.dtype == bool:
            np.copyto(s, -np.inf, where=~mb)
        else:
            s += mb * log2e  # additive masks are in nats; the scores are in log2 units
    if causal and j1 - 1 > i0:
        future = np.arange(j0, j1)[None, :] > np.arange(i0, i0 + len(s))[:, None]  # (r, c)
        np.copyto(s, -np.inf, where=future)


def _attention_rows(qa, k1_t, v1, mask, causal: bool, lazy: bool, row_blocks, block_q: int, block_k: int,
                    out) -> None:
    """Attention of the query blocks ``row_blocks`` [(i0, i1), ...] into ``out`` (n_q, d_v).

    qa: (n_q, d_k + 1), q * scale * log2(e) with a last column this function owns for its rows
    (it holds -c_i, the shift of query i's scores); k1_t: (d_k + 1, n_k), k^T with a row of ones;
    v1: (n_k, d_v + 1) from :func:`_with_ones`; mask: (n_q, n_k) or None.
    Scores are in log2 units, so exp2 gives exp(score - shift).
    """
    n_k, d_v, dtype = k1_t.shape[1], v1.shape[1] - 1, out.dtype
    log2e = dtype.type(LOG2E)
    scores = np.empty((block_q, block_k), dtype=dtype)  # the only score tile that ever exists
    tile_out = np.empty((block_q, d_v + 1), dtype=dtype)
    for i0, i1 in row_blocks:
        _attention_block(qa[i0:i1], k1_t, v1, mask, causal, lazy, i0, n_k, block_k, log2e, scores, tile_out,
                         out[i0:i1])


def _attention_block(q1, k1_t, v1, mask, causal: bool, lazy_ok: bool, i0: int, n_k: int, block_k: int, log2e,
                     scores, tile_out, out) -> None:
    """Queries i0 .. i0 + r - 1 (q1: their (r, d_k + 1) rows of qa) against every key block, into ``out`` (r, d_v).

    The shift c_i of query i's scores is its running maximum m_i as of the last *exact* step.  Once every
    query has a finite shift (and ``lazy_ok``), a key block is first tried *lazily*: p = 2^(x - c) with the
    old shift, no max pass, no subtraction, no rescaling (FlashAttention-4's rule as described by Modal,
    2025: move the shift only when the numbers demand it).  If a tile's row sums exceed LAZY_LIMIT (or
    overflowed), it is redone exactly.  acc is relative to c; the quotient acc / l is not.
    """
    r, d_v, dtype = len(q1), v1.shape[1] - 1, out.dtype
    q1[:, -1] = 0  # c = 0 until the first exact step
    m = np.full((r, 1), -np.inf, dtype=dtype)  # the shift's running maximum (-inf: no key yet)
    acc = np.zeros((r, d_v + 1), dtype=dtype)  # unnormalised output | running sum l, relative to c
    lazy = False
    for j0, j1 in _blocks(n_k, block_k):
        if causal and j0 > i0 + r - 1:
            break  # every key of this and later blocks is in every query's future
        s, tile = scores[:r, : j1 - j0], tile_out[:r]
        if lazy:
            _scores(q1, k1_t, j0, j1, mask, causal, i0, log2e, s)  # x - c
            with np.errstate(over="ignore", invalid="ignore"):  # an overflowing tile is redone below
                np.exp2(s, out=s)
                np.matmul(s, v1[j0:j1], out=tile)  # (r, c) x (c, d_v + 1): sum_j p_j v^j | sum_j p_j
            if tile[:, d_v].max() <= LAZY_LIMIT:  # False for inf and nan: then the exact step below
                acc += tile
                continue
        # exact step (Milakov & Gimelshein 2018): the shift becomes the running maximum, old sums rescaled
        _scores(q1, k1_t, j0, j1, mask, causal, i0, log2e, s)  # x - c
        c = -q1[:, -1:]  # (r, 1), a copy
        m_new = np.maximum(m, s.max(axis=1, keepdims=True) + c)
        m_safe = np.where(np.isneginf(m_new), dtype.type(0), m_new)  # no key yet: no -inf - -inf
        s -= m_safe - c
        np.exp2(s, out=s)  # p_ij = 2^(x_ij - m_new) <= 1, in place
        acc *= np.exp2(m - m_safe)  # <= 1; 0 while m = -inf (acc is 0 then too)
        np.matmul(s, v1[j0:j1], out=tile)
        acc += tile
        m = m_new
        q1[:, -1:] = -m_safe
        lazy = lazy_ok and bool(np.isfinite(m).all())
    l = acc[:, d_v:]  # (r, 1)  # noqa: E741
    np.divide(acc[:, :d_v], np.where(l == 0, dtype.type(1), l), out=out)  # no key: zeros


def blocked_attention(q, k, v, mask=None, scale: float | None = None, block: int = 512, *,
                      causal: bool = False, block_q: int | None = None, lazy: bool = True):
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
    lazy: after a query block's first key block, try each tile with the old shift and redo it exactly
    only when its sums exceed ``LAZY_LIMIT`` (same answer; the book's appendix measures the saving); False: every tile
    exact, the textbook online softmax.
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
    pool = _helpers(workers - 1) if workers > 1 else None
    with one_blas_thread:
        for idx in np.ndindex(*batch):
            qa = np.empty((n_q, d_k + 1), dtype=dtype)  # q scaled once, in log2 units, | the shift
            np.multiply(q[idx], dtype.type(s * LOG2E), out=qa[:, :d_k])
            k1_t = np.empty((d_k + 1, n_k), dtype=dtype)  # k^T | a row of ones, contiguous: BLAS packs it faster
            k1_t[:d_k], k1_t[d_k] = k[idx].T, 1
            v1 = _with_ones(v[idx], dtype)  # (n_k, d_v + 1)
            args = (qa, k1_t, v1, None if mask is None else mask[idx], causal, lazy)
            if pool is None:
                _attention_rows(*args, row_blocks, bq, bk, out[idx])
            else:  # query blocks dealt round robin (causal rows cost more further down); share 0 runs here
                jobs = [pool.submit(_attention_rows, *args, row_blocks[w::workers], bq, bk, out[idx])
                        for w in range(1, workers)]
                _attention_rows(*args, row_blocks[::workers], bq, bk, out[idx])
                for job in jobs:
                    job.result()
    return out


def _helpers(n: int) -> ThreadPoolExecutor:
    """A pool of ``n`` helper threads kept for the process: starting threads per call cost ~0.2 ms each.

    A child made by fork inherits the pool but not its threads: it gets a pool of its own.
    """
    global _POOL
    pid, size, pool = _POOL
    if pool is None or size < n or pid != os.getpid():
        if pool is not None and pid == os.getpid():
            pool.shutdown(wait=False)  # jobs already queued still run
        pool = ThreadPoolExecutor(n, thread_name_prefix="blocked_attention")
        _POOL = os.getpid(), n, pool
    return pool


_POOL: tuple[int, int, ThreadPoolExecutor | None] = (0, 0, None)


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
