"""The drawing primitives every chapter's figures share: colour maps, a labelled heatmap, shaded matrices,
one arrow, one box, a data point's word label, and the end of every diagram (limits, equal aspect, no axes).

Vectors are drawn as columns of cells (the lecture's column vectors); a matrix product as three shaded
matrices, ``left x right = result``.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colors as mcolors
from matplotlib import pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from attn_book.figures.data_words import data_text
from attn_ref._checks import as_array, check_dim, check_ndim

ATTENTION_CMAP = "viridis"  # the one colour map of every attention heatmap in the book
MATRIX_CMAP = "RdBu_r"  # signed values (weights, inputs, Q, K, V); attention weights use ATTENTION_CMAP


def heatmap(ax, values, *, xlabels=None, ylabels=None, title=None, xlabel=None, ylabel=None,
            annotate=True, cmap=ATTENTION_CMAP, vmin=None, vmax=None, fmt="{:.2f}", colorbar=True):
    """Draw ``values`` (rows, cols) on a matplotlib ``ax`` with labels and optional numbers in the cells."""
    values = np.asarray(values)
    im = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    rows, cols = values.shape
    ax.set_xticks(range(cols), labels=xlabels if xlabels is not None else range(1, cols + 1))
    ax.set_yticks(range(rows), labels=ylabels if ylabels is not None else range(1, rows + 1))
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if annotate and rows * cols <= 100:
        lo, hi = im.get_clim()
        mid = (lo + hi) / 2
        for r in range(rows):
            for c in range(cols):
                ax.text(c, r, fmt.format(values[r, c]), ha="center", va="center", fontsize=8,
                        color="black" if values[r, c] > mid else "white")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    return im


def arrow(ax, start, end, text=None, *, color="0.2", linewidth=1.2, mutation_scale=12, text_offset=0.12,
          fontsize=10, text_color=None, **kw):
    """An arrow from ``start`` to ``end`` (data coordinates), with an optional ``text`` above its middle.

    ``linewidth=None`` takes matplotlib's default; ``text_color=None`` the default text colour; other
    keywords (``linestyle``, ``label``, ``shrinkA`` ...) go to :class:`~matplotlib.patches.FancyArrowPatch`.
    Returns the arrow.
    """
    patch = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=mutation_scale, color=color,
                            linewidth=linewidth, **kw)
    ax.add_patch(patch)
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + text_offset, text, ha="center",
                va="bottom", fontsize=fontsize, color=text_color)
    return patch


def box(ax, x, y, text, color, *, w=1.0, h=0.5, pad=0.03, edgecolor="0.3", linewidth=1.0, dashed=False,
        fontsize=10):
    """A rounded ``w`` x ``h`` box centred at (x, y), filled with ``color``, ``text`` in its middle.

    Returns the box.
    """
    patch = FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle=f"round,pad={pad}", facecolor=color,
                           edgecolor=edgecolor, linewidth=linewidth, linestyle="--" if dashed else "-")
    ax.add_patch(patch)
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)
    return patch


def word_label(ax, word, xy, *, offset=(5, 4), fontsize=9, **kwargs):
    """The word ``word`` beside the data point ``xy`` (offset in points), marked as data (:func:`data_text`):
    "train" the vehicle stays "train" on a Chinese figure whose legend "train" is 训练."""
    return data_text(ax.annotate(word, xy, textcoords="offset points", xytext=offset, fontsize=fontsize,
                                 **kwargs))


def finish(ax, xmin, xmax, ymin, ymax, title=None):
    """The end of every diagram: these limits, equal aspect, no axes, and the title if any."""
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)


def value_norm(values, cmap):
    """A colour norm: symmetric around 0 for the diverging map, data range otherwise."""
    values = np.asarray(values, dtype=float)
    if cmap == MATRIX_CMAP:
        m = float(np.max(np.abs(values))) if values.size else 1.0
        return mcolors.Normalize(-m or -1.0, m or 1.0)
    lo, hi = float(np.min(values)), float(np.max(values))
    return mcolors.Normalize(lo, hi if hi > lo else lo + 1.0)


def draw_cells(ax, values, x, y, *, cell=0.4, cmap=MATRIX_CMAP, norm=None, annotate=True, fmt="{:.1f}"):
    """Draw a matrix (rows, cols) as shaded cells with its top-left corner at (x, y).

    values: (rows, cols), or (d,) drawn as a column vector.  Returns the list of cell Rectangles.
    """
    values = as_array(values, "values")
    if values.ndim == 1:
        values = values[:, None]  # (d, 1): a column vector, as in the lecture
    check_ndim(values, "values", 2, "(rows, cols) or (d,)")
    cm = plt.get_cmap(cmap)
    norm = norm or value_norm(values, cmap)
    rects = []
    rows, cols = values.shape
    for r in range(rows):
        for c in range(cols):
            v = float(values[r, c])
            face = cm(norm(v))
            rect = Rectangle((x + c * cell, y - (r + 1) * cell), cell, cell, facecolor=face,
                             edgecolor="0.3", linewidth=0.6)
            ax.add_patch(rect)
            rects.append(rect)
            if annotate and rows * cols <= 64:
                lum = 0.299 * face[0] + 0.587 * face[1] + 0.114 * face[2]
                ax.text(x + (c + 0.5) * cell, y - (r + 0.5) * cell, fmt.format(v), ha="center",
                        va="center", fontsize=7, color="black" if lum > 0.5 else "white")
    return rects


def draw_matmul(ax, left, right, result, names=("A", "B", "C"), *, cell=0.4, cmaps=None, annotate=True,
                title=None):
    """Draw ``left @ right = result`` as three shaded matrices with their names and dimensions.

    left: (r, m), right: (m, c), result: (r, c); names: three labels (mathtext allowed, e.g.
    ``r"$W^q$"``); cmaps: one colour map per matrix (default: the signed map for all three).
    Raises ValueError if the shapes do not chain.  Returns ``{"cells": [3 lists of Rectangles],
    "names": [3 Texts], "dims": [3 Texts]}``.
    """
    mats = [as_array(m, n) for m, n in zip((left, right, result), ("left", "right", "result"), strict=True)]
    for m, n, lay in zip(mats, ("left", "right", "result"), ("(r, m)", "(m, c)", "(r, c)"), strict=True):
        check_ndim(m, n, 2, lay)
    L, R, O = mats
    check_dim(R.shape[0], L.shape[1], "right's rows vs left's columns", "(m, c)", R.shape)
    check_dim(O.shape[0], L.shape[0], "result's rows vs left's rows", "(r, c)", O.shape)
    check_dim(O.shape[1], R.shape[1], "result's columns vs right's columns", "(r, c)", O.shape)
    if len(names) != 3:
        raise ValueError(f"names: expected 3 labels, got {len(names)}")
    cmaps = cmaps or (MATRIX_CMAP,) * 3
    gap = 0.9  # room for the x and = signs
    top = max(m.shape[0] for m in mats) * cell / 2
    x = 0.0
    out = {"cells": [], "names": [], "dims": []}
    for k, (m, name, cmap) in enumerate(zip(mats, names, cmaps, strict=True)):
        rows, cols = m.shape
        y = rows * cell / 2  # vertically centred on 0
        out["cells"].append(draw_cells(ax, m, x, y, cell=cell, cmap=cmap, annotate=annotate))
        cx = x + cols * cell / 2
        out["names"].append(ax.text(cx, y + 0.15, name, ha="center", va="bottom", fontsize=12))
        out["dims"].append(ax.text(cx, -y - 0.15, f"{rows}×{cols}", ha="center", va="top", fontsize=9,
                                   color="0.3"))
        x += cols * cell
        if k < 2:
            ax.text(x + gap / 2, 0, "×" if k == 0 else "=", ha="center", va="center", fontsize=16)
            x += gap
    finish(ax, -0.2, x + 0.2, -top - 0.7, top + 0.7, title)
    return out
