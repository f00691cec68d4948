"""The tuned blocked-attention kernel; docs/kernels.md tells its story and ``python -m bench --only kernel`` times it.

It computes what :func:`attn_ref.efficient.blocked_attention` computes (the online softmax of
Milakov & Gimelshein 2018, tiled as in FlashAttention, Dao et al. 2022), with the changes that
make it fast in NumPy, where every pass over a tile is a separate call:

* scores are kept in log2 units (log2 e folded into the scale, as FlashAttention's kernels do,
  where 2^x is the native instruction; whether ``np.exp2`` beats ``np.exp`` on a CPU depends on
  the NumPy build);
* the shift of the exponentials moves *lazily* (see :meth:`_Head._query_block`), so most tiles need no
  max pass, no subtraction and no rescaling: a product, an exp2 and a product;
* the shift and the running sum ride along in the products (a column -c_i appended to q, a row of
  ones to k^T, a column of ones to v);
* a causal flag skips the key blocks in every query's future without building a mask;
* for large inputs the query blocks are dealt to as many Python threads as NumPy's BLAS may use,
  each running BLAS on one thread.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from attn_ref._checks import as_qkv

LOG2E = 1.0 / math.log(2.0)  # exp(x) = 2^(x log2 e)

# A tile's exponentials may reach LAZY_LIMIT (2^16) before the kernel sets a new shift: large enough
# that the shift is rarely moved after a query's first key block, far below float32's 2^128.
LAZY_LIMIT = 2.0**16


def _blocks(n: int, size: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(start + size, n)


class _Head:
    """One attention problem (one index of the batch dims), prepared for the tiles.

    qa: (n_q, d_k + 1), q * scale * log2(e) with a last column that holds -c_i, the shift of query i's
    scores (each query block owns its rows); k1_t: (d_k + 1, n_k), k^T with a row of ones, contiguous
    (BLAS packs it faster); v1: (n_k, d_v + 1), v with a column of ones, so that the product that
    accumulates sum_j p_j v^j also gives the running sum l = sum_j p_j.  Scores are in log2 units, so
    exp2 gives exp(score - shift).
    """

    def __init__(self, q, k, v, mask, *, scale: float, causal: bool, lazy: bool, block_q: int, block_k: int):
        dtype = np.result_type(q, k, v)
        n_q, d_k = q.shape
        n_k, d_v = v.shape
        self.qa = np.empty((n_q, d_k + 1), dtype=dtype)
        np.multiply(q, dtype.type(scale * LOG2E), out=self.qa[:, :d_k])
        self.k1_t = np.empty((d_k + 1, n_k), dtype=dtype)
        self.k1_t[:d_k], self.k1_t[d_k] = k.T, 1
        self.v1 = np.empty((n_k, d_v + 1), dtype=dtype)
        self.v1[:, :-1], self.v1[:, -1] = v, 1
        self.mask, self.causal, self.lazy = mask, causal, lazy
        self.block_q, self.block_k, self.d_v, self.n_k = block_q, block_k, d_v, n_k
        self.log2e = dtype.type(LOG2E)

    def rows(self, row_blocks, out) -> None:
        """Attention of the query blocks ``row_blocks`` [(i0, i1), ...] into their rows of ``out`` (n_q, d_v)."""
        dtype = out.dtype
        scores = np.empty((self.block_q, self.block_k), dtype=dtype)  # the only score tile that ever exists
        tile_out = np.empty((self.block_q, self.d_v + 1), dtype=dtype)
        for i0, i1 in row_blocks:
            self._query_block(i0, i1, scores, tile_out, out[i0:i1])

    def _scores(self, i0: int, i1: int, j0: int, j1: int, s) -> None:
        """s <- the tile of shifted scores of queries i0..i1-1 against keys j0..j1-1 (log2 units), masked."""
        np.matmul(self.qa[i0:i1], self.k1_t[:, j0:j1], out=s)  # (r, d_k + 1) x (d_k + 1, c): the shift comes along
        if self.mask is not None:
            mb = self.mask[i0:i1, j0:j1]
            if mb.dtype == bool:
                np.copyto(s, -np.inf, where=~mb)
            else:
                s += mb * self.log2e  # additive masks are in nats; the scores are in log2 units
        if self.causal and j1 - 1 > i0:
            future = np.arange(j0, j1)[None, :] > np.arange(i0, i1)[:, None]  # (r, c)
            np.copyto(s, -np.inf, where=future)

    def _query_block(self, i0: int, i1: int, scores, tile_out, out) -> None:
        """Queries i0 .. i1 - 1 against every key block, into ``out`` (r, d_v).

        The shift c_i of query i's scores is its running maximum m_i as of the last *exact* step.  Once every
        query has a finite shift (and ``lazy``), a key block is first tried *lazily*: p = 2^(x - c) with the
        old shift, no max pass, no subtraction, no rescaling (FlashAttention-4's rule as described by Modal,
        2025: move the shift only when the numbers demand it).  If a tile's row sums exceed LAZY_LIMIT (or
        overflowed), it is redone exactly.  acc is relative to c; the quotient acc / l is not.
        """
        r, d_v, dtype, q1 = i1 - i0, self.d_v, out.dtype, self.qa[i0:i1]
        q1[:, -1] = 0  # c = 0 until the first exact step
        m = np.full((r, 1), -np.inf, dtype=dtype)  # the shift's running maximum (-inf: no key yet)
        acc = np.zeros((r, d_v + 1), dtype=dtype)  # unnormalised output | running sum l, relative to c
        lazy = False
        for j0, j1 in _blocks(self.n_k, self.block_k):
            if self.causal and j0 > i1 - 1:
                break  # every key of this and later blocks is in every query's future
            s, tile, v1 = scores[:r, : j1 - j0], tile_out[:r], self.v1[j0:j1]
            if lazy:
                self._scores(i0, i1, j0, j1, s)  # x - c
                with np.errstate(over="ignore", invalid="ignore"):  # an overflowing tile is redone below
                    np.exp2(s, out=s)
                    np.matmul(s, v1, out=tile)  # (r, c) x (c, d_v + 1): sum_j p_j v^j | sum_j p_j
                if tile[:, d_v].max() <= LAZY_LIMIT:  # False for inf and nan: then the exact step below
                    acc += tile
                    continue
            # exact step (Milakov & Gimelshein 2018): the shift becomes the running maximum, old sums rescaled
            self._scores(i0, i1, j0, j1, s)  # x - c
            c = -q1[:, -1:]  # (r, 1), a copy
            m_new = np.maximum(m, s.max(axis=1, keepdims=True) + c)
            m_safe = np.where(np.isneginf(m_new), dtype.type(0), m_new)  # no key yet: no -inf - -inf
            s -= m_safe - c
            np.exp2(s, out=s)  # p_ij = 2^(x_ij - m_new) <= 1, in place
            acc *= np.exp2(m - m_safe)  # <= 1; 0 while m = -inf (acc is 0 then too)
            np.matmul(s, v1, out=tile)
            acc += tile
            m = m_new
            q1[:, -1:] = -m_safe
            lazy = self.lazy and bool(np.isfinite(m).all())
        l = acc[:, d_v:]  # (r, 1)  # noqa: E741
        np.divide(acc[:, :d_v], np.where(l == 0, dtype.type(1), l), out=out)  # no key: zeros


def _check_mask(mask, batch, n_q: int, n_k: int, dtype):
    """``mask`` broadcast (a view) to (*batch, n_q, n_k); float masks in the inputs' dtype."""
    mask = np.asarray(mask)
    if mask.dtype != bool and mask.dtype.kind not in "fiu":
        raise ValueError(f"mask: expected a boolean or float array, got dtype {mask.dtype}")
    try:
        batch = np.broadcast_shapes(batch, mask.shape[:-2]) if mask.ndim > 2 else batch
        mask = np.broadcast_to(mask, (*batch, n_q, n_k))  # a view: no copy
    except ValueError:
        raise ValueError(f"mask: expected a shape that broadcasts to (..., {n_q}, {n_k}), got {mask.shape}") from None
    return (mask if mask.dtype == bool else mask.astype(dtype, copy=False)), batch


