"""Catalogue of ps01_vector_sets: words, audio and graphs as sets of vectors.

Practises the chapter "Vector sets as input" (序列与模型): one-hot vectors (独热), the cosine
similarity of every pair of vectors, audio cut into overlapping frames, a graph's adjacency matrix.
References: :func:`attn_ref.embedding.one_hot`, :func:`attn_ref.embedding.cosine_similarity_matrix`,
:func:`attn_ref.speech.frame_signal`, :func:`attn_ref.graph.adjacency_from_edges`; the nearest other vector by cosine,
where one-hot vectors give none (task 5).
"""

from __future__ import annotations

import numpy as np

from attn_ref.embedding import cosine_similarity_matrix as _cosine
from attn_ref.embedding import one_hot as _one_hot
from attn_ref.graph import adjacency_from_edges as _adjacency
from attn_ref.speech import frame_signal as _frame_signal

from ..checking.core import Mistake, Task
from ._shared import edited

ASSIGNMENT = "ps01_vector_sets"
SETUP = "import numpy as np"


# --- task 1: one-hot vectors ------------------------------------------------------------------

def _ref_one_hot(indices, vocab_size):
    return _one_hot(np.asarray(indices), vocab_size)


def _cases_one_hot(rng):
    cases = [(rng.integers(0, 4, size=6), 9)]  # largest index < vocab_size - 1: the vocabulary is not the data's
    for n, V in [(10, 7), (1, 5), (3, 1), (12, 30)]:
        cases.append((rng.integers(0, V, size=n), V))
    cases.append((np.array([4, 0, 4, 2]), 5))  # repeated words, first and last index
    return cases


ONE_HOT_MISTAKES = (
    Mistake("transposed", "the result has one column per word (shape (vocab_size, n)); it should have one row per "
            "word, shape (n, vocab_size)",
            '''def one_hot(indices, vocab_size):
    return np.eye(vocab_size)[:, indices]
'''),
    Mistake("one_based", "the indices were treated as counting from 1 (the 1 is one position too far left); "
            "word i has its 1 in column i, counting from 0",
            '''def one_hot(indices, vocab_size):
    return np.eye(vocab_size)[np.asarray(indices) - 1]
'''),
    Mistake("vocab_from_data", "the vector length was taken from the largest index seen (max + 1) instead of "
            "vocab_size; every vector must have length |𝒱| = vocab_size even if some words do not occur",
            '''def one_hot(indices, vocab_size):
    indices = np.asarray(indices)
    return np.eye(indices.max() + 1)[indices]
'''),
)


# --- task 2: cosine similarity of every pair ------------------------------------------------

def _ref_cosine(X):
    return _cosine(np.asarray(X, dtype=float))


def _cases_cosine(rng):
    cases = []
    for n, d in [(5, 3), (4, 6), (1, 3), (6, 1), (3, 3)]:
        scales = rng.uniform(0.2, 5.0, size=(n, 1))  # rows of different lengths: normalisation matters
        cases.append((rng.standard_normal((n, d)) * scales,))
    cases.append((np.array([[3.0, 4.0], [300.0, 400.0], [-4.0, 3.0]]),))  # parallel and orthogonal rows
    return cases


