"""Figures of chapter "Multi-head": the (n, d_model) matrix cut into H heads of width d_k = d_model / H
(:func:`attn_ref.multihead.split_heads`), each head's (n, d_k) output, and the heads glued back side by
side (:func:`attn_ref.multihead.merge_heads`) before W^O.  Labels in the book's notation.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.patches import Rectangle

from .draw import arrow, finish

HEAD_CMAP = "tab10"  # one colour per head (categorical, not an attention heatmap)
#: the style of :func:`~attn_book.figures.draw.arrow` in the block diagrams (here and chapter "Transformer")
BLOCK_ARROW = {"color": "0.25", "linewidth": None, "text_offset": 0.15, "fontsize": 9, "text_color": "0.25"}


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


def draw_split_merge(ax, n: int = 4, d_model: int = 8, n_heads: int = 2, *, cell: float = 0.35, title=None):
    """Draw Q (n, d_model) -> H heads (n, d_k) -> per-head b^{i,h} (n, d_k) -> concatenation (n, d_model) -> W^O.

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
    q_label = "$Q^\\top = X (W^q)^\\top$\n$(n, d_{\\mathrm{model}})$"
    cells += _matrix(ax, x0, top, n, d_model, n_heads, cell, q_label, colors)
    # 2. the heads, stacked vertically
    x1 = x0 + w_full + 1.6
    head_h = n * cell + 0.9
    y_heads = [top + (n_heads - 1) * head_h / 2 - h * head_h for h in range(n_heads)]
    for h in range(n_heads):
        sub = colors[h:h + 1]
        cells += _matrix(ax, x1, y_heads[h], n, d_h, 1, cell, f"$q^{{i,{h + 1}}}$ $(n, d_k)$", sub)
        arrows.append(arrow(ax, (x0 + w_full + 0.1, top - n * cell / 2),
                            (x1 - 0.1, y_heads[h] - n * cell / 2), "split" if h == 0 else None, **BLOCK_ARROW))
    # 3. each head's attention output b^{i,h}
    x2 = x1 + d_h * cell + 1.8
    for h in range(n_heads):
        cells += _matrix(ax, x2, y_heads[h], n, d_h, 1, cell, f"$b^{{i,{h + 1}}}$ $(n, d_k)$", colors[h:h + 1])
        arrows.append(arrow(ax, (x1 + d_h * cell + 0.1, y_heads[h] - n * cell / 2),
                            (x2 - 0.1, y_heads[h] - n * cell / 2), "attention" if h == 0 else None,
                            **BLOCK_ARROW))
    # 4. concatenation, then W_o
    x3 = x2 + d_h * cell + 1.6
    cells += _matrix(ax, x3, top, n, d_model, n_heads, cell, "concat $(n, d_{\\mathrm{model}})$", colors)
    for h in range(n_heads):
        arrows.append(arrow(ax, (x2 + d_h * cell + 0.1, y_heads[h] - n * cell / 2),
                            (x3 - 0.1, top - n * cell / 2), "merge" if h == 0 else None, **BLOCK_ARROW))
    x4 = x3 + w_full + 1.4
    out_label = "$b^i = W^O\\,[b^{i,1};\\ldots]$\n$(n, d_{\\mathrm{model}})$"
    cells += _matrix(ax, x4, top, n, d_model, 1, cell, out_label, ["0.55"])
    arrows.append(arrow(ax, (x3 + w_full + 0.1, top - n * cell / 2), (x4 - 0.1, top - n * cell / 2), "$W^O$",
                        **BLOCK_ARROW))
    ymin = min(y_heads) - n * cell - 0.4
    ymax = max(y_heads) + 0.9
    finish(ax, -0.3, x4 + w_full + 0.3, ymin, ymax, title)
    return {"cells": cells, "arrows": arrows, "heads": n_heads}


def split_merge_example(n: int = 4, d_model: int = 8, n_heads: int = 2) -> np.ndarray:
    """The (n, d_model) matrix whose entry (i, c) is the head index of column c: what the figure colours."""
    return np.repeat(np.arange(n_heads), d_model // n_heads)[None, :].repeat(n, axis=0)
