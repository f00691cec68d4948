"""Truncated (banded) self-attention: attn_ref.truncated vs full attention with a band mask and PyTorch."""

import tracemalloc

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_ref.attention import band_mask, scaled_dot_product_attention, self_attention
from attn_ref.truncated import band_mask_view, band_to_dense, band_valid, truncated_attention

TOL = {np.float32: 1e-5, np.float64: 1e-10}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch,n,d_k,d_v,w", [((), 1, 3, 2, 0), ((), 7, 4, 5, 2), ((2,), 16, 8, 3, 3),
                                                ((2, 3), 12, 4, 4, 20), ((3,), 9, 2, 6, 0)])
def test_banded_equals_full_attention_with_band_mask(dtype, batch, n, d_k, d_v, w):
    rng = np.random.default_rng(n * 100 + w)
    q = rng.standard_normal((*batch, n, d_k)).astype(dtype)
    k = rng.standard_normal((*batch, n, d_k)).astype(dtype)
    v = rng.standard_normal((*batch, n, d_v)).astype(dtype)
    out, band_w = truncated_attention(q, k, v, w)
    assert out.shape == (*batch, n, d_v) and band_w.shape == (*batch, n, 2 * w + 1)
    assert out.dtype == dtype
    ref_out, ref_w = scaled_dot_product_attention(q, k, v, mask=band_mask(n, w))
    np.testing.assert_allclose(out, ref_out, atol=TOL[dtype], rtol=TOL[dtype])
    np.testing.assert_allclose(band_to_dense(band_w, w), ref_w, atol=TOL[dtype], rtol=TOL[dtype])
    # PyTorch's own kernel with the band as a boolean attn_mask (True = may attend)
    t_out = F.scaled_dot_product_attention(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v),
                                           attn_mask=torch.from_numpy(band_mask(n, w)))
    np.testing.assert_allclose(out, t_out.numpy(), atol=TOL[dtype], rtol=TOL[dtype])


def test_banded_equals_self_attention_with_projections_and_scale():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 30, 6))
    W_q, W_k, W_v = rng.standard_normal((4, 6)), rng.standard_normal((4, 6)), rng.standard_normal((5, 6))
    ref, _ = self_attention(x, W_q, W_k, W_v, mask=band_mask(30, 4), scale=1.0)
    out, _ = truncated_attention(x @ W_q.T, x @ W_k.T, x @ W_v.T, 4, scale=1.0)
    np.testing.assert_allclose(out, ref, atol=1e-10, rtol=1e-10)


def test_band_weights_rows_sum_to_one_and_vanish_outside_sequence():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((10, 3)) for _ in range(3))
    _, band_w = truncated_attention(q, k, v, 3)
    np.testing.assert_allclose(band_w.sum(-1), 1.0, atol=1e-12)
    assert np.all(band_w[~band_valid(10, 3)] == 0)
    assert np.all(band_w[band_valid(10, 3)] > 0)
    assert band_valid(10, 3).sum() == band_mask(10, 3).sum()


def test_large_scores_stay_finite():
    q = np.full((5, 2), 100.0)
    k = np.full((5, 2), 100.0)
    v = np.arange(10.0).reshape(5, 2)
    out, _ = truncated_attention(q, k, v, 1, scale=1.0)
    ref, _ = scaled_dot_product_attention(q, k, v, mask=band_mask(5, 1), scale=1.0)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, ref, atol=1e-10)


def test_bad_inputs_raise_value_error_naming_shapes():
    q = np.zeros((6, 3))
    with pytest.raises(ValueError, match="w"):
        truncated_attention(q, q, q, -1)
    with pytest.raises(ValueError, match=r"\(5, 3\)"):
        truncated_attention(q, np.zeros((5, 3)), q, 1)
    with pytest.raises(ValueError, match="2w\\+1"):
        band_to_dense(np.zeros((6, 4)), 2)


def _peak_bytes(n: int, w: int, d: int = 8) -> int:
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
    tracemalloc.start()
    truncated_attention(q, k, v, w)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_memory_grows_linearly_in_n_not_quadratically():
    w, itemsize = 8, 8
    p4, p8, p16 = _peak_bytes(4096, w), _peak_bytes(8192, w), _peak_bytes(16384, w)
    assert p8 < 2.3 * p4 and p16 < 2.3 * p8  # doubling n about doubles the memory (n^2 would quadruple it)
    assert p16 < 0.05 * 16384**2 * itemsize  # far below one dense (n, n) float64 score matrix
    assert p16 < 60 * 16384 * (2 * w + 1) * itemsize  # O(n * w) with a small constant


@pytest.mark.parametrize("n,w", [(1, 0), (5, 0), (7, 2), (6, 10), (64, 5)])
def test_band_mask_view_equals_band_mask_in_linear_memory(n, w):
    view = band_mask_view(n, w)
    np.testing.assert_array_equal(view, band_mask(n, w))
    base = view
    while base.base is not None:
        base = base.base
    assert base.nbytes == 2 * n - 1  # one pattern of 2n - 1 booleans, not n^2
    assert not view.flags.writeable
