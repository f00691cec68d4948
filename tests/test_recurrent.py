"""attn_ref.recurrent (and the tiny torch models) against torch.nn.RNN, nn.MultiheadAttention and BFS."""

import math

import numpy as np
import pytest
import torch

from attn_ref.recurrent import (
    birnn_forward,
    dependency_graph,
    first_token_batch,
    path_length,
    rnn_forward,
    shortest_path_length,
)
from attn_ref.tiny_models import AttentionClassifier, RNNClassifier, SelfAttention, TinyViT, n_parameters


def _rnn_weights(rnn, suffix=""):
    g = lambda name: getattr(rnn, name + suffix).detach().numpy()  # noqa: E731
    return g("weight_ih_l0"), g("weight_hh_l0"), g("bias_ih_l0") + g("bias_hh_l0")


@pytest.mark.parametrize("n,d_in,d_h", [(1, 3, 4), (7, 3, 5), (30, 2, 8)])
def test_rnn_forward_equals_torch(n, d_in, d_h):
    torch.manual_seed(n)
    rnn = torch.nn.RNN(d_in, d_h, nonlinearity="tanh", batch_first=True).double()
    x = torch.randn(1, n, d_in, dtype=torch.float64)
    h0 = torch.randn(1, 1, d_h, dtype=torch.float64)
    with torch.no_grad():
        ref, _ = rnn(x)
        ref_h0, _ = rnn(x, h0)
    W_xh, W_hh, b = _rnn_weights(rnn)
    np.testing.assert_allclose(rnn_forward(x[0].numpy(), W_xh, W_hh, b), ref[0].numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(rnn_forward(x[0].numpy(), W_xh, W_hh, b, h0=h0[0, 0].numpy()), ref_h0[0].numpy(),
                               rtol=0, atol=1e-10)


def test_birnn_equals_torch_bidirectional():
    torch.manual_seed(1)
    rnn = torch.nn.RNN(3, 4, bidirectional=True, batch_first=True).double()
    x = torch.randn(1, 9, 3, dtype=torch.float64)
    with torch.no_grad():
        ref, _ = rnn(x)
    out = birnn_forward(x[0].numpy(), _rnn_weights(rnn), _rnn_weights(rnn, "_reverse"))
    np.testing.assert_allclose(out, ref[0].numpy(), rtol=0, atol=1e-10)


def test_rnn_state_depends_on_the_past_attention_is_one_step():
    # changing x_1 changes the last state of the RNN only through the n-1 recurrent steps
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 2))
    W_xh, W_hh, b = rng.normal(size=(3, 2)), rng.normal(size=(3, 3)), rng.normal(size=3)
    x2 = x.copy()
    x2[0] += 1.0
    assert np.abs(rnn_forward(x, W_xh, W_hh, b)[-1] - rnn_forward(x2, W_xh, W_hh, b)[-1]).max() > 0
    assert np.abs(rnn_forward(x, W_xh, 0 * W_hh, b)[-1] - rnn_forward(x2, W_xh, 0 * W_hh, b)[-1]).max() == 0


@pytest.mark.parametrize("kind", ["attention", "recurrent", "conv", "dilated_conv"])
@pytest.mark.parametrize("k", [2, 3, 4])
def test_path_length_equals_bfs_on_the_graph(kind, k):
    for n in (1, 2, 3, 5, 8, 9, 17):
        nodes, edges = dependency_graph(kind, n, k)
        L = path_length(kind, n, k)
        top = max(layer for layer, _ in nodes)
        assert shortest_path_length(edges, (0, 0), (top, n - 1)) == L, (kind, n, k)
        if kind in ("conv", "dilated_conv") and L > 1:
            # one layer fewer is not enough: the formula is the minimum
            _, fewer = dependency_graph(kind, n, k, n_layers=L - 1)
            assert shortest_path_length(fewer, (0, 0), (L - 1, n - 1)) == math.inf


