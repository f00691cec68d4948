"""GAT as masked self-attention: attn_ref.graph vs torch_geometric.nn.GATConv with the same weights."""

import warnings

import numpy as np
import pytest
import torch

with warnings.catch_warnings():  # torch_geometric's import-time DeprecationWarning (torch.jit.script)
    warnings.simplefilter("ignore", DeprecationWarning)
    from torch_geometric.nn import GATConv

from attn_ref.attention import self_attention
from attn_ref.graph import adjacency_mask, gat_layer, gat_params_from_pyg, init_gat_params

# node 5 is isolated; edges are directed (0->1 but not 1->0); 3->3 is an explicit self-loop
EDGES = np.array([[0, 1, 2, 3, 0, 2, 4, 3],
                  [1, 2, 0, 0, 3, 3, 2, 3]])
N = 6
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def _pyg(conv, x, edge_index):
    with torch.no_grad():
        out, (ei, alpha) = conv(x, torch.from_numpy(edge_index), return_attention_weights=True)
    return out.numpy(), ei.numpy(), alpha.numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("heads,concat", [(1, True), (3, True), (3, False), (2, False)])
@pytest.mark.parametrize("as_mask", [False, True])
def test_gat_layer_equals_pyg_gatconv(dtype, heads, concat, as_mask):
    torch.manual_seed(heads + 10 * concat)
    conv = GATConv(5, 4, heads=heads, concat=concat, dropout=0.0).to(dtype).eval()
    with torch.no_grad():
        conv.bias.normal_()  # PyG initialises the bias to zero: make it matter
    x = torch.randn(N, 5, dtype=dtype)
    ref, ei, ref_alpha = _pyg(conv, x, EDGES)
    graph = adjacency_mask(EDGES, N, self_loops=False) if as_mask else EDGES
    out, weights = gat_layer(x.numpy(), graph, gat_params_from_pyg(conv), n_heads=heads, concat=concat)
    assert out.shape == ((N, heads * 4) if concat else (N, 4))
    np.testing.assert_allclose(out, ref, atol=TOL[dtype], rtol=TOL[dtype])
    # PyG returns alpha per edge (source ei[0] -> target ei[1]): it is weights[h, target, source]
    np.testing.assert_allclose(weights[:, ei[1], ei[0]].T, ref_alpha, atol=TOL[dtype], rtol=TOL[dtype])
    # weights vanish off the edges (+ self-loops) and each row sums to 1
    mask = adjacency_mask(EDGES, N)
    assert np.all(weights[:, ~mask] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=TOL[dtype])


def test_isolated_node_attends_only_to_itself():
    params = init_gat_params(5, 3, n_heads=2, rng=np.random.default_rng(0))
    x = np.random.default_rng(1).standard_normal((N, 5))
    out, weights = gat_layer(x, EDGES, params, n_heads=2)
    np.testing.assert_allclose(weights[:, 5, 5], 1.0)
    h5 = (params["W"] @ x[5])  # (heads*C,): its own transformed features
    np.testing.assert_allclose(out[5], h5 + params["bias"], atol=1e-12)


def test_without_self_loops_isolated_node_outputs_bias_like_pyg():
    torch.manual_seed(0)
    conv = GATConv(5, 3, heads=2, add_self_loops=False).double().eval()
    with torch.no_grad():
        conv.bias.normal_()
    x = torch.randn(N, 5, dtype=torch.float64)
    ref, _, _ = _pyg(conv, x, EDGES)
    out, weights = gat_layer(x.numpy(), EDGES, gat_params_from_pyg(conv), n_heads=2, add_self_loops=False)
    np.testing.assert_allclose(out, ref, atol=1e-10)
    np.testing.assert_allclose(out[5], conv.bias.detach().numpy())
    assert np.all(weights[:, 5] == 0)


def test_direction_matters_messages_flow_source_to_target():
    mask = adjacency_mask(np.array([[0], [1]]), 2, self_loops=False)
    assert mask[1, 0] and not mask[0, 1]  # edge 0 -> 1: node 1 (query) attends to node 0 (key)
    params = init_gat_params(3, 2, rng=np.random.default_rng(2))
    x = np.random.default_rng(3).standard_normal((3, 3))
    fwd, _ = gat_layer(x, np.array([[0, 1], [1, 2]]), params)
    bwd, _ = gat_layer(x, np.array([[1, 2], [0, 1]]), params)
    assert not np.allclose(fwd, bwd)


def test_single_head_gat_is_masked_self_attention_with_additive_score():
    """alpha_ij = softmax_j LeakyReLU(a_dst.Wx_i + a_src.Wx_j): the paper's eq. 3 written out by hand."""
    rng = np.random.default_rng(4)
    params = init_gat_params(4, 3, rng=rng)
    params["bias"] = np.zeros(3)
    x = rng.standard_normal((N, 4))
    out, weights = gat_layer(x, EDGES, params)
    h = x @ params["W"].T
    mask = adjacency_mask(EDGES, N)
    for i in range(N):
        nbrs = np.flatnonzero(mask[i])
        e = np.array([np.concatenate([params["att_dst"][0], params["att_src"][0]]) @ np.concatenate([h[i], h[j]])
                      for j in nbrs])
        e = np.where(e > 0, e, 0.2 * e)
        a = np.exp(e - e.max()) / np.exp(e - e.max()).sum()
        np.testing.assert_allclose(weights[0, i, nbrs], a, atol=1e-12)
        np.testing.assert_allclose(out[i], a @ h[nbrs], atol=1e-12)
    # the outputs mix the same v = W x as self-attention with the same mask would
    _, sa_w = self_attention(x, params["W"], params["W"], params["W"], mask=mask)
    assert np.all((sa_w > 0) == (weights[0] > 0))


def test_bad_inputs_raise_value_error_naming_shapes():
    params = init_gat_params(5, 3)
    with pytest.raises(ValueError, match=r"\(3, 2\)"):
        adjacency_mask(np.zeros((3, 2), dtype=int), 4)
    with pytest.raises(ValueError, match=r"\(3, 5\)"):
        gat_layer(np.zeros((6, 4)), EDGES, params)
    with pytest.raises(ValueError, match=r"\(5, 5\)"):
        gat_layer(np.zeros((6, 5)), np.ones((5, 5), dtype=bool), params)

