"""Catalogue of ps11_graphs: self-attention along the edges of a graph (GAT).

Practises the chapter "Graphs" (图, GAT), in the book's notation: the attention mask of a directed graph from
its edge_index (row 0 sources j, row 1 targets i; in code ``mask[i, j]`` True when node i may attend to node j,
row = query), the masked softmax over each node's neighbours, one single-head GAT layer (Veličković et al.
2018; the paper's e_ij, α_ij, W and a are our α_{i,j}, α'_{i,j}, Θ and g): α_{i,j} = LeakyReLU_0.2(g_dst · Θaⁱ +
g_src · Θaʲ), α'_{i,j} = the softmax over the allowed j, bⁱ = Σ_j α'_{i,j} Θaʲ; and what L stacked layers see
(the boolean L-th power of the mask).  Nodes are numbered from 0, as in edge_index.
References: :func:`attn_ref.graph.adjacency_mask`, :func:`attn_ref.softmax.softmax`,
:func:`attn_ref.graph.gat_layer` (itself checked against ``torch_geometric.nn.GATConv``).
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import apply_mask
from attn_ref.graph import adjacency_mask as _adjacency_mask
from attn_ref.graph import gat_layer
from attn_ref.softmax import softmax

from ..checking.core import Mistake, Task
from . import _ps11_cases as _large
from . import _stability
from ._shared import edited, random_mask

ASSIGNMENT = "ps11_graphs"
EXAMPLE = '''# A small directed graph: edges 0 -> 1, 1 -> 2, 2 -> 0, 2 -> 3 (row 0: sources, row 1: targets).
edge_index = np.array([[0, 1, 2, 2],
                       [1, 2, 0, 3]])
'''
#: The notebook's setup cell: the imports and the small example graph.
SETUP = "import numpy as np\n\n" + EXAMPLE
#: The tasks that normalise scores with a softmax, each with large-score cases, ``not_stabilised``, ``shifted_by_min``
#: (tests/test_stability_cases.py), a mask and a node with no neighbour; MULTIPLIED is AllenNLP's idiom.
NORMALISING = ("masked_softmax", "graph_attention")

MULTIPLIED = ("the scores were masked by multiplying with the mask (softmax(scores · mask) · mask, renormalised "
              "over the allowed entries with a small epsilon, as AllenNLP's masked_softmax): a masked entry then "
              "counts as a score of 0, not −∞, so when a node's allowed scores are all far below 0 (say −50 and "
              "−60 beside a masked entry) the masked 0 takes nearly all the weight and the neighbours get almost "
              "none; fill the masked scores with −∞ before the softmax")

MINUS_9E15 = _stability.filled_with_large_negative("-9e15, the pyGAT idiom torch.where(adj > 0, e, -9e15)",
                                                   "a node with no neighbour (a fully masked row)", "node")


def _random_edges(rng, n, m, self_loop=False):
    pairs = [(s, t) for s in range(n) for t in range(n) if s != t or self_loop]
    pick = rng.choice(len(pairs), size=min(m, len(pairs)), replace=False)
    return np.array([pairs[k] for k in sorted(pick)], dtype=np.int64).T.reshape(2, -1)  # (2, E)


# --- task 1: the mask from edge_index -------------------------------------------------------------

def _ref_mask(edge_index, n, self_loops=True):
    return _adjacency_mask(np.asarray(edge_index), n, self_loops=self_loops)


def _cases_mask(rng):
    return [
        (np.array([[0, 1, 2, 2], [1, 2, 0, 3]]), 4, True),
        (_random_edges(rng, 6, 9), 7, True),  # node 6 isolated
        (_random_edges(rng, 5, 7), 5, False),
        (np.array([[0, 2, 3], [1, 2, 0]]), 4, False),  # an explicit self-loop 2 -> 2 stays
        (np.zeros((2, 0), dtype=np.int64), 3, True),  # no edge at all
        (_random_edges(rng, 8, 12), 8, True),
        # issue 41: drawn self-loops of the graph's own, kept with self_loops=False (fresh ones for the self-check)
        (np.c_[_random_edges(rng, 6, 8), np.tile(rng.choice(6, 2, replace=False), (2, 1))], 6, False),
    ]


MASK_MISTAKES = (
    Mistake("direction_reversed", "the edges were entered as mask[source, target]; an edge j -> i sends j's "
            "message to i, so the receiving node i (the row) attends to j: mask[target, source]",
            '''def adjacency_mask(edge_index, n, self_loops=True):
    mask = np.zeros((n, n), dtype=bool)
    mask[edge_index[0], edge_index[1]] = True
    if self_loops:
        mask[np.arange(n), np.arange(n)] = True
    return mask
'''),
    Mistake("self_loop_missing", "the self-loops were not added: with self_loops=True every node also "
            "attends to itself (mask[i, i] = True)",
            '''def adjacency_mask(edge_index, n, self_loops=True):
    mask = np.zeros((n, n), dtype=bool)
    mask[edge_index[1], edge_index[0]] = True
    return mask
'''),
    Mistake("made_undirected", "each edge was entered in both directions; the graph is directed: an edge "
            "j -> i lets i attend to j, not j to i",
            '''def adjacency_mask(edge_index, n, self_loops=True):
    mask = np.zeros((n, n), dtype=bool)
    mask[edge_index[1], edge_index[0]] = True
    mask[edge_index[0], edge_index[1]] = True
    if self_loops:
        mask[np.arange(n), np.arange(n)] = True
    return mask
'''),
    Mistake("self_loops_always", "self-loops were added even with self_loops=False",
            '''def adjacency_mask(edge_index, n, self_loops=True):
    mask = np.zeros((n, n), dtype=bool)
    mask[edge_index[1], edge_index[0]] = True
    mask[np.arange(n), np.arange(n)] = True
    return mask
'''),
    Mistake("own_self_loops_dropped", "the diagonal was overwritten with self_loops (np.fill_diagonal(mask, "
            "self_loops)): with self_loops=False a self-loop the graph itself lists (an edge i -> i) was removed; "
            "self_loops=False adds none, it keeps the graph's own",
            '''def adjacency_mask(edge_index, n, self_loops=True):
    mask = np.zeros((n, n), dtype=bool)
    mask[edge_index[1], edge_index[0]] = True
    np.fill_diagonal(mask, self_loops)
    return mask
'''),
)


# --- task 2: the masked softmax over the neighbours -----------------------------------------------

def _ref_masked_softmax(scores, mask):
    scores = np.asarray(scores, dtype=float)
    return softmax(apply_mask(scores, np.asarray(mask, dtype=bool)), axis=-1)


def _cases_masked_softmax(rng):
    no_neighbour = random_mask(rng, 5)
    no_neighbour[3] = False  # node 3 may attend to nothing: its row must be all zeros
    return [
        (rng.standard_normal((4, 4)), random_mask(rng, 4)),
        (rng.standard_normal((6, 6)), random_mask(rng, 6, 0.3)),
        (rng.standard_normal((1, 1)), np.ones((1, 1), dtype=bool)),
        (rng.standard_normal((5, 5)), no_neighbour),
        (1e4 * rng.standard_normal((5, 5)), random_mask(rng, 5, 0.6)),  # large scores: subtract the row max
        (rng.standard_normal((7, 7)), random_mask(rng, 7, 0.5)),
        # near +1000, a few units apart (a min-shift still works); then near +1000 and -1000 in every row
        (_stability.scores(rng, (5, 5), wide=False), random_mask(rng, 5, 0.6)),
        _stability.wide_masked_scores(rng, 6),
        # every row's allowed scores all near -1000 or all near +1000, with masked entries beside them
        (_stability.signed_rows(rng, (6, 6)), _stability.mask_beside(rng, (6, 6))),
    ] + [_large.masked_high(rng)]


SOFTMAX_MISTAKES = (
    Mistake("mask_ignored", "the softmax ran over all nodes; only the allowed neighbours (mask True) may "
            "get a weight, the others get exactly 0",
            '''def masked_softmax(scores, mask):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
'''),
    Mistake("mask_after_softmax", "the weights outside the mask were set to zero after a softmax over all "
            "nodes, so the rows no longer sum to 1; mask the scores (with -inf) before the softmax",
            '''def masked_softmax(scores, mask):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) * mask
'''),
    Mistake("masked_with_zero", "the blocked scores were set to 0 instead of -inf: a score of 0 still gets "
            "weight exp(0) in the softmax",
            '''def masked_softmax(scores, mask):
    s = np.where(mask, scores, 0.0)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
'''),
    Mistake("softmax_over_columns", "each column was normalised instead of each row: node i's weights over "
            "its neighbours j (row i) must sum to 1",
            '''def masked_softmax(scores, mask):
    s = np.where(mask, scores, -np.inf)
    m = s.max(axis=0, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    t = e.sum(axis=0, keepdims=True)
    return e / np.where(t == 0, 1.0, t)
'''),
    Mistake("not_stabilised", _stability.not_stabilised(),
            '''def masked_softmax(scores, mask):
    e = np.exp(np.where(mask, scores, -np.inf))
    t = e.sum(axis=1, keepdims=True)
    return e / np.where(t == 0, 1.0, t)
'''),
    Mistake("shifted_by_min", _stability.shifted_by_min(),
            '''def masked_softmax(scores, mask):
    e = np.exp(np.where(mask, scores - scores.min(axis=1, keepdims=True), -np.inf))
    t = e.sum(axis=1, keepdims=True)
    return e / np.where(t == 0, 1.0, t)
'''),
    Mistake("nan_on_masked_row", _stability.nan_on_masked_row("the row of a node with no neighbour (all masked)"),
            '''def masked_softmax(scores, mask):
    s = np.where(mask, scores, -np.inf)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
'''),
    Mistake("max_over_masked_entries", "the maximum subtracted before exp was taken over the whole row, masked "
            "entries included: beside a masked score of +1000, exp of every allowed score near 0 underflows to 0 and "
            "the node's weights are lost; subtract the maximum of the allowed scores (after filling with -inf)",
            '''def masked_softmax(scores, mask):
    e = np.exp(np.where(mask, scores, -np.inf) - scores.max(axis=1, keepdims=True))
    t = e.sum(axis=1, keepdims=True)
    return e / np.where(t == 0, 1.0, t)
'''),
    Mistake("filled_with_minus_9e15", MINUS_9E15,
            '''def masked_softmax(scores, mask):
    s = np.where(mask, scores, -9e15)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
'''),
    Mistake("masked_by_multiplying", MULTIPLIED,
            '''def masked_softmax(scores, mask):
    s = scores * mask
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True) * mask
    return p / (p.sum(axis=1, keepdims=True) + 1e-13)
'''),
)


# --- task 3: one single-head GAT layer -------------------------------------------------------------

def _ref_gat(X, A, W, a_src, a_dst):
    params = {"W": W, "att_src": np.asarray(a_src)[None], "att_dst": np.asarray(a_dst)[None], "bias": None}
    out, alpha = gat_layer(X, np.asarray(A, dtype=bool), params, n_heads=1, add_self_loops=False)
    return out, alpha[0]


def _cases_gat(rng):
    cases = []
    for n, d_in, d_out in [(4, 3, 2), (6, 5, 4), (1, 2, 3), (7, 4, 4), (5, 3, 6)]:
        mask = random_mask(rng, n, 0.35)
        if n == 7:
            mask[5] = False  # node 5 has no neighbour and no self-loop: zero weights, zero output
        cases.append((rng.standard_normal((n, d_in)), mask, rng.standard_normal((d_out, d_in)),
                      rng.standard_normal(d_out), rng.standard_normal(d_out)))
    cases.append(_large.large_gat_args(rng, 6, 4, 3, wide=False))  # e_ij near +1000: a min-shift still works
    cases.append(_large.large_gat_args(rng, 7, 4, 3, wide=True))  # e_ij near +1000 and -200: only the max-shift works
    cases.append(_large.large_gat_args(rng, 6, 4, 3, wide=False, rows_signed=True))  # rows all near -1000 or +5000
    X, mask, W, a_src, a_dst = _large.large_gat_args(rng, 6, 4, 3, wide=True)
    low = X[:, 0] < 0  # the nodes j whose scores are near -200 for every i
    mask[0], mask[1] = low, low  # nodes 0 and 1 attend only to them, beside masked scores near +1000
    cases.append((X, mask, W, a_src, a_dst))
    return cases


def _gat_mistake(score: str, act: str, softmax_body: str) -> str:
    return f'''def graph_attention(X, A, W, a_src, a_dst):
    H = X @ W.T
    e = {score}
    e = {act}
{softmax_body}    return alpha @ H, alpha
'''


_MASKED = '''    s = np.where(A, e, -np.inf)
    m = s.max(axis=1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    t = p.sum(axis=1, keepdims=True)
    alpha = p / np.where(t == 0, 1.0, t)
'''
_SCORE = "(H @ a_dst)[:, None] + (H @ a_src)[None, :]"
_LEAKY = "np.where(e > 0, e, 0.2 * e)"

GAT_MISTAKES = (
    Mistake("mask_ignored", "the softmax ran over all nodes; in GAT node i attends only to its neighbours "
            "(mask[i, j] True)",
            _gat_mistake(_SCORE, _LEAKY, '''    p = np.exp(e - e.max(axis=1, keepdims=True))
    alpha = p / p.sum(axis=1, keepdims=True)
''')),
    Mistake("leaky_slope_0.01", "LeakyReLU was used with slope 0.01 (PyTorch's default); GAT uses a negative "
            "slope of 0.2",
            _gat_mistake(_SCORE, "np.where(e > 0, e, 0.01 * e)", _MASKED)),
    Mistake("plain_relu", "a plain ReLU was used; GAT uses LeakyReLU with negative slope 0.2, which keeps "
            "negative scores apart",
            _gat_mistake(_SCORE, "np.maximum(e, 0.0)", _MASKED)),
    Mistake("activation_missing", "the LeakyReLU was left out: αᵢⱼ = LeakyReLU(g_dst · Θaⁱ + g_src · Θaʲ)",
            _gat_mistake(_SCORE, "e", _MASKED)),
    Mistake("src_dst_swapped", "g_src and g_dst were swapped: g_dst scores the receiving node i (the query, "
            "row), g_src the sending neighbour j (column)",
            _gat_mistake("(H @ a_src)[:, None] + (H @ a_dst)[None, :]", _LEAKY, _MASKED)),
    Mistake("mask_transposed", "the mask was used transposed (edge direction reversed): mask[i, j] True means "
            "node i (row) may attend to node j",
            _gat_mistake(_SCORE, _LEAKY, _MASKED.replace("np.where(A,", "np.where(A.T,"))),
    Mistake("aggregating_X", "the weights mixed the untransformed features aʲ (alpha @ X); GAT mixes the "
            "transformed ones: bⁱ = Σ_j α′ᵢⱼ Θaʲ (alpha @ (X @ Theta.T))",
            _gat_mistake(_SCORE, _LEAKY, _MASKED).replace("return alpha @ H, alpha", "return alpha @ X, alpha")),
    Mistake("scores_from_X", "the scores were computed from the untransformed features (g · aⁱ); GAT scores the "
            "transformed ones: αᵢⱼ = LeakyReLU(g_dst · Θaⁱ + g_src · Θaʲ)",
            _gat_mistake("(X @ a_dst)[:, None] + (X @ a_src)[None, :]", _LEAKY, _MASKED)),
    Mistake("self_loops_added", "a self-loop was added to every node; the mask is used as given (the graph decides "
            "whether a node attends to itself)",
            _gat_mistake(_SCORE, _LEAKY, _MASKED.replace("np.where(A,", "np.where(A | np.eye(len(A), dtype=bool),"))),
    Mistake("max_over_masked_entries", "each row's maximum was taken over all its entries, the masked ones too; "
            "when a node's neighbours all score far below a masked entry (1200 lower here), every exp underflows "
            "to 0 and the node gets zero weights: subtract the maximum over the allowed entries",
            _gat_mistake(_SCORE, _LEAKY, '''    m = e.max(axis=1, keepdims=True)
    p = np.exp(np.where(A, e - m, -np.inf))
    t = p.sum(axis=1, keepdims=True)
    alpha = p / np.where(t == 0, 1.0, t)
''')),
    Mistake("not_stabilised", _stability.not_stabilised(),
            _gat_mistake(_SCORE, _LEAKY, '''    p = np.exp(np.where(A, e, -np.inf))
    t = p.sum(axis=1, keepdims=True)
    alpha = p / np.where(t == 0, 1.0, t)
''')),
    Mistake("shifted_by_min", _stability.shifted_by_min(),
            _gat_mistake(_SCORE, _LEAKY, '''    p = np.exp(np.where(A, e - e.min(axis=1, keepdims=True), -np.inf))
    t = p.sum(axis=1, keepdims=True)
    alpha = p / np.where(t == 0, 1.0, t)
''')),
    Mistake("nan_on_masked_row", _stability.nan_on_masked_row("the row of a node with no neighbour (all masked)"),
            _gat_mistake(_SCORE, _LEAKY, '''    s = np.where(A, e, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    alpha = p / p.sum(axis=1, keepdims=True)
''')),
    Mistake("filled_with_minus_9e15", MINUS_9E15,
            _gat_mistake(_SCORE, _LEAKY, '''    s = np.where(A, e, -9e15)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    alpha = p / p.sum(axis=1, keepdims=True)
''')),
    Mistake("masked_by_multiplying", MULTIPLIED,
            _gat_mistake(_SCORE, _LEAKY, '''    s = e * A
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p = p / p.sum(axis=1, keepdims=True) * A
    alpha = p / (p.sum(axis=1, keepdims=True) + 1e-13)
''')),
)

# --- task 4: what L stacked layers see ------------------------------------------------------------

def _ref_reach(mask, L):
    """R[i, j]: node j's features can reach node i's output through L layers that attend along ``mask`` (as
    given), i.e. a walk of exactly L edges from j to i: the boolean L-th power of the mask."""
    mask = np.asarray(mask, dtype=bool)
    reach = np.eye(len(mask), dtype=bool)
    for _ in range(L):
        reach = (mask.astype(np.int64) @ reach.astype(np.int64)) > 0  # one more layer: i reads what its neighbours read
    return reach


def _cases_reach(rng):
    path = np.zeros((6, 6), dtype=bool)
    path[np.arange(1, 6), np.arange(5)] = True  # a directed path 0 -> 1 -> ... -> 5, no self-loops
    with_loops = path | np.eye(6, dtype=bool)
    some_loops = (rng.random((7, 7)) < 0.25) & ~np.eye(7, dtype=bool) | np.diag([1, 0, 1, 0, 1, 0, 0]).astype(bool)
    return [(some_loops, 2),  # first: general, nodes 0, 2, 4 with a self-loop, every mistake differs
            (path, 3), (with_loops, 3), (with_loops, 1), (path, 1), (random_mask(rng, 5, 0.3), 4),
            (np.zeros((3, 3), dtype=bool), 2),  # no edge at all: nothing reaches anything
            (np.eye(4, dtype=bool), 5),         # self-loops only: each node keeps its own features
            (np.ones((8, 8), dtype=bool), 22),  # complete: 8 ** 21 walks of 22 edges, more than int64 holds
            (random_mask(rng, 8, 0.95), int(rng.integers(26, 33)))]  # drawn, dense: the walks overflow too


_REACH = '''def reach_after_layers(mask, L):
    M = mask.astype(int)
    R = np.eye(len(mask), dtype=int)
    for _ in range(L):
        R = ((M @ R) > 0).astype(int)
    return R > 0
'''

REACH_MISTAKES = (
    Mistake("within_L_hops", "every node was taken to keep its own features from layer to layer (walks of at most L "
            "edges, as with self-loops); a layer attends only where the mask allows: without a self-loop node i's "
            "output holds nothing of aⁱ, so ask what is left of what node i saw after one more layer",
            edited(_REACH, ("R = ((M @ R) > 0).astype(int)",
                            "R = (((M + np.eye(len(mask), dtype=int)) @ R) > 0).astype(int)"))),
    Mistake("direction_reversed", "the walks were followed against the edges (the mask transposed); mask[i, j] "
            "True means node i reads node j, so j's features reach i",
            edited(_REACH, ("M = mask.astype(int)", "M = mask.T.astype(int)"))),
    Mistake("one_layer_short", "one layer too few was counted; the first layer already reads the neighbours: count the "
            "edges a walk gains with each layer",
            edited(_REACH, ("for _ in range(L):", "for _ in range(L - 1):"))),
    Mistake("walks_counted_overflow", "the walks were counted with an integer matrix power of the mask: their number "
            "grows like n to the power L and overflows int64 (a complete graph of 8 nodes at L 22 wraps round to a "
            "negative count); after each layer keep only whether a walk exists, not how many there are",
            "def reach_after_layers(mask, L):\n    return np.linalg.matrix_power(mask.astype(np.int64), L) > 0\n"),
    Mistake("one_layer_only", "the mask itself was returned whatever L is; stacking layers lets node i read what its "
            "neighbours read in the layer below",
            edited(_REACH, ("for _ in range(L):", "for _ in range(min(L, 1)):"))),
    Mistake("within_L_layers", "the nodes reached in 1, 2, ..., L layers were all kept (the union of the powers of "
            "the mask); a layer attends only where the mask allows, so without a self-loop what node i read in an "
            "earlier layer is not in its output any more: after L layers it holds walks of exactly L edges",
            edited(_REACH, ("    R = np.eye(len(mask), dtype=int)\n",
                            "    R = np.eye(len(mask), dtype=int)\n    U = R < 0\n"),
                   ("        R = ((M @ R) > 0).astype(int)\n",
                    "        R = ((M @ R) > 0).astype(int)\n        U = U | (R > 0)\n"),
                   ("    return R > 0", "    return U if L > 0 else R > 0"))),
    Mistake("one_layer_too_many", "one layer too many was counted (the (L + 1)-th power of the mask); L layers "
            "read along walks of L edges: the first layer reads the neighbours, the mask itself",
            edited(_REACH, ("for _ in range(L):", "for _ in range(L + 1):"))),
)


TASKS = [
    Task(ASSIGNMENT, "adjacency_mask", _ref_mask, _cases_mask, MASK_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "masked_softmax", _ref_masked_softmax, _cases_masked_softmax, SOFTMAX_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "graph_attention", _ref_gat, _cases_gat, GAT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "reach_after_layers", _ref_reach, _cases_reach, REACH_MISTAKES, setup=SETUP),
]
