"""One look for every figure in the book: the attention colour map and a labelled heatmap."""

from __future__ import annotations

import numpy as np

ATTENTION_CMAP = "viridis"  # the one colour map of every attention heatmap in the book


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
