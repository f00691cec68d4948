"""Diagrams of chapters Multi-head and Toward the Transformer, drawn with matplotlib patches.

- :func:`draw_split_merge`: the (n, d_model) matrix cut into h heads of width d_h = d_model / h
  (:func:`attn_ref.multihead.split_heads`), each head's (n, d_h) output, and the heads glued
  back side by side (:func:`attn_ref.multihead.merge_heads`) before W_o.
- :func:`draw_encoder_block`: the Transformer encoder block (Vaswani et al. 2017, fig. 1, left),
  post-norm or pre-norm.

Each function draws on a given ``ax`` and returns a dict of the artists it made (tests count them).
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

HEAD_CMAP = "tab10"  # one colour per head (categorical, not an attention heatmap)


def head_colors(n_heads: int) -> list:
    """One colour per head, the same in every figure of the chapter."""
    cmap = colormaps[HEAD_CMAP]
    return [cmap(h % 10) for h in range(n_heads)]


def _matrix(ax, x, y, n, d, n_heads, cell, label, colors, gap=0.0, alpha=0.85):
    """An (n, d) grid of cells at (x, y) (top-left), columns coloured by head; returns the patches."""
    d_h = d // n_heads
    patches = []
    for r in range(n):
        for c in range(d):
            h = c // d_h
            px = x + c * cell + h * gap
            patches.append(ax.add_patch(Rectangle((px, y - (r + 1) * cell), cell, cell, facecolor=colors[h],
                                                  edgecolor="white", linewidth=0.8, alpha=alpha)))
    width = d * cell + (n_heads - 1) * gap
    ax.text(x + width / 2, y + 0.25, label, ha="center", va="bottom", fontsize=10)
    return patches


def _arrow(ax, start, end, text=None, **kw):
    arrow = ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color="0.25", **kw))
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.15, text, ha="center", va="bottom",
                fontsize=9, color="0.25")
    return arrow


def draw_split_merge(ax, n: int = 4, d_model: int = 8, n_heads: int = 2, *, cell: float = 0.35, title=None):
    """Draw Q (n, d_model) -> h heads (n, d_h) -> per-head b^{i,h} (n, d_h) -> concatenation (n, d_model) -> W_o.

    Returns ``{"cells": [...], "arrows": [...], "heads": n_heads}``.
    """
    if n_heads < 1 or d_model % n_heads:
        raise ValueError(f"n_heads: expected a divisor of d_model={d_model}, got {n_heads}")
    d_h = d_model // n_heads
    colors = head_colors(n_heads)
    cells, arrows = [], []
    top = n * cell + 0.2 + (n_heads - 1) * 0  # y of the matrices' top edge
    # 1. the projected queries, one matrix, columns coloured by the head they go to
    x0 = 0.0
    w_full = d_model * cell
    cells += _matrix(ax, x0, top, n, d_model, n_heads, cell, "$Q = X W_q^T$\n$(n, d_{model})$", colors)
    # 2. the heads, stacked vertically
    x1 = x0 + w_full + 1.6
    head_h = n * cell + 0.9
    y_heads = [top + (n_heads - 1) * head_h / 2 - h * head_h for h in range(n_heads)]
    for h in range(n_heads):
        sub = colors[h:h + 1]
        cells += _matrix(ax, x1, y_heads[h], n, d_h, 1, cell, f"$q^{{i,{h + 1}}}$ $(n, d_h)$", sub)
        arrows.append(_arrow(ax, (x0 + w_full + 0.1, top - n * cell / 2),
                             (x1 - 0.1, y_heads[h] - n * cell / 2), "split" if h == 0 else None))
    # 3. each head's attention output b^{i,h}
    x2 = x1 + d_h * cell + 1.8
    for h in range(n_heads):
        cells += _matrix(ax, x2, y_heads[h], n, d_h, 1, cell, f"$b^{{i,{h + 1}}}$ $(n, d_h)$", colors[h:h + 1])
        arrows.append(_arrow(ax, (x1 + d_h * cell + 0.1, y_heads[h] - n * cell / 2),
                             (x2 - 0.1, y_heads[h] - n * cell / 2), "attention" if h == 0 else None))
    # 4. concatenation, then W_o
    x3 = x2 + d_h * cell + 1.6
    cells += _matrix(ax, x3, top, n, d_model, n_heads, cell, "concat $(n, d_{model})$", colors)
    for h in range(n_heads):
        arrows.append(_arrow(ax, (x2 + d_h * cell + 0.1, y_heads[h] - n * cell / 2),
                             (x3 - 0.1, top - n * cell / 2), "merge" if h == 0 else None))
    x4 = x3 + w_full + 1.4
    cells += _matrix(ax, x4, top, n, d_model, 1, cell, "$b^i = W_o\\,[b^{i,1};\\ldots]$\n$(n, d_{model})$",
                     ["0.55"])
    arrows.append(_arrow(ax, (x3 + w_full + 0.1, top - n * cell / 2), (x4 - 0.1, top - n * cell / 2), "$W_o$"))
    ymin = min(y_heads) - n * cell - 0.4
    ymax = max(y_heads) + 0.9
    ax.set_xlim(-0.3, x4 + w_full + 0.3)
    ax.set_ylim(ymin, ymax)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)
    return {"cells": cells, "arrows": arrows, "heads": n_heads}


def _box(ax, x, y, w, h, text, color):
    patch = ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.05",
                                        facecolor=color, edgecolor="0.2", linewidth=1.2))
    ax.text(x, y, text, ha="center", va="center", fontsize=10)
    return patch


def draw_encoder_block(ax, norm_first: bool = False, *, title=None):
    """The encoder block: multi-head attention and feed-forward, each with a residual and a layer norm.

    Post-norm (``norm_first=False``, the paper's): x -> [x + MHA(x)] -> LayerNorm -> [y + FFN(y)] -> LayerNorm.
    Pre-norm: x -> LayerNorm -> MHA -> (+x) -> LayerNorm -> FFN -> (+y).
    Returns ``{"boxes": [...], "arrows": [...], "residuals": [...]}``.
    """
    colors = {"attn": "#f6c38b", "norm": "#fbe9a6", "ffn": "#a9d4f5", "add": "white"}
    if norm_first:
        order = [("norm", "Layer norm"), ("attn", "Multi-head\nself-attention"), ("add", "+"),
                 ("norm", "Layer norm"), ("ffn", "Feed-forward\n(per position)"), ("add", "+")]
    else:
        order = [("attn", "Multi-head\nself-attention"), ("add", "+"), ("norm", "Layer norm"),
                 ("ffn", "Feed-forward\n(per position)"), ("add", "+"), ("norm", "Layer norm")]
    boxes, arrows, residuals = [], [], []
    y = 0.8
    ys = []
    for kind, text in order:
        h = 0.45 if kind == "add" else 0.8
        w = 0.45 if kind == "add" else 2.6
        y += h / 2
        boxes.append(_box(ax, 0, y, w, h, text, colors[kind]))
        ys.append((y - h / 2, y + h / 2, kind))
        y += h / 2 + 0.45
    # the vertical flow
    arrows.append(_arrow(ax, (0, 0.2), (0, ys[0][0])))
    ax.text(0, 0.05, "input $x$ (n, $d_{model}$) + positional encoding", ha="center", va="top", fontsize=10)
    for (_, hi0, _), (lo1, _, _) in zip(ys[:-1], ys[1:], strict=True):
        arrows.append(_arrow(ax, (0, hi0), (0, lo1)))
    arrows.append(_arrow(ax, (0, ys[-1][1]), (0, ys[-1][1] + 0.6)))
    ax.text(0, ys[-1][1] + 0.65, "output (n, $d_{model}$)", ha="center", va="bottom", fontsize=10)
    # residual paths: from before each sub-layer (and its norm, if pre-norm) to the "+"
    adds = [i for i, (kind, _) in enumerate(order) if kind == "add"]
    # pre-norm: the residual leaves before the norm; post-norm: after the previous norm
    y_froms = [ys[0][0] - 0.2, ys[adds[0] + 1][0] - 0.22 if norm_first else ys[adds[0] + 1][1] + 0.22]
    for y_from, a in zip(y_froms, adds, strict=True):
        y_to = (ys[a][0] + ys[a][1]) / 2
        xs = 1.9
        line = ax.plot([0, xs, xs, 0.25], [y_from, y_from, y_to, y_to], color="#c0392b", linewidth=1.5)[0]
        residuals.append(line)
        arrows.append(_arrow(ax, (0.5, y_to), (0.24, y_to)))
    ax.text(2.0, (ys[0][0] + ys[adds[0]][1]) / 2, "residual\n(He et al.)", fontsize=9, color="#c0392b",
            va="center")
    ax.set_xlim(-2.2, 3.2)
    ax.set_ylim(-0.6, ys[-1][1] + 1.2)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title or ("Pre-norm encoder block" if norm_first else "Encoder block (post-norm, as in the paper)"))
    return {"boxes": boxes, "arrows": arrows, "residuals": residuals}


def split_merge_example(n: int = 4, d_model: int = 8, n_heads: int = 2) -> np.ndarray:
    """The (n, d_model) matrix whose entry (i, c) is the head index of column c: what the figure colours."""
    return np.repeat(np.arange(n_heads), d_model // n_heads)[None, :].repeat(n, axis=0)
