"""Self-attention on a graph: attend only along edges (Graph Attention Network, GAT).

Lecture: 应用 — on a graph, self-attention only needs the relevance of nodes joined by an
edge; the adjacency matrix (with self-loops) is the mask.  This is GAT (Veličković et al.
2018, eqs. 1-6), in the parameter layout of ``torch_geometric.nn.GATConv``:

    h_i = W x_i                                         W: (heads * C, d_in), h split into heads
    e_ij = LeakyReLU(a_dst . h_i + a_src . h_j)         = LeakyReLU(a^T [W x_i || W x_j]), slope 0.2
    alpha_ij = softmax over the neighbours j of i (i itself included) of e_ij
    out_i = || over heads (or mean over heads) of  sum_j alpha_ij h_j,  plus bias

(the paper's notation; the book's chapter "Graphs" writes a^i for x_i, w for a, alpha_{i,j} for
e_ij, alpha'_{i,j} for alpha_ij and b^i for out_i, and calls the mask M).

Edges follow PyTorch Geometric: ``edge_index`` is (2, E) with row 0 the *source* j and row 1
the *target* i; messages flow source -> target, so node i attends to the sources of its
incoming edges.  In the mask ``mask[i, j]`` (row = receiving node = query, column = sending
node = key) is True when the edge j -> i exists.  Repeated edges count once (PyG would count
a repeated edge twice in the softmax).
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_dim, check_ndim
from .softmax import softmax


def adjacency_mask(edge_index, n: int, self_loops: bool = True) -> np.ndarray:
    """Boolean (n, n) attention mask from a (2, E) edge_index: ``mask[target, source] = True``.

    self_loops: also let every node attend to itself (GAT's default).
    """
    edge_index = np.asarray(edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.dtype.kind not in "iu":
        raise ValueError(f"edge_index: expected an integer array of shape (2, E), got {edge_index.shape} "
                         f"of dtype {edge_index.dtype}")
    if edge_index.size and (edge_index.min() < 0 or edge_index.max() >= n):
        raise ValueError(f"edge_index: expected node ids in [0, {n}), got ids up to {edge_index.max()}")
    mask = np.zeros((n, n), dtype=bool)
    source, target = edge_index
    mask[target, source] = True
    if self_loops:
        mask[np.arange(n), np.arange(n)] = True
    return mask


def _graph_mask(graph, n: int, add_self_loops: bool) -> np.ndarray:
    graph = np.asarray(graph)
    if graph.dtype == bool:
        if graph.shape != (n, n):
            raise ValueError(f"adjacency: expected a boolean mask of shape (n, n) = ({n}, {n}), got {graph.shape}")
        return graph | np.eye(n, dtype=bool) if add_self_loops else graph
    return adjacency_mask(graph, n, self_loops=add_self_loops)


def leaky_relu(x: np.ndarray, negative_slope: float = 0.2) -> np.ndarray:
    """x where x > 0, negative_slope * x elsewhere."""
    return np.where(x > 0, x, negative_slope * x)


def init_gat_params(d_in: int, out_channels: int, n_heads: int = 1, concat: bool = True,
                    rng: np.random.Generator | None = None, dtype=np.float64) -> dict:
    """Random GAT parameters (Glorot-uniform, small random bias) in the layout :func:`gat_layer` reads."""
    rng = np.random.default_rng(0) if rng is None else rng
    HC = n_heads * out_channels
    bound_w = np.sqrt(6.0 / (d_in + HC))
    bound_a = np.sqrt(6.0 / (1 + out_channels))
    return {
        "W": rng.uniform(-bound_w, bound_w, (HC, d_in)).astype(dtype),
        "att_src": rng.uniform(-bound_a, bound_a, (n_heads, out_channels)).astype(dtype),
        "att_dst": rng.uniform(-bound_a, bound_a, (n_heads, out_channels)).astype(dtype),
        "bias": (0.1 * rng.standard_normal(HC if concat else out_channels)).astype(dtype),
    }


def gat_params_from_pyg(conv) -> dict:
    """Read a ``torch_geometric.nn.GATConv`` (shared ``lin``, no edge features, no residual) as numpy params."""
    if getattr(conv, "lin", None) is None:
        raise ValueError("conv: expected a GATConv with one shared `lin` (int in_channels), "
                         "got separate lin_src/lin_dst")
    if getattr(conv, "lin_edge", None) is not None or getattr(conv, "res", None) is not None:
        raise ValueError("conv: edge features (edge_dim) and residual=True are not part of this GAT layer")
    n_heads, C = conv.heads, conv.out_channels
    return {
        "W": conv.lin.weight.detach().cpu().numpy().copy(),  # (n_heads*C, d_in)
        "att_src": conv.att_src.detach().cpu().numpy().reshape(n_heads, C).copy(),
        "att_dst": conv.att_dst.detach().cpu().numpy().reshape(n_heads, C).copy(),
        "bias": None if conv.bias is None else conv.bias.detach().cpu().numpy().copy(),
    }


def gat_layer(x, graph, params: dict, n_heads: int = 1, concat: bool = True, negative_slope: float = 0.2,
              add_self_loops: bool = True):
    """One GAT layer (Veličković et al. 2018) as masked self-attention.

    x: (n, d_in); graph: an integer edge_index (2, E) (source, target) or a boolean mask (n, n)
    with ``mask[i, j]`` True when node i may attend to node j; params: W (n_heads*C, d_in),
    att_src (n_heads, C), att_dst (n_heads, C), bias (n_heads*C,) if concat else (C,), or None.
    Returns ``(out, weights)``: out (n, n_heads*C) if concat else (n, C) (mean of the heads);
    weights (n_heads, n, n), ``weights[h, i, j]`` = alpha_ij of head h, zero off the edges.
    A node with no neighbour (and no self-loop) gets zero weights and outputs the bias.
    """
    x = as_array(x, "x")
    check_ndim(x, "x", 2, "(n, d_in)")
    n, d_in = x.shape
    W = as_array(params["W"], "W")
    check_ndim(W, "W", 2, "(n_heads*C, d_in)")
    check_dim(W.shape[1], d_in, "W's columns vs x's d_in", f"(n_heads*C, d_in={d_in})", W.shape)
    if W.shape[0] % n_heads:
        raise ValueError(f"W: expected shape (n_heads*C, d_in) with n_heads={n_heads}, got {W.shape}")
    C = W.shape[0] // n_heads
    a_src = as_array(params["att_src"], "att_src").reshape(-1)
    a_dst = as_array(params["att_dst"], "att_dst").reshape(-1)
    for name, a in (("att_src", a_src), ("att_dst", a_dst)):
        check_dim(a.size, n_heads * C, f"{name}'s size vs n_heads*C", f"(n_heads={n_heads}, C={C})", a.shape)
    mask = _graph_mask(graph, n, add_self_loops)  # (n, n)

    h = (x @ W.T).reshape(n, n_heads, C).transpose(1, 0, 2)  # (n_heads, n, C): W x_i of each head
    s_src = np.einsum("hnc,hc->hn", h, a_src.reshape(n_heads, C))  # (n_heads, n): a_src . h_j
    s_dst = np.einsum("hnc,hc->hn", h, a_dst.reshape(n_heads, C))  # (n_heads, n): a_dst . h_i
    # e_ij = LeakyReLU(a_dst . h_i + a_src . h_j)
    e = leaky_relu(s_dst[:, :, None] + s_src[:, None, :], negative_slope)  # (n_heads, n, n)
    e = np.where(mask, e, np.array(-np.inf, dtype=e.dtype))
    alpha = softmax(e, axis=-1)  # (n_heads, n, n): each row sums to 1 over i's neighbours
    out = alpha @ h  # (n_heads, n, n) x (n_heads, n, C) -> (n_heads, n, C)
    out = out.transpose(1, 0, 2).reshape(n, n_heads * C) if concat else out.mean(axis=0)  # (n, n_heads*C) or (n, C)
    bias = params.get("bias")
    if bias is not None:
        bias = as_array(bias, "bias")
        check_dim(bias.shape[-1], out.shape[-1], "bias' size vs the output's", f"({out.shape[-1]},)", bias.shape)
        out = out + bias
    return out, alpha


def adjacency_from_edges(edges, n_nodes: int, undirected: bool = True) -> np.ndarray:
    """Adjacency matrix (n_nodes, n_nodes) from ``edges`` (m, 2) of 0-based node indices.

    A[i, j] = 1 if there is an edge i -> j (and j -> i too when ``undirected``); repeated edges
    still give 1; no self loops are added (only those listed).
    """
    edges = np.asarray(edges)
    if edges.size == 0:
        edges = edges.reshape(0, 2)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges: expected shape (m, 2), got {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise ValueError(f"edges: expected node indices in [0, {n_nodes}), got {edges.min()}..{edges.max()}")
    A = np.zeros((n_nodes, n_nodes))
    A[edges[:, 0], edges[:, 1]] = 1.0
    if undirected:
        A[edges[:, 1], edges[:, 0]] = 1.0
    return A
