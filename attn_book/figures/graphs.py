"""Figures of chapter "Graphs": a directed graph with its edges source -> target, drawn with the attention
weights of a GAT layer (:func:`attn_ref.graph.gat_layer`) as line widths when given.
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Circle, FancyArrowPatch

from .draw import finish


def circle_layout(n: int) -> np.ndarray:
    """(n, 2) positions of n nodes on the unit circle, node 0 at the top, clockwise."""
    angle = np.pi / 2 - 2 * np.pi * np.arange(n) / max(n, 1)
    return np.stack([np.cos(angle), np.sin(angle)], axis=1)  # (n, 2)


def draw_graph(ax, edge_index, n: int, pos=None, weights=None, title=None, max_width: float = 6.0,
               node_labels=None, color="tab:blue"):
    """Draw a directed graph on a matplotlib ``ax``: nodes, arrows source -> target, self-loops.

    edge_index: (2, E) (source, target); pos: (n, 2) positions (default :func:`circle_layout`);
    weights: optional (n, n) attention weights, ``weights[i, j]`` for the edge j -> i (as
    :func:`attn_ref.graph.gat_layer` returns for one head): line widths are proportional to them and every
    self-loop is drawn with its weight ``weights[i, i]``. Nodes are labelled 1..n (the book counts nodes
    from 1; index i is node i + 1) unless ``node_labels`` is given.  Returns the list of edge arrows drawn.
    """
    edge_index = np.asarray(edge_index)
    pos = circle_layout(n) if pos is None else np.asarray(pos, dtype=float)
    centre = pos.mean(axis=0)
    arrows = []
    pairs = [(int(s), int(t)) for s, t in edge_index.T if s != t]
    for s, t in pairs:
        width = 1.5 if weights is None else 0.3 + max_width * float(weights[t, s])
        arrow = FancyArrowPatch(pos[s], pos[t], arrowstyle="-|>", mutation_scale=12 + 2 * width, lw=width,
                                color="0.35", connectionstyle="arc3,rad=0.12", shrinkA=13, shrinkB=13, zorder=1)
        ax.add_patch(arrow)
        arrows.append(arrow)
        if weights is not None:
            mid = 0.5 * (pos[s] + pos[t])
            normal = np.array([pos[t][1] - pos[s][1], pos[s][0] - pos[t][0]])
            # beyond the arc's midpoint (arc3 bends by rad * |t - s| / 2 along the normal)
            label = mid + (0.06 * np.linalg.norm(normal) + 0.08) * normal / (np.linalg.norm(normal) + 1e-12)
            ax.text(*label, f"{weights[t, s]:.2f}", fontsize=7, ha="center", va="center", color="0.2")
    if weights is not None:  # self-loops: a ring outside each node, width by weight
        for i in range(n):
            out = pos[i] - centre
            out = out / (np.linalg.norm(out) + 1e-12)
            width = 0.3 + max_width * float(weights[i, i])
            ax.add_patch(Circle(pos[i] + 0.16 * out, 0.09, fill=False, lw=width, color="0.35", zorder=1))
            ax.text(*(pos[i] + 0.36 * out), f"{weights[i, i]:.2f}", fontsize=7, ha="center", va="center",
                    color="0.2")
    ax.scatter(pos[:, 0], pos[:, 1], s=420, color=color, zorder=2, edgecolors="k")
    for i in range(n):
        ax.text(*pos[i], str(i + 1) if node_labels is None else node_labels[i], ha="center", va="center",
                color="white", fontsize=10, fontweight="bold", zorder=3)
    finish(ax, pos[:, 0].min() - 0.55, pos[:, 0].max() + 0.55, pos[:, 1].min() - 0.55, pos[:, 1].max() + 0.55, title)
    return arrows
