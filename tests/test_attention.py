"""attn_ref's self-attention against torch.nn.functional.scaled_dot_product_attention, and its own forms."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import attn_ref as ar
from conftest import tol


def _weights(rng, d_in, d_k, d_v, dtype):
    return [rng.normal(size=s).astype(dtype) for s in ((d_k, d_in), (d_k, d_in), (d_v, d_in))]


def _sdpa(x, W_q, W_k, W_v, **kw):
    t = [torch.from_numpy(np.ascontiguousarray(x @ W.T)) for W in (W_q, W_k, W_v)]
    if "attn_mask" in kw and isinstance(kw["attn_mask"], np.ndarray):
        kw["attn_mask"] = torch.from_numpy(kw["attn_mask"])
    return F.scaled_dot_product_attention(*t, **kw).numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_equals_sdpa(rng, dtype, batch):
    x = rng.normal(size=(*batch, 7, 5)).astype(dtype)
    W = _weights(rng, 5, 4, 6, dtype)
    out, w = ar.self_attention(x, *W)
    assert out.dtype == dtype and out.shape == (*batch, 7, 6) and w.shape == (*batch, 7, 7)
    np.testing.assert_allclose(out, _sdpa(x, *W), atol=tol(dtype), rtol=tol(dtype))
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_boolean_mask_equals_sdpa(rng, dtype):
    x = rng.normal(size=(2, 6, 5)).astype(dtype)
    W = _weights(rng, 5, 4, 3, dtype)
    mask = rng.random((2, 6, 6)) > 0.4
    mask[:, :, 0] = True  # every query sees at least one key
    out, w = ar.self_attention(x, *W, mask=mask)
    np.testing.assert_allclose(out, _sdpa(x, *W, attn_mask=mask), atol=tol(dtype), rtol=tol(dtype))
    assert np.all(w[~mask] == 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_mask_equals_sdpa(rng, dtype):
    x = rng.normal(size=(6, 5)).astype(dtype)
    W = _weights(rng, 5, 4, 3, dtype)
    mask = rng.normal(size=(6, 6)).astype(dtype)
    mask[rng.random((6, 6)) > 0.7] = -np.inf
    mask[:, 2] = 0.0
    out, _ = ar.self_attention(x, *W, mask=mask)
    np.testing.assert_allclose(out, _sdpa(x, *W, attn_mask=mask), atol=tol(dtype), rtol=tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_causal_equals_sdpa_is_causal(rng, dtype):
    x = rng.normal(size=(2, 8, 5)).astype(dtype)
    W = _weights(rng, 5, 4, 4, dtype)
    out, w = ar.self_attention(x, *W, mask=ar.causal_mask(8))
    np.testing.assert_allclose(out, _sdpa(x, *W, is_causal=True), atol=tol(dtype), rtol=tol(dtype))
    assert np.all(np.triu(w[0], 1) == 0)


def test_scale_argument_equals_sdpa_scale(rng):
    x = rng.normal(size=(5, 4))
    W = _weights(rng, 4, 4, 4, np.float64)
    out, _ = ar.self_attention(x, *W, scale=1.0)
    np.testing.assert_allclose(out, _sdpa(x, *W, scale=1.0), atol=1e-10)
    out_default, _ = ar.self_attention(x, *W)
    np.testing.assert_allclose(out_default, _sdpa(x, *W, scale=0.5), atol=1e-10)
    assert not np.allclose(out, out_default)


def test_fully_masked_row_gives_zero_like_torch(rng):
    x = rng.normal(size=(4, 3))
    W = _weights(rng, 3, 2, 2, np.float64)
    mask = np.ones((4, 4), dtype=bool)
    mask[1] = False
    out, w = ar.self_attention(x, *W, mask=mask)
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_array_equal(w[1], 0.0)
    np.testing.assert_allclose(out, _sdpa(x, *W, attn_mask=mask), atol=1e-10)


@pytest.mark.parametrize("scale", [None, 1.0])
def test_columns_equal_rows_transposed(rng, scale):
    I = rng.normal(size=(5, 7))  # (d_in, n)
    W = _weights(rng, 5, 3, 4, np.float64)
    O, A_prime = ar.self_attention_columns(I, *W, scale=scale)
    out, w = ar.self_attention(I.T, *W, scale=scale)
    assert O.shape == (4, 7) and A_prime.shape == (7, 7)
    np.testing.assert_allclose(O, out.T, atol=1e-10)
    np.testing.assert_allclose(A_prime, w.T, atol=1e-10)
    np.testing.assert_allclose(A_prime.sum(axis=0), 1.0, atol=1e-10)


@pytest.mark.parametrize("scale", [None, 1.0])
def test_attend_one_equals_column_i(rng, scale):
    a = rng.normal(size=(4, 6))
    W = _weights(rng, 4, 3, 2, np.float64)
    O, A_prime = ar.self_attention_columns(a, *W, scale=scale)
    s = 1 / np.sqrt(3) if scale is None else 1.0
    for i in range(6):
        step = ar.attend_one(a, i, *W, scale=scale)
        np.testing.assert_allclose(step.b, O[:, i], atol=1e-10)
        np.testing.assert_allclose(step.alpha_prime, A_prime[:, i], atol=1e-10)
        q = W[0] @ a[:, i]
        np.testing.assert_allclose(step.alpha, [s * q @ (W[1] @ a[:, j]) for j in range(6)], atol=1e-10)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_permuting_rows_permutes_output(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    W = _weights(rng, 4, 3, 5, np.float64)
    perm = rng.permutation(n)
    out, w = ar.self_attention(x, *W)
    out_p, w_p = ar.self_attention(x[perm], *W)
    np.testing.assert_allclose(out_p, out[perm], atol=1e-10)
    np.testing.assert_allclose(w_p, w[perm][:, perm], atol=1e-10)


@pytest.mark.parametrize("n, w", [(1, 0), (6, 0), (6, 2), (5, 9)])
def test_band_mask_is_the_definition(n, w):
    i = np.arange(n)
    np.testing.assert_array_equal(ar.band_mask(n, w), np.abs(i[:, None] - i[None, :]) <= w)


def test_band_and_causal_masks():
    b = ar.band_mask(5, 1)
    assert b.dtype == bool and b[2, 1] and b[2, 3] and not b[2, 0] and b.sum() == 13
    c = ar.causal_mask(4)
    assert c[3, 0] and not c[0, 3] and c.sum() == 10
    with pytest.raises(ValueError, match="half-width"):
        ar.band_mask(4, -1)


@pytest.mark.parametrize("call, match", [
    (lambda r: ar.self_attention(r.normal(size=(5,)), np.eye(5), np.eye(5), np.eye(5)), r"\(\.\.\., n, d_in\)"),
    (lambda r: ar.self_attention(r.normal(size=(3, 5)), np.eye(4), np.eye(4), np.eye(4)), r"d_in=5.*\(4, 4\)"),
    (lambda r: ar.self_attention(r.normal(size=(3, 4)), np.eye(4), np.ones((3, 4)), np.eye(4)), r"d_k"),
    (lambda r: ar.self_attention(r.normal(size=(3, 4)), np.eye(4), np.eye(4), np.eye(4), mask=np.ones((2, 2), bool)),
     r"\(3, 3\).*\(2, 2\)"),
    (lambda r: ar.self_attention_columns(r.normal(size=(2, 3, 4)), np.eye(2), np.eye(2), np.eye(2)), r"\(d_in, n\)"),
    (lambda r: ar.attend_one(r.normal(size=(2, 3)), 3, np.eye(2), np.eye(2), np.eye(2)), r"\[0, 3\)"),
])
def test_bad_input_names_expected_and_received_shape(rng, call, match):
    with pytest.raises(ValueError, match=match):
        call(rng)