def test_path_length_orders_of_vaswani_table_1():
    n = 1024
    assert path_length("attention", n) == 1
    assert path_length("recurrent", n) == n
    assert path_length("conv", n, k=3) == 512  # O(n / k)
    assert path_length("dilated_conv", n, k=2) == 10  # O(log_k n)
    with pytest.raises(ValueError, match="kind"):
        path_length("transformer", 4)


def test_first_token_batch():
    tokens, labels = first_token_batch(np.random.default_rng(0), 16, n=30, vocab=5)
    assert tokens.shape == (16, 30) and tokens.max() < 5
    np.testing.assert_array_equal(labels, tokens[:, 0])


def test_self_attention_module_equals_torch_multihead():
    torch.manual_seed(0)
    d, h = 8, 2
    mine = SelfAttention(d, h)
    ref = torch.nn.MultiheadAttention(d, h, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(mine.qkv.weight)
        ref.in_proj_bias.copy_(mine.qkv.bias)
        ref.out_proj.weight.copy_(mine.out.weight)
        ref.out_proj.bias.copy_(mine.out.bias)
        x = torch.randn(3, 5, d)
        np.testing.assert_allclose(mine(x).numpy(), ref(x, x, x)[0].numpy(), rtol=1e-5, atol=1e-5)


def test_vit_patches_row_major():
    x = torch.arange(64.0).reshape(1, 1, 8, 8)
    p = TinyViT(patch=2).patches(x)  # (1, 16, 4)
    ref = torch.nn.functional.unfold(x, 2, stride=2).transpose(1, 2)  # (1, 16, 4)
    assert torch.equal(p, ref)


def test_toy_models_have_similar_size():
    a, r = n_parameters(AttentionClassifier(8, 40)), n_parameters(RNNClassifier(8))
    assert abs(a - r) / r < 0.2


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match=r"\(n, d_in\)"):
        rnn_forward(np.zeros(3), np.zeros((2, 3)), np.zeros((2, 2)), np.zeros(2))
    with pytest.raises(ValueError, match=r"d_h=2"):
        rnn_forward(np.zeros((4, 3)), np.zeros((2, 3)), np.zeros((3, 3)), np.zeros(2))


def test_gaussian_attention_heads_peak_at_their_centre():
    """Each quadratic-encoding head puts its largest weight at query + Delta, sharper as gamma grows."""
    from attn_ref.tiny_models import GaussianAttentionClassifier, attention_spread

    torch.manual_seed(0)
    model = GaussianAttentionClassifier(n_heads=2, side=8, gamma0=5.0)
    with torch.no_grad():
        model.centre.copy_(torch.tensor([[0.0, 0.0], [1.0, -2.0]]))
        w = model.weights()  # (2, 64, 64)
    assert w.shape == (2, 64, 64)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 64))
    query = 3 * 8 + 4  # pixel (3, 4)
    assert int(w[0, query].argmax()) == query
    assert int(w[1, query].argmax()) == (3 + 1) * 8 + (4 - 2)
    mean_dist, in_3x3 = attention_spread(w, side=8)
    assert in_3x3[0] > 0.99 and mean_dist[0] < 0.1  # sharp head on the query itself
    assert in_3x3[1] < in_3x3[0]  # the head two columns away has less weight in the 3x3
    out = model(torch.rand(5, 1, 8, 8))
    assert out.shape == (5, 10)


def test_attention_spread_of_uniform_and_one_hot_weights():
    """Uniform weights: every pixel alike; one-hot on the query: distance 0, all in the 3x3."""
    from attn_ref.tiny_models import attention_spread

    uniform = np.full((1, 16, 16), 1 / 16)
    one_hot = np.eye(16)[None]
    d_u, near_u = attention_spread(uniform, side=4)
    d_o, near_o = attention_spread(one_hot, side=4)
    assert d_o[0] == 0 and near_o[0] == 1
    # 4x4 grid: a corner pixel has 4 of 16 in its 3x3, an edge pixel 6, an inner pixel 9
    assert math.isclose(near_u[0], (4 * 4 + 8 * 6 + 4 * 9) / 16 / 16, rel_tol=1e-6)
    assert d_u[0] > 1
