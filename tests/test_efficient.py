"""blocked attention (online softmax, FlashAttention-style) against the matrix form and PyTorch's SDPA.

Both implementations: the textbook attn_ref.efficient.blocked_attention (ps12's grading reference) and
the tuned kernel attn_book.kernels.tuned_blocked_attention (lazy shift, and with every tile exact); the
tuned kernel's own options (causal flag, query blocks, threads) are in tests/test_kernels.py.
"""

import functools
import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_book.kernels import tuned_blocked_attention
from attn_ref.attention import causal_mask, scaled_dot_product_attention
from attn_ref.efficient import blocked_attention, online_softmax_trace
from attn_ref.softmax import softmax
from conftest import tol

IMPLEMENTATIONS = {
    "textbook": blocked_attention,
    "tuned": tuned_blocked_attention,
    "tuned, every tile exact": functools.partial(tuned_blocked_attention, lazy=False),
}
each_implementation = pytest.mark.parametrize("attend", list(IMPLEMENTATIONS.values()), ids=list(IMPLEMENTATIONS))


def _qkv(rng, batch, n_q, n_k, d_k, d_v, dtype):
    return (rng.normal(size=(*batch, n_q, d_k)).astype(dtype), rng.normal(size=(*batch, n_k, d_k)).astype(dtype),
            rng.normal(size=(*batch, n_k, d_v)).astype(dtype))


def _mask(rng, n_q, n_k, kind, dtype=np.float32):
    if kind == "none":
        return None
    allowed = rng.random((n_q, n_k)) > 0.5
    allowed[rng.integers(n_q)] = False  # one query may attend to nothing
    if kind == "causal":
        allowed = np.tril(np.ones((n_q, n_k), dtype=bool))
    return allowed if kind in ("bool", "causal") else np.where(allowed, 0.0, -np.inf).astype(dtype)


@each_implementation
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block", [1, 3, 8, 64])
def test_equals_matrix_form(rng, attend, dtype, block):
    q, k, v = _qkv(rng, (2, 3), 13, 17, 8, 5, dtype)
    out = attend(q, k, v, block=block)
    expected, _ = scaled_dot_product_attention(q, k, v)
    assert out.dtype == dtype and out.shape == (2, 3, 13, 5)
    np.testing.assert_allclose(out, expected, atol=tol(dtype), rtol=tol(dtype))


@given(n_q=st.integers(1, 40), n_k=st.integers(1, 40), d_k=st.integers(1, 9), d_v=st.integers(1, 9),
       block=st.integers(1, 50), masked=st.sampled_from(["none", "bool", "additive", "causal"]),
       dtype=st.sampled_from([np.float32, np.float64]), seed=st.integers(0, 2**16))
@settings(max_examples=60, deadline=None)
def test_tuned_kernel_agrees_with_the_textbook_and_the_matrix_form(n_q, n_k, d_k, d_v, block, masked, dtype, seed):
    rng = np.random.default_rng(seed)
    q, k, v = _qkv(rng, (2,), n_q, n_k, d_k, d_v, dtype)
    mask = _mask(rng, n_q, n_k, masked, dtype)
    textbook = blocked_attention(q, k, v, mask=mask, block=block)
    expected, _ = scaled_dot_product_attention(q, k, v, mask=mask)
    np.testing.assert_allclose(textbook, expected, atol=tol(dtype), rtol=tol(dtype))
    for lazy in (True, False):
        if masked == "causal":  # the tuned kernel's flag, no mask
            tuned = tuned_blocked_attention(q, k, v, causal=True, block=block, block_q=block // 2 + 1, lazy=lazy)
        else:
            tuned = tuned_blocked_attention(q, k, v, mask=mask, block=block, block_q=block // 2 + 1, lazy=lazy)
        assert tuned.dtype == textbook.dtype == dtype
        np.testing.assert_allclose(tuned, textbook, atol=tol(dtype), rtol=tol(dtype))


@each_implementation
def test_fully_masked_rows_give_zeros(rng, attend):
    q, k, v = _qkv(rng, (), 9, 11, 4, 3, np.float32)
    mask = rng.random((9, 11)) > 0.3
    mask[[0, 4]] = False
    out = attend(q, k, v, mask=mask, block=4)
    assert np.all(out[[0, 4]] == 0) and np.isfinite(out).all()
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask=mask)[0], atol=1e-5, rtol=1e-5)