COSINE_MISTAKES = (
    Mistake("no_normalisation", "the dot products xᵢ · xⱼ were returned without dividing by the lengths "
            "|xᵢ| |xⱼ|",
            '''def cosine_similarity_matrix(X):
    return X @ X.T
'''),
    Mistake("normalised_columns", "the columns (features) were normalised instead of the rows (vectors); "
            "each row xᵢ must be divided by its own length |xᵢ|",
            '''def cosine_similarity_matrix(X):
    U = X / np.linalg.norm(X, axis=0, keepdims=True)
    return U @ U.T
'''),
    Mistake("one_sided_normalisation", "xᵢ · xⱼ was divided by |xᵢ|² (only one vector's length, squared) "
            "instead of |xᵢ| |xⱼ|; the result must be symmetric",
            '''def cosine_similarity_matrix(X):
    return (X @ X.T) / (np.linalg.norm(X, axis=1, keepdims=True) ** 2)
'''),
    Mistake("one_length_only", "xᵢ · xⱼ was divided by |xⱼ| alone (the length of column j's vector, "
            "broadcast over the rows); the cosine divides by both lengths, |xᵢ| |xⱼ|",
            '''def cosine_similarity_matrix(X):
    return (X @ X.T) / np.linalg.norm(X, axis=1)
'''),
    Mistake("norms_divided_twice", "xᵢ · xⱼ was divided twice by the 1-D array of lengths (S / n / n), which "
            "broadcasts over the columns: every entry is divided by |xⱼ|² instead of |xᵢ| |xⱼ|; divide by "
            "n[:, None] * n[None, :]",
            '''def cosine_similarity_matrix(X):
    n = np.linalg.norm(X, axis=1)
    return X @ X.T / n / n
'''),
    Mistake("squared_lengths", "xᵢ · xⱼ was divided by |xᵢ|² |xⱼ|² (squared lengths) instead of |xᵢ| |xⱼ|",
            '''def cosine_similarity_matrix(X):
    sq = np.sum(X ** 2, axis=1)
    return (X @ X.T) / np.outer(sq, sq)
'''),
    Mistake("absolute_value", "the absolute value of the cosine was returned: two opposite vectors (x and −x) have "
            "cosine −1, as far apart as two directions can be, not 1; keep the sign",
            '''def cosine_similarity_matrix(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    return np.abs(U @ U.T)
'''),
)


# --- task 3: audio frames ---------------------------------------------------------------------

def _ref_frames(x, frame_len, hop):
    return _frame_signal(np.asarray(x, dtype=float), frame_len, hop)


def _cases_frames(rng):
    cases = []
    for n, frame_len, hop in [(1000, 400, 160),  # (1000 - 400) % 160 = 120: an incomplete last frame
                              (720, 400, 160),  # exactly 3 frames
                              (37, 5, 3), (50, 4, 7),  # hop > frame_len: gaps between frames
                              (12, 12, 5),  # the signal is exactly one frame
                              (30, 6, 6)]:  # no overlap
        cases.append((rng.standard_normal(n), frame_len, hop))
    return cases


FRAMES_MISTAKES = (
    Mistake("hop_and_frame_swapped", "frame_len and hop were swapped: frame i is x[i*hop : i*hop + frame_len], "
            "frames are frame_len long and start every hop samples",
            '''def frame_signal(x, frame_len, hop):
    n = 1 + (len(x) - hop) // frame_len
    return np.stack([x[i * frame_len:i * frame_len + hop] for i in range(n)])
'''),
    Mistake("last_frame_dropped", "one complete frame too few: the count is 1 + (n - frame_len) // hop (n samples) "
            "(the first frame starts at 0)",
            '''def frame_signal(x, frame_len, hop):
    n = (len(x) - frame_len) // hop
    return np.array([x[i * hop:i * hop + frame_len] for i in range(n)]).reshape(n, frame_len)
'''),
    Mistake("partial_frame_padded", "an incomplete last frame was zero-padded and kept; only complete frames "
            "count: 1 + (n - frame_len) // hop (n samples)",
            '''def frame_signal(x, frame_len, hop):
    n = 1 + int(np.ceil((len(x) - frame_len) / hop))
    padded = np.concatenate([x, np.zeros((n - 1) * hop + frame_len - len(x))])
    return np.stack([padded[i * hop:i * hop + frame_len] for i in range(n)])
'''),
    Mistake("frames_per_hop", "len(x) // hop frames were made (one per hop, zero-padded at the end); frames "
            "must lie inside the signal: 1 + (n - frame_len) // hop (n samples) of them",
            '''def frame_signal(x, frame_len, hop):
    n = len(x) // hop
    padded = np.concatenate([x, np.zeros(n * hop + frame_len)])
    return np.stack([padded[i * hop:i * hop + frame_len] for i in range(n)])
'''),
)


