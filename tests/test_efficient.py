"""blocked_attention (online softmax, FlashAttention-style) against the matrix form and PyTorch's SDPA."""

import math
import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from attn_ref.attention import causal_mask, scaled_dot_product_attention
from attn_ref.efficient import blocked_attention, online_softmax_trace
from attn_ref.softmax import softmax
from conftest import tol


def _qkv(rng, batch, n_q, n_k, d_k, d_v, dtype):
    return (rng.normal(size=(*batch, n_q, d_k)).astype(dtype), rng.normal(size=(*batch, n_k, d_k)).astype(dtype),
            rng.normal(size=(*batch, n_k, d_v)).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block", [1, 3, 8, 64])
def test_equals_matrix_form(rng, dtype, block):
    q, k, v = _qkv(rng, (2, 3), 13, 17, 8, 5, dtype)
    out = blocked_attention(q, k, v, block=block)
    expected, _ = scaled_dot_product_attention(q, k, v)
    assert out.dtype == dtype and out.shape == (2, 3, 13, 5)
    np.testing.assert_allclose(out, expected, atol=tol(dtype), rtol=tol(dtype))


@given(n_q=st.integers(1, 40), n_k=st.integers(1, 40), d_k=st.integers(1, 9), d_v=st.integers(1, 9),
       block=st.integers(1, 50), block_q=st.integers(1, 50), masked=st.sampled_from(["none", "bool", "additive"]),
       seed=st.integers(0, 2**16), lazy=st.booleans())
@settings(max_examples=60, deadline=None)
def test_hypothesis_shapes_blocks_masks(n_q, n_k, d_k, d_v, block, block_q, masked, seed, lazy):
    rng = np.random.default_rng(seed)
    q, k, v = _qkv(rng, (2,), n_q, n_k, d_k, d_v, np.float32)
    mask = None
    if masked != "none":
        allowed = rng.random((n_q, n_k)) > 0.5
        allowed[rng.integers(n_q)] = False  # one query may attend to nothing
        mask = allowed if masked == "bool" else np.where(allowed, 0.0, -np.inf).astype(np.float32)
    out = blocked_attention(q, k, v, mask=mask, block=block, block_q=block_q, lazy=lazy)
    expected, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_give_zeros(rng):
    q, k, v = _qkv(rng, (), 9, 11, 4, 3, np.float32)
    mask = rng.random((9, 11)) > 0.3
    mask[[0, 4]] = False
    out = blocked_attention(q, k, v, mask=mask, block=4)
    assert np.all(out[[0, 4]] == 0) and np.isfinite(out).all()
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask=mask)[0], atol=1e-5, rtol=1e-5)


def test_float_additive_mask_and_scale(rng):
    q, k, v = _qkv(rng, (3,), 10, 10, 6, 6, np.float32)
    bias = rng.normal(size=(10, 10)).astype(np.float32)  # a relative-position-like bias
    out = blocked_attention(q, k, v, mask=bias, scale=1.0, block=4)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask=bias, scale=1.0)[0],
                               atol=1e-5, rtol=1e-5)


def test_stable_for_scores_of_1e4():
    # scores exactly representable in float32: 1e4 * integers; the result is a weighted mix of two keys
    q = np.array([[1e4, 0.0], [1e4, 1e4]], dtype=np.float32)
    k = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0]], dtype=np.float32)
    v = np.arange(8, dtype=np.float32).reshape(4, 2)
    for block in (1, 2, 3):
        out = blocked_attention(q, k, v, scale=1.0, block=block)
        expected, _ = scaled_dot_product_attention(q, k, v, scale=1.0)
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out[1], (v[1] + v[3]) / 2, atol=1e-5)  # two keys tie at 2e4


@pytest.mark.parametrize("jump", [5.0, 10.0, 200.0])
def test_scores_that_rise_block_after_block(jump):
    """Each key block's scores exceed the last block's by ``jump`` nats.

    A lazy tile keeps the old shift: a jump of 5 stays under LAZY_LIMIT (2^16, about 11 nats) and is
    accumulated as it is; 10 is near the limit; 200 overflows float32 (2^288) and must be redone exactly.
    """
    n, block = 48, 8
    q = np.ones((3, 2), dtype=np.float32)
    k = np.zeros((n, 2), dtype=np.float32)
    k[:, 0] = jump * (np.arange(n) // block) + np.linspace(0, 1, n)  # scores q.k = k[:, 0] (scale 1)
    v = np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32)
    expected, _ = scaled_dot_product_attention(q, k, v, scale=1.0)
    out = blocked_attention(q, k, v, scale=1.0, block=block)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)
    exact = blocked_attention(q, k, v, scale=1.0, block=block, lazy=False)  # every tile exact: the same answer
    np.testing.assert_allclose(exact, out, atol=1e-6, rtol=1e-6)


