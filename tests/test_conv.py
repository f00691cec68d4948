"""attn_ref.conv against torch.nn.Conv2d and the formulas of Cordonnier, Loukas & Jaggi (2020)."""

import numpy as np
import pytest
import torch

from attn_ref.conv import (
    conv2d_same,
    conv_as_attention_params,
    head_query_vectors,
    kernel_offsets,
    pixel_grid,
    quadratic_encoding,
    relative_attention_conv,
    relative_attention_weights,
    relative_scores,
)


def _torch_conv(K, c_in, c_out, seed, dtype=torch.float64):
    torch.manual_seed(seed)
    conv = torch.nn.Conv2d(c_in, c_out, K, padding="same", bias=True).to(dtype)
    x = torch.randn(2, c_in, 7, 6, dtype=dtype)  # (B, C, H, W), H != W
    with torch.no_grad():
        ref = conv(x).numpy().transpose(0, 2, 3, 1)  # (B, H, W, C_out)
    w, b = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    return x.numpy().transpose(0, 2, 3, 1), w, b, ref  # x as (B, H, W, C_in)


@pytest.mark.parametrize("K,c_in,c_out", [(3, 3, 5), (5, 2, 4), (1, 3, 2)])
def test_conv2d_same_equals_torch(K, c_in, c_out):
    x, w, b, ref = _torch_conv(K, c_in, c_out, seed=K)
    np.testing.assert_allclose(conv2d_same(x, w, b), ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("K,c_in,c_out", [(3, 3, 5), (5, 2, 4)])
def test_hard_attention_equals_torch_conv(K, c_in, c_out):
    x, w, b, ref = _torch_conv(K, c_in, c_out, seed=10 + K)
    params = conv_as_attention_params(w, b)
    assert params.centres.shape == (K * K, 2)
    out, weights = relative_attention_conv(x, params, gamma=np.inf)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-10)
    # the weights of the hard limit: each head of each query puts 1 on one key
    assert weights.shape[:2] == (K * K, x.shape[-3] * x.shape[-2])
    np.testing.assert_array_equal(weights.max(axis=-1), 1.0)
    np.testing.assert_array_equal(weights.sum(axis=-1), 1.0)
    # a single image (H, W, C_in) works too
    np.testing.assert_allclose(relative_attention_conv(x[0], params)[0], ref[0], rtol=0, atol=1e-10)


def test_hard_attention_float32():
    x, w, b, ref = _torch_conv(3, 2, 3, seed=3, dtype=torch.float32)
    out, _ = relative_attention_conv(x, conv_as_attention_params(w, b))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_finite_gamma_error_shrinks():
    x, w, b, ref = _torch_conv(3, 3, 4, seed=7)
    params = conv_as_attention_params(w, b)
    errors = [np.abs(relative_attention_conv(x, params, gamma=a)[0] - ref).max() for a in (1.0, 3.0, 10.0, 30.0)]
    assert all(e1 > e2 for e1, e2 in zip(errors, errors[1:], strict=False)), errors
    assert errors[0] > 1e-2 and errors[-1] < 1e-10
    # the mass off the centre is about 4 e^{-gamma} (four nearest neighbours at distance 1)
    A = relative_attention_weights(5, 5, np.array([[0, 0]]), gamma=10.0, pad=1)
    np.testing.assert_allclose(1 - A[0, 12].max(), 4 * np.exp(-10) / (1 + 4 * np.exp(-10)), rtol=1e-3)


def test_each_head_looks_at_its_offset():
    H, W, K = 5, 6, 3
    centres = kernel_offsets(K)
    A = relative_attention_weights(H, W, centres, gamma=np.inf, pad=1)
    keys = pixel_grid(H, W, pad=1)
    queries = pixel_grid(H, W)
    for h, d in enumerate(centres):
        assert np.all(A[h].sum(axis=-1) == 1)
        np.testing.assert_array_equal(keys[A[h].argmax(axis=-1)], queries + d)


def test_keys_inside_image_only_is_wrong_at_the_border():
    x, w, b, ref = _torch_conv(3, 2, 2, seed=5)
    out, _ = relative_attention_conv(x, conv_as_attention_params(w, b), pad=0)
    err = np.abs(out - ref).max(axis=(0, -1))  # (H, W)
    assert err[1:-1, 1:-1].max() < 1e-10  # interior pixels still exact
    assert err[0].min() > 1e-6 and err[:, -1].min() > 1e-6  # the border is not


def test_kernel_offsets_row_major():
    np.testing.assert_array_equal(kernel_offsets(3)[:4], [[-1, -1], [-1, 0], [-1, 1], [0, -1]])
    assert kernel_offsets(5).min() == -2 and kernel_offsets(5).max() == 2
    with pytest.raises(ValueError, match="odd"):
        kernel_offsets(4)


def test_scores_follow_the_paper_formula():
    # u_l . rho_delta = -gamma (||delta||^2 - 2 <delta, Delta_l>): Cordonnier et al.'s v_h . r_delta, alpha
    rng = np.random.default_rng(0)
    delta = rng.integers(-4, 5, size=(10, 2)).astype(float)
    centre = np.array([[1.0, -2.0]])
    gamma = 0.7
    direct = -gamma * (np.sum(delta**2, axis=1) - 2 * delta @ centre[0])
    np.testing.assert_allclose(quadratic_encoding(delta) @ head_query_vectors(centre, gamma)[0], direct)
    s = relative_scores(3, 4, centre, gamma, pad=0)  # (1, 12, 12)
    g = pixel_grid(3, 4)
    d = g[None, :, :] - g[:, None, :]
    np.testing.assert_allclose(s[0], -gamma * (np.sum(d**2, -1) - 2 * d @ centre[0]), atol=1e-12)


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match=r"\(C_out, C_in, K, K\)"):
        conv_as_attention_params(np.zeros((2, 3, 3)))
    params = conv_as_attention_params(np.zeros((2, 3, 3, 3)))
    with pytest.raises(ValueError, match="C_in=3"):
        relative_attention_conv(np.zeros((4, 4, 2)), params)
    with pytest.raises(ValueError, match="odd"):
        conv2d_same(np.zeros((4, 4, 1)), np.zeros((1, 1, 2, 2)))