# --- task 4: adjacency matrix -----------------------------------------------------------------

def _ref_adjacency(edges, n_nodes, undirected):
    return _adjacency(np.asarray(edges), n_nodes, undirected)


def _cases_adjacency(rng):
    cases = [(np.array([[0, 1], [1, 2], [2, 0], [3, 1]]), 5, True),  # node 4 isolated
             (np.array([[0, 1], [1, 2], [2, 0], [3, 1]]), 5, False)]
    for n, m in [(6, 8), (4, 3)]:
        edges = rng.integers(0, n, size=(m, 2))
        edges = edges[edges[:, 0] != edges[:, 1]]
        cases.append((edges, n, True))
        cases.append((edges, n, False))
    cases.append((np.array([[0, 1], [1, 0], [0, 1], [2, 3]]), 4, True))  # repeated edges
    cases.append((np.array([[0, 1], [2, 2]]), 3, False))  # a listed self loop is kept
    cases.append((np.array([[0, 1], [2, 2]]), 3, True))  # a self loop in an undirected graph is 1, not 2
    cases.append((np.zeros((0, 2), dtype=int), 3, True))  # no edges at all
    return cases


#: The edge list read right: each mistake below changes one line of it.
_ADJACENCY = '''def adjacency_from_edges(edges, n_nodes, undirected=True):
    adj = np.zeros((n_nodes, n_nodes))
    for i, j in edges:
        adj[i, j] = 1.0
        if undirected:
            adj[j, i] = 1.0
    return adj
'''

ADJACENCY_MISTAKES = (
    Mistake("directed_only", "only adj[i, j] was set for an edge (i, j); with undirected=True adj[j, i] = 1 too, "
            "so adj is symmetric",
            edited(_ADJACENCY, ("        if undirected:\n            adj[j, i] = 1.0\n", ""))),
    Mistake("always_symmetric", "the matrix was made symmetric although undirected=False; a directed edge "
            "(i, j) sets only adj[i, j]",
            edited(_ADJACENCY, ("        if undirected:\n            adj[j, i]", "        adj[j, i]"))),
    Mistake("self_loops_added", "ones were put on the diagonal (self loops); only the listed edges are 1",
            edited(_ADJACENCY, ("np.zeros((n_nodes, n_nodes))", "np.eye(n_nodes)"))),
    Mistake("edges_counted", "repeated edges were counted (entries 2 or more); an entry is 1 if there is an "
            "edge, whatever the number of times it is listed",
            edited(_ADJACENCY, ("] = 1.0", "] += 1.0"))),
    Mistake("one_based", "the node numbers were treated as counting from 1; the edges use 0-based indices",
            edited(_ADJACENCY, ("adj[i, j]", "adj[i - 1, j - 1]"), ("adj[j, i]", "adj[j - 1, i - 1]"))),
    Mistake("symmetrised_by_adding", "the matrix was made symmetric by adding its transpose (adj + adj.T): an "
            "edge listed in both directions, or a self loop, then gets 2; an entry is 1 if there is an edge either "
            "way (the larger of the two entries, not their sum)",
            '''def adjacency_from_edges(edges, n_nodes, undirected=True):
    adj = np.zeros((n_nodes, n_nodes))
    for i, j in edges:
        adj[i, j] = 1.0
    return adj + adj.T if undirected else adj
'''),
    Mistake("edges_counted_then_max", "repeated edges were counted (entries 2 or more), and the matrix was then "
            "made symmetric with the larger of adj[i, j] and adj[j, i]; an entry is 1 if there is an edge, whatever "
            "the number of times it is listed",
            '''def adjacency_from_edges(edges, n_nodes, undirected=True):
    adj = np.zeros((n_nodes, n_nodes))
    for i, j in edges:
        adj[i, j] += 1.0
    if undirected:
        adj = np.maximum(adj, adj.T)
    return adj
'''),
)