def test_scores_that_fall_block_after_block():
    """A first block far above the rest: later lazy tiles underflow towards 0, as they should."""
    n, block = 40, 8
    q = np.ones((2, 2), dtype=np.float32)
    k = np.zeros((n, 2), dtype=np.float32)
    k[:, 0] = -30.0 * (np.arange(n) // block) + np.linspace(0, 3, n)
    v = np.random.default_rng(1).normal(size=(n, 3)).astype(np.float32)
    np.testing.assert_allclose(blocked_attention(q, k, v, scale=1.0, block=block),
                               scaled_dot_product_attention(q, k, v, scale=1.0)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_equals_torch_sdpa_4d(rng, causal):
    q, k, v = _qkv(rng, (2, 4), 50, 50, 16, 8, np.float32)
    expected = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), is_causal=causal).numpy()
    out = blocked_attention(q, k, v, causal=causal, block=16, block_q=8)
    np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)


def test_causal_flag_equals_causal_mask_non_square(rng):
    q, k, v = _qkv(rng, (), 7, 12, 4, 4, np.float64)
    # PyTorch's is_causal: query i sees keys 0..i (top-left aligned), also when n_q != n_k
    mask = np.tril(np.ones((7, 12), dtype=bool))
    np.testing.assert_allclose(blocked_attention(q, k, v, causal=True, block=5, block_q=3),
                               scaled_dot_product_attention(q, k, v, mask=mask)[0], atol=1e-10)
    q2 = q[:, :4].copy()
    np.testing.assert_allclose(blocked_attention(q2[:5], k[:5], v[:5], causal=True, block=2),
                               scaled_dot_product_attention(q2[:5], k[:5], v[:5], mask=causal_mask(5))[0], atol=1e-10)


def test_broadcast_batch_and_mask(rng):
    q = rng.normal(size=(2, 1, 6, 4)).astype(np.float32)
    k = rng.normal(size=(1, 3, 8, 4)).astype(np.float32)
    v = rng.normal(size=(8, 5)).astype(np.float32)
    mask = rng.random((3, 6, 8)) > 0.3
    out = blocked_attention(q, k, v, mask=mask, block=3)
    assert out.shape == (2, 3, 6, 5)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask=mask)[0], atol=1e-5, rtol=1e-5)


def test_bad_shapes_raise_valueerror_naming_shapes(rng):
    q, k, v = _qkv(rng, (), 4, 5, 3, 2, np.float32)
    with pytest.raises(ValueError, match=r"\(5, 2\)"):
        blocked_attention(q, k[:, :2], v)
    with pytest.raises(ValueError, match="n_k"):
        blocked_attention(q, k, v[:4])
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        blocked_attention(q, k, v, mask=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="block"):
        blocked_attention(q, k, v, block=0)


def test_online_softmax_trace_running_max_and_sum():
    x = np.array([1.0, 3.0, 2.0, 5.0, 4.0])
    tr = online_softmax_trace(x, block=2)
    np.testing.assert_allclose(tr.mu, [3.0, 5.0, 5.0])  # blocks [1, 3], [2, 5], [4]
    # after each block, s = sum of exp(x_j - mu) over the entries seen so far
    np.testing.assert_allclose(tr.s, [np.exp(1 - 3) + 1, np.exp(-4) + np.exp(-2) + np.exp(-3) + 1,
                                      np.exp(-4) + np.exp(-2) + np.exp(-3) + 1 + np.exp(-1)], atol=1e-12)
    np.testing.assert_allclose(tr.softmax, softmax(x), atol=1e-12)
    big = np.array([1e4, -1e4, 1e4 - 1, 3.0], dtype=np.float32)
    np.testing.assert_allclose(online_softmax_trace(big, 1).softmax, softmax(big), atol=1e-6)
    assert np.all(online_softmax_trace(np.full(3, -np.inf), 2).softmax == 0)


def test_peak_memory_grows_as_n_times_block():
    """tracemalloc sees numpy's allocations: n = 8192 must stay far from the n x n matrix (256 MiB)."""
    n, d, block, block_q = 8192, 16, 512, 256
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(n, d)).astype(np.float32) for _ in range(3))
    tracemalloc.start()
    try:
        with threadpool_limits(1):  # small tiles: BLAS threads only contend on a shared machine
            out = blocked_attention(q, k, v, block=block, block_q=block_q)
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
    np.testing.assert_allclose(blocked_attention(q[s], k[s], v[s], block=64),
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
        two = blocked_attention(q, k, v, causal=True, block=128, block_q=64)
    with threadpool_limits(1):
        one = blocked_attention(q, k, v, causal=True, block=128, block_q=64)
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
        parent = blocked_attention(q, k, v, block=128, block_q=64)  # the pool exists now
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute with two threads, send the result, leave without cleanup
        try:
            with threadpool_limits(2):
                os.write(write_end, pickle.dumps(blocked_attention(q, k, v, block=128, block_q=64)))
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
