"""Figures of chapter "Step by step": the weighted sum b^1 = sum_j alpha'_{1,j} v^j drawn tip to tail in the
plane, and the three panels of one query (scores, weights, output).  The matrix products of the chapter
are :func:`attn_book.figures.draw.draw_matmul`, the one-score diagram
:func:`attn_book.figures.relevance.draw_dot_product`.
"""

from __future__ import annotations

import numpy as np
from matplotlib import pyplot as plt

from attn_ref._checks import as_array, check_dim, check_ndim
from attn_ref.attention import attend_one

from .draw import ATTENTION_CMAP, arrow


def draw_weighted_sum(ax, weights, vectors, *, query=1, title=None):
    """b = sum_i weights[i] * vectors[:, i] drawn tip to tail in 2-D (the lecture's b^1 = sum_i alpha'_{1,i} v^i).

    weights: (n,); vectors: (2, n), the v^i as columns.  The v^i are grey arrows from the origin, the
    scaled alpha'_i v^i are coloured arrows chained tip to tail, and b ends where the chain ends.
    Returns ``{"v": [...], "scaled": [...], "b": arrow, "b_value": (2,)}``.
    """
    weights, vectors = as_array(weights, "weights"), as_array(vectors, "vectors")
    check_ndim(vectors, "vectors", 2, "(2, n)")
    check_dim(vectors.shape[0], 2, "vectors' rows (2-D drawing)", "(2, n)", vectors.shape)
    check_dim(weights.shape[0], vectors.shape[1], "weights' length vs n", "(n,)", weights.shape)
    n = vectors.shape[1]
    colours = plt.get_cmap("tab10")
    out = {"v": [], "scaled": []}
    for j in range(n):
        v = vectors[:, j]
        out["v"].append(arrow(ax, (0, 0), tuple(v), color="0.7", linewidth=1.0, linestyle="--"))
        ax.text(v[0], v[1], f" $v^{j + 1}$", fontsize=10, color="0.4")
    tip = np.zeros(2)
    for j in range(n):
        step = weights[j] * vectors[:, j]
        out["scaled"].append(arrow(ax, tuple(tip), tuple(tip + step), color=colours(j), linewidth=2.0,
                                    label=f"$\\alpha'_{{{query},{j + 1}}}\\,v^{j + 1}$ ({weights[j]:.2f})"))
        tip = tip + step
    out["b"] = arrow(ax, (0, 0), tuple(tip), color="black", linewidth=2.5, label=f"$b^{query}$")
    out["b_value"] = tip
    pts = np.concatenate([vectors, np.zeros((2, 1)), tip[:, None]], axis=1)
    lo, hi = pts.min(axis=1) - 0.5, pts.max(axis=1) + 0.5
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal")
    ax.axhline(0, color="0.85", linewidth=0.8, zorder=0)
    ax.axvline(0, color="0.85", linewidth=0.8, zorder=0)
    ax.set_xlabel("dimension 1 of $v$")
    ax.set_ylabel("dimension 2 of $v$")
    ax.legend(handles=out["scaled"] + [out["b"]], fontsize=8, loc="best")
    if title:
        ax.set_title(title)
    return out


def draw_query_panel(axes, a, i, W_q, W_k, W_v, *, scale=1.0):
    """Three panels for query i (0-based): alpha_{i,j} bars, alpha'_{i,j} bars, the weighted sum b^i.

    a: (d_in, n) columns a^j; W_q, W_k: (d_k, d_in); W_v: (2, d_in) (2-D so b^i can be drawn).
    Returns the :class:`attn_ref.attention.StepByStep` of query i.
    """
    step = attend_one(a, i, W_q, W_k, W_v, scale=scale)
    n = step.alpha.shape[0]
    labels = [f"{j + 1}" for j in range(n)]
    cm = plt.get_cmap(ATTENTION_CMAP)
    axes[0].bar(labels, step.alpha, color="0.5")
    axes[0].set_title(f"scores $\\alpha_{{{i + 1},j}} = q^{i + 1}\\cdot k^j$")
    axes[0].set_xlabel("key $j$")
    axes[0].set_ylabel("score")
    axes[0].axhline(0, color="black", linewidth=0.6)
    axes[1].bar(labels, step.alpha_prime, color=[cm(p) for p in step.alpha_prime])
    axes[1].set_ylim(0, 1)
    axes[1].set_title(f"softmax: $\\alpha'_{{{i + 1},j}}$ (sum 1)")
    axes[1].set_xlabel("key $j$")
    axes[1].set_ylabel("weight")
    V = as_array(W_v, "W_v") @ as_array(a, "a")  # (2, n)
    title = f"output $b^{i + 1}$: weighted sum of the $v^j$"
    draw_weighted_sum(axes[2], step.alpha_prime, V, query=i + 1, title=title)
    return step