# --- task 5: the nearest other vector (one-hot against an embedding) ----------------------------

def _ref_nearest(X):
    S = _cosine(np.asarray(X, dtype=float))
    np.fill_diagonal(S, -np.inf)
    best = S.max(axis=1, keepdims=True)
    ties = np.sum(S >= best - 1e-6, axis=1) > 1
    return np.where(ties, -1, S.argmax(axis=1))


def _cases_nearest(rng):
    cases = [(_one_hot(rng.permutation(6), 6),),  # one-hot vectors: every other word ties at 0
             (_one_hot(np.arange(3), 5) * rng.uniform(0.5, 3.0, size=(3, 1)),)]  # scaled one-hot: still ties
    for n, d in [(5, 3), (2, 4), (7, 2)]:
        cases.append((rng.standard_normal((n, d)) * rng.uniform(0.2, 5.0, size=(n, 1)),))  # lengths differ
    X = rng.standard_normal((5, 3))
    X[3] = 2.0 * X[1]  # rows 1 and 3 point the same way: 0's nearest may tie between them
    X[4] = -X[0]
    cases.append((X,))
    # issue 41: every other vector points away (all cosines < 0): a diagonal of 0 would beat them all
    angles = rng.uniform(0, 2 * np.pi) + np.array([0.0, 2.0, 4.3])  # cosines -0.42, -0.40, -0.67: no tie
    cases.append((np.c_[np.cos(angles), np.sin(angles)] * rng.uniform(0.5, 3.0, size=(3, 1)),))
    return cases


#: The right answer, self-contained; each mistake below edits it.
_NEAREST = '''def nearest_other(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    np.fill_diagonal(S, -np.inf)
    best = S.max(axis=1, keepdims=True)
    ties = np.sum(S >= best - 1e-6, axis=1) > 1
    return np.where(ties, -1, S.argmax(axis=1))
'''

NEAREST_MISTAKES = (
    Mistake("self_included", "the vector itself was not left out: its cosine with itself is 1, the largest, so every "
            "vector was its own nearest; the task asks for the nearest other vector: leave each vector itself out of "
            "its own comparison",
            edited(_NEAREST, ("    np.fill_diagonal(S, -np.inf)\n", ""))),
    Mistake("ties_not_detected", "a tie was not reported: argmax returns the first of several equal values (with "
            "one-hot vectors, every other word ties at 0), which names a neighbour the vectors do not give; "
            "return −1 when the largest value is shared",
            edited(_NEAREST, ("return np.where(ties, -1, S.argmax(axis=1))", "return S.argmax(axis=1)"))),
    Mistake("dot_not_cosine", "the dot product xᵢ · xⱼ was compared instead of the cosine: a longer vector then "
            "looks more similar to everything; divide by the lengths (task 2)",
            edited(_NEAREST, ("U = X / np.linalg.norm(X, axis=1, keepdims=True)", "U = X"))),
    Mistake("diagonal_set_to_zero", "the vector itself was left out by setting its cosine to 0: when every other "
            "vector points away from it (all cosines below 0) that 0 is still the largest, and the vector is its own "
            "nearest; set the diagonal to −∞",
            edited(_NEAREST, ("np.fill_diagonal(S, -np.inf)", "np.fill_diagonal(S, 0)"))),
)

TASKS = [
    Task(ASSIGNMENT, "one_hot", _ref_one_hot, _cases_one_hot, ONE_HOT_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "cosine_similarity_matrix", _ref_cosine, _cases_cosine, COSINE_MISTAKES, setup=SETUP,
         rtol=1e-6, atol=1e-9),
    Task(ASSIGNMENT, "frame_signal", _ref_frames, _cases_frames, FRAMES_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "adjacency_from_edges", _ref_adjacency, _cases_adjacency, ADJACENCY_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "nearest_other", _ref_nearest, _cases_nearest, NEAREST_MISTAKES, setup=SETUP),
]
