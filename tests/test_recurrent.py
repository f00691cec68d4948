"""attn_ref.recurrent against torch.nn.RNN and a breadth-first search."""

import math

import numpy as np
import pytest
import torch

from attn_ref.recurrent import (
    birnn_forward,
    dependency_graph,
    path_length,
    path_length_table,
    rnn_forward,
    shortest_path_length,
)


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


def test_bad_shapes_raise():
    with pytest.raises(ValueError, match=r"\(n, d_in\)"):
        rnn_forward(np.zeros(3), np.zeros((2, 3)), np.zeros((2, 2)), np.zeros(2))
    with pytest.raises(ValueError, match=r"d_h=2"):
        rnn_forward(np.zeros((4, 3)), np.zeros((2, 3)), np.zeros((3, 3)), np.zeros(2))


def _layers_needed(kind, n, k, s, t, most=12):
    """By breadth-first search: the fewest layers of ``kind`` through which x_s reaches y_t (the path's length),
    -1 if none does (the recurrent and the attention graphs are one layer: the path length is the search's)."""
    if kind in ("attention", "recurrent"):
        length = shortest_path_length(dependency_graph(kind, n, k, n_layers=1)[1], (0, s), (1, t))
        return -1 if math.isinf(length) else length
    for layers in range(1, most + 1):
        if not math.isinf(shortest_path_length(dependency_graph(kind, n, k, n_layers=layers)[1], (0, s), (layers, t))):
            return layers
    return -1


@pytest.mark.parametrize("kind", ["attention", "recurrent", "conv", "dilated_conv"])
@pytest.mark.parametrize("n,k", [(1, 2), (7, 2), (10, 3), (9, 4)])
def test_path_length_table_is_the_dependency_graphs_shortest_paths(kind, n, k):
    """Issue 41 (ps10's table): every entry is what a breadth-first search finds on the computation graph; the
    last row's first entry is path_length's a^1 -> b^n."""
    table = path_length_table(kind, n, k)
    assert table.shape == (n, n) and table.dtype.kind == "i"
    expected = [[_layers_needed(kind, n, k, s, t) for s in range(n)] for t in range(n)]
    np.testing.assert_array_equal(table, expected)
    assert table[n - 1, 0] == path_length(kind, n, k)
