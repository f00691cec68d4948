"""The tuned kernel attn_book.kernels.tuned_blocked_attention: its causal flag, query blocks, memory and threads.

What it computes (masks, dtypes, blocks, stability, against the textbook version, the matrix form and PyTorch)
is tested with the textbook version in tests/test_efficient.py.
"""

import math
import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_limits

from attn_book.kernels import tuned_blocked_attention
from attn_ref.attention import causal_mask, scaled_dot_product_attention


def _qkv(rng, batch, n_q, n_k, d_k, d_v, dtype):
    return tuple(rng.normal(size=(*batch, n, d)).astype(dtype) for n, d in ((n_q, d_k), (n_k, d_k), (n_k, d_v)))


def test_causal_flag_equals_torch_is_causal_4d(rng):
    q, k, v = _qkv(rng, (2, 4), 50, 50, 16, 8, np.float32)
    expected = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), is_causal=True).numpy()
    out = tuned_blocked_attention(q, k, v, causal=True, block=16, block_q=8)
    np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)


def test_causal_flag_equals_causal_mask_non_square(rng):
    q, k, v = _qkv(rng, (), 7, 12, 4, 4, np.float64)
    # PyTorch's is_causal: query i sees keys 0..i (top-left aligned), also when n_q != n_k
    mask = np.tril(np.ones((7, 12), dtype=bool))
    np.testing.assert_allclose(tuned_blocked_attention(q, k, v, causal=True, block=5, block_q=3),
                               scaled_dot_product_attention(q, k, v, mask=mask)[0], atol=1e-10)
    q2 = q[:, :4].copy()
    np.testing.assert_allclose(tuned_blocked_attention(q2[:5], k[:5], v[:5], causal=True, block=2),
                               scaled_dot_product_attention(q2[:5], k[:5], v[:5], mask=causal_mask(5))[0], atol=1e-10)


def test_peak_memory_grows_as_n_times_block():
    """tracemalloc sees numpy's allocations: n = 8192 must stay far from the n x n matrix (256 MiB)."""
    n, d, block, block_q = 8192, 16, 512, 256
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(n, d)).astype(np.float32) for _ in range(3))
    tracemalloc.start()
    try:
        with threadpool_limits(1):  # small tiles: BLAS threads only contend on a shared machine
            out = tuned_blocked_attention(q, k, v, block=block, block_q=block_q)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.isfinite(out).all()
    itemsize = 4
    # q | shift, k^T | ones, v | ones (each n x (d + 1)), the output, one score tile, small per-row vectors
    bound = itemsize * (n * (3 * (d + 1) + d) + 2 * block_q * block + 4 * block_q * (d + 2))
    assert peak <= 1.5 * bound, f"peak {peak / 2**20:.1f} MiB, expected about {bound / 2**20:.1f} MiB"
    assert peak < itemsize * n * n / 20  # the naive scores alone would take n^2 floats
    # the same data at a small n checks the values
    s = slice(0, 300)
    np.testing.assert_allclose(tuned_blocked_attention(q[s], k[s], v[s], block=64),
                               scaled_dot_product_attention(q[s], k[s], v[s])[0], atol=1e-5, rtol=1e-5)
    assert math.isclose(itemsize * n * n / 2**20, 256)


def test_blas_thread_setting_restored_and_threads_agree(rng):
    """Large inputs run BLAS on one thread and deal query blocks to Python threads; the setting comes back."""
    from threadpoolctl import threadpool_info

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    q, k, v = _qkv(rng, (), 1024, 1024, 8, 4, np.float32)
    before = blas_threads()
    with threadpool_limits(2):
        two = tuned_blocked_attention(q, k, v, causal=True, block=128, block_q=64)
    with threadpool_limits(1):
        one = tuned_blocked_attention(q, k, v, causal=True, block=128, block_q=64)
    assert blas_threads() == before
    np.testing.assert_array_equal(two, one)  # the same tiles in the same order per query: bitwise equal
    np.testing.assert_allclose(one[:300], scaled_dot_product_attention(q[:300], k[:300], v[:300],
                                                                       mask=causal_mask(300))[0], atol=1e-5, rtol=1e-5)


def test_helper_threads_work_in_a_forked_child(rng):
    """The helper threads are kept per process; a child made by fork (which has none of them) makes its own."""
    import os
    import pickle
    import select

    q, k, v = _qkv(rng, (), 1024, 1024, 8, 4, np.float32)
    with threadpool_limits(2):
        parent = tuned_blocked_attention(q, k, v, block=128, block_q=64)  # the pool exists now
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute with two threads, send the result, leave without cleanup
        try:
            with threadpool_limits(2):
                os.write(write_end, pickle.dumps(tuned_blocked_attention(q, k, v, block=128, block_q=64)))
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while select.select([read_end], [], [], 60)[0]:  # a hung child sends nothing for a minute
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    else:
        os.kill(pid, 9)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert chunks, "the forked child never answered: it waited on its parent's helper threads"
    np.testing.assert_array_equal(pickle.loads(b"".join(chunks)), parent)


def test_options_are_keyword_only(rng):
    q, k, v = _qkv(rng, (), 4, 5, 3, 2, np.float32)
    with pytest.raises(TypeError):
        tuned_blocked_attention(q, k, v, None)  # the mask must be named
    assert tuned_blocked_attention(q, k, v, mask=None, scale=1.0, causal=True, block=2, block_q=3,
                                   lazy=False).shape == (4, 2)