def tuned_blocked_attention(q, k, v, *, mask=None, scale: float | None = None, causal: bool = False,
                            block: int = 512, block_q: int | None = None, lazy: bool = True):
    """softmax(q k^T * scale + mask) v without forming the (n_q, n_k) matrix, tuned for NumPy on a CPU.

    q: (..., n_q, d_k), k: (..., n_k, d_k), v: (..., n_k, d_v), batch dims broadcast;
    mask: None, or broadcastable to (..., n_q, n_k), boolean (True = may attend) or additive float, as in
    :func:`attn_ref.attention.scaled_dot_product_attention` (a dense mask is itself n_q x n_k: for long
    sequences use ``causal=True``); causal: key j may be attended by query i only when j <= i (PyTorch's
    ``is_causal``); scale: None means 1/sqrt(d_k); block: keys per block; block_q: queries per block
    (default ``min(block, 256)``).
    Returns the output (..., n_q, d_v) only: the weights are never formed.  A query that may attend to no
    key gets a zero output.  The dtype of the inputs is kept (float32 stays float32): peak memory
    O((n_q + n_k) * d + block_q * block) per thread.
    lazy: after a query block's first key block, try each tile with the old shift and redo it exactly only
    when its sums exceed ``LAZY_LIMIT`` (same answer; ``python -m bench --only kernel`` measures the saving); False:
    every tile exact, the textbook online softmax.
    For large inputs the query blocks are shared among as many Python threads as NumPy's BLAS may use
    (``threadpoolctl.threadpool_limits`` sets that), each running BLAS on one thread.
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
        mask, batch = _check_mask(mask, batch, n_q, n_k, dtype)
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
            head = _Head(q[idx], k[idx], v[idx], None if mask is None else mask[idx], scale=s, causal=causal,
                         lazy=lazy, block_q=bq, block_k=bk)
            if pool is None:
                head.rows(row_blocks, out[idx])
            else:  # query blocks dealt round robin (causal rows cost more further down); share 0 runs here
                jobs = [pool.submit(head.rows, row_blocks[w::workers], out[idx]) for w in range(1, workers)]
                head.rows(row_blocks[::workers], out[idx])
                for job in jobs:
                    job.result()
    return out


_POOL: tuple[int, int, ThreadPoolExecutor | None] = (0, 0, None)
_CONTROLLER = None


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
