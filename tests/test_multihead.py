"""attn_ref.multi_head_attention with the weights of torch.nn.MultiheadAttention gives its outputs."""

import numpy as np
import pytest
import torch

import attn_ref as ar


def _module(d_model, n_heads, dtype, batch_first, bias=True, seed=0):
    torch.manual_seed(seed)
    m = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=batch_first, bias=bias, dropout=0.0)
    m.eval()
    with torch.no_grad():  # non-zero biases, so that reading them is tested too
        if bias:
            m.in_proj_bias.normal_()
            m.out_proj.bias.normal_()
    return m.to(torch.float64 if dtype == np.float64 else torch.float32)


@pytest.mark.parametrize("dtype, atol", [(np.float32, 1e-5), (np.float64, 1e-10)])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_equals_torch_module(rng, dtype, atol, batch_first, n_heads):
    m = _module(8, n_heads, dtype, batch_first)
    x = rng.normal(size=(3, 5, 8)).astype(dtype)  # (B, n, d)
    xt = torch.from_numpy(x if batch_first else x.transpose(1, 0, 2).copy())
    with torch.no_grad():
        y, w_avg = m(xt, xt, xt, need_weights=True, average_attn_weights=True)
        _, w_heads = m(xt, xt, xt, need_weights=True, average_attn_weights=False)
    y = y.numpy() if batch_first else y.numpy().transpose(1, 0, 2)
    out, w = ar.multi_head_attention(x, ar.mha_params_from_torch(m), n_heads)
    assert out.shape == (3, 5, 8) and w.shape == (3, n_heads, 5, 5)
    np.testing.assert_allclose(out, y, atol=atol, rtol=atol)
    np.testing.assert_allclose(w, w_heads.numpy(), atol=atol)
    np.testing.assert_allclose(w.mean(axis=1), w_avg.numpy(), atol=atol)


@pytest.mark.parametrize("dtype, atol", [(np.float32, 1e-5), (np.float64, 1e-10)])
def test_key_padding_and_attn_mask(rng, dtype, atol):
    """torch: True = masked out; attn_ref: True = may attend. Translate and compare."""
    m = _module(8, 2, dtype, batch_first=True, seed=1)
    x = rng.normal(size=(2, 6, 8)).astype(dtype)
    key_padding = np.zeros((2, 6), dtype=bool)
    key_padding[0, 4:] = True  # sequence 0 has 4 real tokens
    attn_block = np.triu(np.ones((6, 6), dtype=bool), 1)  # causal, torch convention
    xt = torch.from_numpy(x)
    with torch.no_grad():
        y, w = m(xt, xt, xt, key_padding_mask=torch.from_numpy(key_padding),
                 attn_mask=torch.from_numpy(attn_block), average_attn_weights=False)
    allowed = ~attn_block[None, None] & ~key_padding[:, None, None, :]  # (B, 1, n, n)
    out, ours = ar.multi_head_attention(x, ar.mha_params_from_torch(m), 2, mask=allowed)
    np.testing.assert_allclose(out, y.numpy(), atol=atol, rtol=atol)
    np.testing.assert_allclose(ours, w.numpy(), atol=atol)
    assert np.all(ours[0, :, :, 4:] == 0)


def test_float_attn_mask(rng):
    m = _module(6, 3, np.float64, batch_first=True, seed=2)
    x = rng.normal(size=(1, 4, 6))
    add = rng.normal(size=(4, 4))
    with torch.no_grad():
        y, _ = m(*(torch.from_numpy(x),) * 3, attn_mask=torch.from_numpy(add))
    out, _ = ar.multi_head_attention(x, ar.mha_params_from_torch(m), 3, mask=add)
    np.testing.assert_allclose(out, y.numpy(), atol=1e-10)


def test_without_bias(rng):
    m = _module(4, 2, np.float64, batch_first=True, bias=False)
    x = rng.normal(size=(1, 3, 4))
    with torch.no_grad():
        y, _ = m(*(torch.from_numpy(x),) * 3)
    out, _ = ar.multi_head_attention(x, ar.mha_params_from_torch(m), 2)
    np.testing.assert_allclose(out, y.numpy(), atol=1e-10)


def test_split_then_merge_is_identity_and_heads_take_contiguous_features(rng):
    x = rng.normal(size=(2, 5, 12))
    h = ar.split_heads(x, 3)
    assert h.shape == (2, 3, 5, 4)
    np.testing.assert_array_equal(h[:, 1], x[..., 4:8])
    np.testing.assert_array_equal(ar.merge_heads(h), x)


def test_one_head_equals_single_head_self_attention(rng):
    p = ar.init_mha_params(6, rng)
    x = rng.normal(size=(4, 6))
    out, w = ar.multi_head_attention(x, p, 1)
    o1, w1 = ar.self_attention(x, p["W_q"], p["W_k"], p["W_v"])
    np.testing.assert_allclose(out, o1 @ p["W_o"].T, atol=1e-10)
    np.testing.assert_allclose(w[0], w1, atol=1e-10)


@pytest.mark.parametrize("n_heads", [0, 5])
def test_heads_must_divide_d_model(rng, n_heads):
    with pytest.raises(ValueError, match="divisor of d_model=8"):
        ar.multi_head_attention(rng.normal(size=(3, 8)), ar.init_mha_params(8), n_heads)


def test_wrong_weight_shape_is_named(rng):
    p = ar.init_mha_params(8)
    p["W_k"] = np.ones((8, 4))
    with pytest.raises(ValueError, match=r"W_k: expected shape \(8, 8\), got \(8, 4\)"):
        ar.multi_head_attention(rng.normal(size=(3, 8)), p, 2)
