"""Self-attention vs a recurrent network: sequential steps and path lengths.

* :func:`rnn_forward`: the vanilla (Elman) RNN, h_t = tanh(W_xh x_t + W_hh h_{t-1} + b), one
  step after the other (n sequential steps), as ``torch.nn.RNN`` with ``nonlinearity='tanh'``
  (whose two biases b_ih + b_hh add up to ``b``).  :func:`birnn_forward` runs it both ways.
* :func:`path_length`: the number of layers or steps a signal crosses from input position 1
  to output position n (Vaswani et al. 2017, Table 1, "maximum path length": self-attention
  O(1), recurrent O(n), convolutional O(n/k) contiguous or O(log_k n) dilated), checked
  against a breadth-first search on the explicit computation graph of
  :func:`dependency_graph`.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from ._checks import as_array, check_dim, check_ndim


def rnn_forward(x, W_xh, W_hh, b, h0=None) -> np.ndarray:
    """A vanilla tanh RNN over one sequence, one step at a time.

    x: (n, d_in) the inputs x_1..x_n as rows; W_xh: (d_h, d_in); W_hh: (d_h, d_h); b: (d_h,);
    h0: (d_h,) initial state (zeros if None).
    h_t = tanh(W_xh x_t + W_hh h_{t-1} + b), t = 1..n.  Returns H (n, d_h), row t = h_t.
    """
    x = as_array(x, "x")
    check_ndim(x, "x", 2, "(n, d_in)")
    W_xh, W_hh, b = as_array(W_xh, "W_xh"), as_array(W_hh, "W_hh"), as_array(b, "b")
    check_ndim(W_xh, "W_xh", 2, "(d_h, d_in)")
    d_h = W_xh.shape[0]
    check_dim(W_xh.shape[1], x.shape[1], "W_xh's columns vs x's d_in", f"(d_h, d_in={x.shape[1]})", W_xh.shape)
    check_ndim(W_hh, "W_hh", 2, f"(d_h={d_h}, d_h={d_h})")
    if W_hh.shape != (d_h, d_h):
        raise ValueError(f"W_hh: expected shape (d_h={d_h}, d_h={d_h}), got {W_hh.shape}")
    check_ndim(b, "b", 1, f"(d_h={d_h},)")
    check_dim(b.shape[0], d_h, "b's length vs d_h", f"(d_h={d_h},)", b.shape)
    h = np.zeros(d_h, dtype=np.result_type(x, W_xh)) if h0 is None else as_array(h0, "h0")
    H = np.empty((x.shape[0], d_h), dtype=h.dtype)
    for t in range(x.shape[0]):  # n sequential steps: h_t needs h_{t-1}
        h = np.tanh(W_xh @ x[t] + W_hh @ h + b)  # (d_h,)
        H[t] = h
    return H


def birnn_forward(x, forward_weights, backward_weights) -> np.ndarray:
    """A bidirectional RNN: one RNN left to right, one right to left, states concatenated.

    x: (n, d_in); each of ``forward_weights`` and ``backward_weights`` is (W_xh, W_hh, b).
    Returns (n, 2 d_h): row t = [h_t (seen x_1..x_t), h'_t (seen x_t..x_n)] (as ``torch.nn.RNN(bidirectional=True)``).
    """
    x = as_array(x, "x")
    check_ndim(x, "x", 2, "(n, d_in)")
    fwd = rnn_forward(x, *forward_weights)  # (n, d_h)
    bwd = rnn_forward(x[::-1], *backward_weights)[::-1]  # (n, d_h)
    return np.concatenate([fwd, bwd], axis=1)  # (n, 2 d_h)


PATH_KINDS = ("attention", "recurrent", "conv", "dilated_conv")


def path_length(kind: str, n: int, k: int = 3) -> int:
    """Layers or steps crossed by the shortest path from input x_1 to output y_n.

    kind: "attention" (one layer links every pair): 1;
    "recurrent" (x_1 -> h_1 -> h_2 -> ... -> h_n = y_n): n;
    "conv" (stacked causal convolutions, kernel k, each layer reaches k - 1 positions further back):
    max(1, ceil((n - 1) / (k - 1)));
    "dilated_conv" (dilations 1, k, k^2, ...; receptive field k^L after L layers): max(1, ceil(log_k n)).
    """
    if n < 1:
        raise ValueError(f"n: expected a sequence length >= 1, got {n}")
    if k < 2:
        raise ValueError(f"k: expected a kernel size >= 2, got {k}")
    if kind == "attention":
        return 1
    if kind == "recurrent":
        return n
    if kind == "conv":
        return max(1, -(-(n - 1) // (k - 1)))
    if kind == "dilated_conv":
        L = 0
        while k**L < n:  # exact integer ceil(log_k n)
            L += 1
        return max(1, L)
    raise ValueError(f"kind: expected one of {PATH_KINDS}, got {kind!r}")


def path_length_table(kind: str, n: int, k: int = 3) -> np.ndarray:
    """The shortest path from every input x_s to every output y_t: (n, n) int, entry [t - 1, s - 1].

    The counts of :func:`path_length` for any pair, with ``d = t - s`` the distance back: "attention" 1 for
    every pair (one layer links every pair, both ways); "recurrent" d + 1 (x_s -> h_s -> ... -> h_t);
    "conv" max(1, ceil(d / (k - 1))); "dilated_conv" the smallest L >= 1 with k^L > d (L layers of dilations
    1, k, ..., k^(L-1) reach back k^L - 1 positions).  -1 where y_t cannot depend on x_s: s after t, for the
    recurrent and the causal convolutions.  Entry [n - 1, 0] is ``path_length(kind, n, k)``.
    """
    if n < 1:
        raise ValueError(f"n: expected a sequence length >= 1, got {n}")
    if k < 2:
        raise ValueError(f"k: expected a kernel size >= 2, got {k}")
    if kind not in PATH_KINDS:
        raise ValueError(f"kind: expected one of {PATH_KINDS}, got {kind!r}")
    d = np.arange(n)[:, None] - np.arange(n)[None, :]  # (n, n): how far back x_s lies from y_t
    if kind == "attention":
        return np.ones((n, n), dtype=np.int64)
    if kind == "recurrent":
        steps = d + 1
    elif kind == "conv":
        steps = np.maximum(1, -(-d // (k - 1)))
    else:
        steps = np.ones((n, n), dtype=np.int64)
        while np.any(k**steps <= d):  # exact integers: one more layer where k^L positions do not reach back d
            steps += k**steps <= d
    return np.where(d >= 0, steps, -1).astype(np.int64)


def dependency_graph(kind: str, n: int, k: int = 3, n_layers: int | None = None):
    """The computation graph as directed edges between nodes (layer, position).

    Layer 0 holds the inputs x_1..x_n (positions 0..n-1).  "recurrent": layer 1 holds h_t with
    edges x_t -> h_t and h_{t-1} -> h_t.  "attention": every input to every output of each layer.
    "conv": output t of a layer reads positions t-k+1..t of the layer below; "dilated_conv":
    layer l reads t - j k^(l-1), j = 0..k-1.  ``n_layers`` defaults to 1 for recurrent/attention
    and to :func:`path_length` for the convolutions.  Returns (nodes, edges) as lists of tuples.
    """
    if kind not in PATH_KINDS:
        raise ValueError(f"kind: expected one of {PATH_KINDS}, got {kind!r}")
    if n_layers is None:
        n_layers = 1 if kind in ("attention", "recurrent") else path_length(kind, n, k)
    nodes = [(layer, t) for layer in range(n_layers + 1) for t in range(n)]
    edges = []
    for layer in range(1, n_layers + 1):
        for t in range(n):
            if kind == "recurrent":
                edges.append(((layer - 1, t), (layer, t)))
                if t > 0:
                    edges.append(((layer, t - 1), (layer, t)))
            elif kind == "attention":
                edges += [((layer - 1, s), (layer, t)) for s in range(n)]
            else:
                step = 1 if kind == "conv" else k ** (layer - 1)
                edges += [((layer - 1, t - j * step), (layer, t)) for j in range(k) if t - j * step >= 0]
    return nodes, edges


def shortest_path(edges, source, target) -> list | None:
    """Breadth-first search on directed ``edges``: the nodes of a shortest path source -> target (None if none)."""
    out: dict = {}
    for a, b in edges:
        out.setdefault(a, []).append(b)
    parent = {source: None}
    queue = deque([source])
    while queue:
        node = queue.popleft()
        if node == target:
            path = [node]
            while parent[path[-1]] is not None:
                path.append(parent[path[-1]])
            return path[::-1]
        for nxt in out.get(node, []):
            if nxt not in parent:
                parent[nxt] = node
                queue.append(nxt)
    return None


def shortest_path_length(edges, source, target) -> int | float:
    """The number of edges on a shortest path from ``source`` to ``target`` (inf if there is none)."""
    path = shortest_path(edges, source, target)
    return math.inf if path is None else len(path) - 1