@each_implementation
def test_float_additive_mask_and_scale(rng, attend):
    q, k, v = _qkv(rng, (3,), 10, 10, 6, 6, np.float32)
    bias = rng.normal(size=(10, 10)).astype(np.float32)  # a relative-position-like bias
    out = attend(q, k, v, mask=bias, scale=1.0, block=4)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask=bias, scale=1.0)[0],
                               atol=1e-5, rtol=1e-5)


@each_implementation
def test_stable_for_scores_of_1e4(attend):
    # scores exactly representable in float32: 1e4 * integers; the result is a weighted mix of two keys
    q = np.array([[1e4, 0.0], [1e4, 1e4]], dtype=np.float32)
    k = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0]], dtype=np.float32)
    v = np.arange(8, dtype=np.float32).reshape(4, 2)
    for block in (1, 2, 3):
        out = attend(q, k, v, scale=1.0, block=block)
        expected, _ = scaled_dot_product_attention(q, k, v, scale=1.0)
        assert np.isfinite(out).all()
        np.testing.assert_allclose(out, expected, atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(out[1], (v[1] + v[3]) / 2, atol=1e-5)  # two keys tie at 2e4


@each_implementation
@pytest.mark.parametrize("jump", [5.0, 10.0, 200.0, -30.0])
def test_scores_that_rise_or_fall_block_after_block(attend, jump):
    """Each key block's scores exceed the last block's by ``jump`` nats.

    The tuned kernel's lazy tiles keep the old shift: a jump of 5 stays under LAZY_LIMIT (2^16, about
    11 nats) and is accumulated as it is; 10 is near the limit; 200 overflows float32 (2^288) and must
    be redone exactly; -30: later tiles underflow towards 0, as they should.
    """
    n, block = 48, 8
    q = np.ones((3, 2), dtype=np.float32)
    k = np.zeros((n, 2), dtype=np.float32)
    k[:, 0] = jump * (np.arange(n) // block) + np.linspace(0, 1, n)  # scores q.k = k[:, 0] (scale 1)
    v = np.random.default_rng(0).normal(size=(n, 4)).astype(np.float32)
    out = attend(q, k, v, scale=1.0, block=block)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, scale=1.0)[0], atol=1e-5, rtol=1e-5)


@each_implementation
def test_equals_torch_sdpa_4d_with_and_without_a_causal_mask(rng, attend):
    q, k, v = _qkv(rng, (2, 4), 50, 50, 16, 8, np.float32)
    for causal in (False, True):
        expected = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), is_causal=causal)
        out = attend(q, k, v, mask=causal_mask(50) if causal else None, block=7)
        np.testing.assert_allclose(out, expected.numpy(), atol=1e-5, rtol=1e-5)


@each_implementation
def test_broadcast_batch_and_mask(rng, attend):
    q = rng.normal(size=(2, 1, 6, 4)).astype(np.float32)
    k = rng.normal(size=(1, 3, 8, 4)).astype(np.float32)
    v = rng.normal(size=(8, 5)).astype(np.float32)
    mask = rng.random((3, 6, 8)) > 0.3
    out = attend(q, k, v, mask=mask, block=3)
    assert out.shape == (2, 3, 6, 5)
    np.testing.assert_allclose(out, scaled_dot_product_attention(q, k, v, mask=mask)[0], atol=1e-5, rtol=1e-5)


@each_implementation
def test_bad_shapes_raise_valueerror_naming_shapes(rng, attend):
    q, k, v = _qkv(rng, (), 4, 5, 3, 2, np.float32)
    with pytest.raises(ValueError, match=r"\(5, 2\)"):
        attend(q, k[:, :2], v)
    with pytest.raises(ValueError, match="n_k"):
        attend(q, k, v[:4])
    with pytest.raises(ValueError, match=r"\(3, 3\)"):
        attend(q, k, v, mask=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="block"):
        attend(q, k, v, block=0)


def test_textbook_peak_memory_is_one_tile_not_n_squared():
    n, d, block = 4096, 16, 256
    q, k, v = (np.random.default_rng(i).normal(size=(n, d)).astype(np.float32) for i in range(3))
    tracemalloc.start()
    try:
        blocked_attention(q, k, v, block=block)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 6 * 4 * n * block  # a few (n, block) float32 tiles
    assert peak < 4 * n * n / 2  # the (n, n) scores alone would take n^2 floats


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
