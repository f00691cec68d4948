"""attn_ref.encoder against torch.nn.LayerNorm, torch.nn.TransformerEncoderLayer (eval mode)."""

import numpy as np
import pytest
import torch

from attn_ref.encoder import (
    encoder_block,
    encoder_params_from_torch,
    feed_forward,
    init_encoder_params,
    layer_norm,
)

torch.set_num_threads(1)


def test_layer_norm_matches_torch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3, 5, 8)) * 4 + 2
    ln = torch.nn.LayerNorm(8, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.copy_(torch.from_numpy(rng.normal(size=8)))
        ln.bias.copy_(torch.from_numpy(rng.normal(size=8)))
        expected = ln(torch.from_numpy(x)).numpy()
    got = layer_norm(x, ln.weight.detach().numpy(), ln.bias.detach().numpy(), eps=ln.eps)
    np.testing.assert_allclose(got, expected, atol=1e-10)


def test_layer_norm_rows_have_mean_zero_variance_one():
    x = np.random.default_rng(1).normal(size=(4, 16)) * 10
    y = layer_norm(x)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-10)
    np.testing.assert_allclose(y.var(-1), 1, atol=1e-4)  # eps = 1e-5 makes it slightly below 1


def test_feed_forward_is_position_wise_and_matches_torch():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 6, 4))
    lin1, lin2 = torch.nn.Linear(4, 10, dtype=torch.float64), torch.nn.Linear(10, 4, dtype=torch.float64)
    with torch.no_grad():
        expected = lin2(torch.relu(lin1(torch.from_numpy(x)))).numpy()
    args = [t.detach().numpy() for t in (lin1.weight, lin1.bias, lin2.weight, lin2.bias)]
    got = feed_forward(x, *args)
    np.testing.assert_allclose(got, expected, atol=1e-10)
    # position-wise: permuting positions permutes the output
    perm = rng.permutation(6)
    np.testing.assert_allclose(feed_forward(x[:, perm], *args), got[:, perm], atol=1e-12)


def _layer(d_model, n_heads, d_ff, norm_first, dtype, seed):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, activation="relu",
                                             batch_first=True, norm_first=norm_first, dtype=dtype)
    with torch.no_grad():  # non-trivial norms and biases, so that every parameter matters
        for name, p in layer.named_parameters():
            if "norm" in name or "bias" in name:
                p.add_(0.3 * torch.randn_like(p))
    return layer.eval()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("dtype,atol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_encoder_block_matches_torch(norm_first, dtype, atol):
    layer = _layer(8, 2, 16, norm_first, dtype, seed=3)
    x = torch.randn(3, 5, 8, dtype=dtype, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        expected = layer(x).numpy()
    got = encoder_block(x.numpy(), encoder_params_from_torch(layer), n_heads=2, norm_first=norm_first)
    assert got.shape == (3, 5, 8)
    np.testing.assert_allclose(got, expected, atol=atol, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_with_padding_mask_matches_torch(norm_first):
    layer = _layer(12, 3, 20, norm_first, torch.float64, seed=5)
    x = torch.randn(3, 6, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    lengths = torch.tensor([6, 4, 1])
    pad = torch.arange(6)[None, :] >= lengths[:, None]  # (B, n), True = padding (PyTorch's convention)
    with torch.no_grad():
        expected = layer(x, src_key_padding_mask=pad).numpy()
    mask = ~pad.numpy()[:, None, None, :]  # (B, 1, 1, n), True = may attend
    got = encoder_block(x.numpy(), encoder_params_from_torch(layer), n_heads=3, mask=mask, norm_first=norm_first)
    real = ~pad.numpy()  # PyTorch's fast path may leave padded rows arbitrary: compare the real tokens
    np.testing.assert_allclose(got[real], expected[real], atol=1e-10)
    # the mask matters: without it the real tokens of the short sequences change
    unmasked = encoder_block(x.numpy(), encoder_params_from_torch(layer), n_heads=3, norm_first=norm_first)
    assert np.abs(unmasked[1, :4] - got[1, :4]).max() > 1e-3


def test_encoder_block_orders_differ():
    params = init_encoder_params(8, 16, np.random.default_rng(7))
    x = np.random.default_rng(8).normal(size=(4, 8))
    post = encoder_block(x, params, 2)
    pre = encoder_block(x, params, 2, norm_first=True)
    assert post.shape == pre.shape == (4, 8)
    assert np.abs(post - pre).max() > 1e-2
    np.testing.assert_allclose(post.mean(-1), 0, atol=1e-10)  # post-norm ends with a layer norm


def test_bad_shapes_raise_value_error_naming_shapes():
    params = init_encoder_params(8, 16)
    with pytest.raises(ValueError, match=r"\(d_ff, d_model\)"):
        feed_forward(np.zeros((3, 5)), params["W_1"], params["b_1"], params["W_2"], params["b_2"])
    with pytest.raises(ValueError, match="gamma"):
        layer_norm(np.zeros((3, 8)), np.ones(5))
    with pytest.raises(ValueError, match=r"\(\.\.\., n, d_model\)"):
        encoder_block(np.zeros(8), params, 2)


def test_gelu_layer_is_refused():
    layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True)
    with pytest.raises(ValueError, match="relu"):
        encoder_params_from_torch(layer)
