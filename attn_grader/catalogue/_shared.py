"""What several catalogues share: random projection weights, and mistakes written as edits of a right answer."""

from __future__ import annotations

import numpy as np


def qkv_weights(rng: np.random.Generator, d_in: int, d_k: int, d_v: int) -> tuple[np.ndarray, ...]:
    """W_q, W_k, W_v with nn.Linear's shape (d_out, d_in), drawn in that order."""
    return (rng.standard_normal((d_k, d_in)), rng.standard_normal((d_k, d_in)), rng.standard_normal((d_v, d_in)))


def random_mask(rng: np.random.Generator, n: int, p: float = 0.4) -> np.ndarray:
    """An (n, n) boolean mask, each entry True with probability p, the diagonal True (every node attends to itself)."""
    mask = rng.random((n, n)) < p
    mask[np.arange(n), np.arange(n)] = True
    return mask


def edited(source: str, *changes: tuple[str, str]) -> str:
    """``source`` (a right answer cell) with every ``(old, new)`` change made, in order.

    A mistake written this way reads as the one line it gets wrong; each ``old`` must occur in the
    source as it stands when its turn comes (every occurrence is replaced).
    """
    for old, new in changes:
        assert old in source, old
        source = source.replace(old, new)
    return source


#: The stable softmax the set-up cells give from problem set 5 on (issue 29: written once, in ps03).
GIVEN_SOFTMAX = '''

def softmax(x, axis=-1):
    """The stable softmax of problem set 3, given: exp(x - max) / sum along axis (each slice sums to 1)."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
'''


def running_example(name: str) -> str:
    """The set-up cell's lines defining the book's running example (attn_ref.examples' numbers), the input
    vectors as the columns of the array ``name`` (ps04 calls it ``a``, ps05 ``I``)."""
    return f'''# The book's running example (chapters "Self-attention step by step" and "Matrix form"):
# four input vectors a^1..a^4, the columns of {name} ({name}[:, 0] is a^1); d_in = 3, d_k = d_v = 2.
{name} = np.array([[1.0, 2.0, 0.0, -1.0],
{" " * len(name)}             [-1.0, 1.0, -1.0, -1.0],
{" " * len(name)}             [0.0, 0.0, 2.0, 0.0]])  # (d_in=3, n=4)
W_q = np.array([[1.0, 1.0, 0.0], [0.0, -1.0, 0.0]])  # (d_k=2, d_in=3)
W_k = np.array([[-1.0, 1.0, -1.0], [1.0, 0.0, 0.0]])  # (d_k=2, d_in=3)
W_v = np.array([[1.0, 1.0, 0.0], [-1.0, 1.0, 1.0]])  # (d_v=2, d_in=3)
'''
