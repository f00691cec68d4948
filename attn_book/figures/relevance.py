"""Figures of chapter "Relevance": the lecture's architecture, the relevance arcs, and the dot-product and
additive relevance diagrams.

Lee, ML 2021 "Self-attention": a^1..a^4 -> self-attention -> b^1..b^4 -> FCN, the two alternating when
stacked; how relevant is every a^j to a^1; alpha_{i,j} = q^i . k^j (dot product) or W tanh(q^i + k^j)
(additive, Bahdanau et al. 2015).
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from attn_ref._checks import as_array, check_dim, check_ndim

from .draw import MATRIX_CMAP, arrow, draw_cells, finish, value_norm

_LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "pad": 1.0}


def draw_architecture(ax, n=4, n_blocks=1, *, title=None):
    """The lecture's architecture: a^1..a^n -> self-attention -> b^1..b^n -> FCN, ``n_blocks`` times.

    Self-attention and FCN alternate, as in the lecture's stacked figure: the FCNs' outputs are the
    next self-attention block's inputs, and the last FCNs give the labels.  Every output of a
    self-attention block is drawn with a black frame ("considers the whole sequence"); inside each
    block a faint line joins every input to every output.  The first block's outputs are labelled
    b^1..b^n, a later block's are only framed.  Returns ``{"blocks": [...], "vectors": [...],
    "fcns": [...], "arrows": [...], "order": [...]}``, ``order`` the layers from bottom to top
    ("self-attention", "FCN", ...).
    """
    if n < 1 or n_blocks < 1:
        raise ValueError(f"n, n_blocks: expected >= 1, got n={n}, n_blocks={n_blocks}")
    out = {"blocks": [], "vectors": [], "fcns": [], "arrows": [], "order": []}
    xs = np.arange(n) * 1.4
    w, h = 0.5, 0.8  # a vector's box

    def vectors(y, letter, framed):
        for i, x in enumerate(xs):
            box = Rectangle((x - w / 2, y), w, h, facecolor="#cfe3f5" if letter == "a" else "#fde3c8",
                            edgecolor="black", linewidth=2.2 if framed else 0.8)
            ax.add_patch(box)
            out["vectors"].append(box)
            if letter:
                ax.text(x + w / 2 + 0.08, y + h / 2, f"${letter}^{i + 1}$", ha="left", va="center",
                        fontsize=11)

    vectors(0.0, "a", False)
    y_in = h  # where the arrows into the next block start
    for blk in range(n_blocks):
        y_block = y_in + 0.6
        block = FancyBboxPatch((xs[0] - 0.6, y_block), xs[-1] - xs[0] + 1.2, 0.8, boxstyle="round,pad=0.05",
                               facecolor="#e8e8e8", edgecolor="0.2")
        ax.add_patch(block)
        out["blocks"].append(block)
        out["order"].append("self-attention")
        ax.text((xs[0] + xs[-1]) / 2, y_block + 0.4, "Self-attention", ha="center", va="center", fontsize=12)
        for x in xs:
            out["arrows"].append(arrow(ax, (x, y_in), (x, y_block - 0.05)))
        for x0 in xs:  # every input reaches every output
            for x1 in xs:
                ax.plot([x0, x1], [y_block + 0.05, y_block + 0.75], color="0.6", linewidth=0.5, zorder=0.5)
        y = y_block + 0.8 + 0.6
        for x in xs:
            out["arrows"].append(arrow(ax, (x, y_block + 0.85), (x, y)))
        vectors(y, "b" if blk == 0 else "", True)
        y_fcn = y + h + 0.5
        out["order"].append("FCN")
        for x in xs:
            out["arrows"].append(arrow(ax, (x, y + h), (x, y_fcn)))
            fcn = Rectangle((x - 0.45, y_fcn), 0.9, 0.5, facecolor="#d9f0d3", edgecolor="0.2")
            ax.add_patch(fcn)
            out["fcns"].append(fcn)
            ax.text(x, y_fcn + 0.25, "FCN", ha="center", va="center", fontsize=9)
        y_in = y_fcn + 0.5
    for x in xs:
        out["arrows"].append(arrow(ax, (x, y_in), (x, y_in + 0.5)))
        ax.text(x, y_in + 0.55, "label", ha="center", va="bottom", fontsize=9)
    finish(ax, xs[0] - 1.0, xs[-1] + 1.2, -0.3, y_in + 1.0, title)
    return out


def draw_relevance_arcs(ax, scores, *, to=0, title=None):
    """The notes' first self-attention figure: how relevant is every a^j to a^(to+1)? One arc per pair.

    scores: (n,), the relevance alpha_{to+1, j} of each a^j (a^(to+1)'s own score included: a loop
    above it); to: the 0-based index of the vector the arcs start from.  Arc widths grow with |score|.
    Returns ``{"vectors": [...], "arcs": [...]}``.
    """
    scores = np.atleast_1d(as_array(scores, "scores"))
    check_ndim(scores, "scores", 1, "(n,)")
    n = scores.shape[0]
    if not 0 <= to < n:
        raise ValueError(f"to: expected an index in [0, {n}), got {to}")
    big = float(np.max(np.abs(scores))) or 1.0
    out = {"vectors": [], "arcs": []}
    xs = np.arange(n) * 1.5
    for j, x in enumerate(xs):
        box = Rectangle((x - 0.25, 0), 0.5, 0.9, facecolor="#cfe3f5" if j != to else "#fde3c8",
                        edgecolor="black", linewidth=0.8)
        ax.add_patch(box)
        out["vectors"].append(box)
        ax.text(x, -0.15, f"$a^{j + 1}$", ha="center", va="top", fontsize=12)
    for j, x in enumerate(xs):
        width = 0.8 + 3.0 * abs(float(scores[j])) / big
        label = f"$\\alpha_{{{to + 1},{j + 1}}} = {float(scores[j]):.2f}$"
        if j == to:  # its own score: a small loop above it, labelled to its left
            arc = FancyArrowPatch((x - 0.15, 0.95), (x + 0.15, 0.95), connectionstyle="arc3,rad=-1.6",
                                  arrowstyle="-", linewidth=width, color="C1")
            ax.text(x - 0.3, 1.25, label, ha="right", va="bottom", fontsize=10, bbox=_LABEL_BOX)
        else:
            dist = abs(x - xs[to])
            rad = -0.35 if j > to else 0.35
            arc = FancyArrowPatch((xs[to], 0.95), (x, 0.95), connectionstyle=f"arc3,rad={rad}",
                                  arrowstyle="-", linewidth=width, color="C0")
            ax.text((x + xs[to]) / 2, 0.95 + 0.35 * dist / 2 + 0.06, label, ha="center", va="bottom",
                    fontsize=10, bbox=_LABEL_BOX)
        ax.add_patch(arc)
        out["arcs"].append(arc)
    finish(ax, xs[0] - 2.0, xs[-1] + 0.8, -0.6, 1.3 + 0.35 * (xs[-1] - xs[0]) / 2 + 0.4, title)
    return out


def _column(ax, values, x, y_mid, label, cmap=MATRIX_CMAP, norm=None, cell=0.4, fmt="{:.1f}"):
    values = np.atleast_1d(as_array(values, label))
    top = y_mid + len(values) * cell / 2
    rects = draw_cells(ax, values, x, top, cell=cell, cmap=cmap, norm=norm, fmt=fmt)
    ax.text(x + cell / 2, top + 0.1, label, ha="center", va="bottom", fontsize=11)
    return rects


def draw_dot_product(ax, a_i, a_j, W_q, W_k, *, i=1, j=2, scale=1.0, title=None):
    """The lecture's dot-product diagram: q^i = W^q a^i, k^j = W^k a^j, alpha_{i,j} = sum(q^i * k^j).

    a_i, a_j: (d_in,); W_q, W_k: (d_k, d_in).  Returns ``{"cells": [...], "alpha": float}``.
    """
    a_i, a_j = as_array(a_i, "a_i"), as_array(a_j, "a_j")
    W_q, W_k = as_array(W_q, "W_q"), as_array(W_k, "W_k")
    check_dim(W_q.shape[1], a_i.shape[0], "W_q's columns vs a_i's d_in", "(d_k, d_in)", W_q.shape)
    check_dim(W_k.shape[1], a_j.shape[0], "W_k's columns vs a_j's d_in", "(d_k, d_in)", W_k.shape)
    q, k = W_q @ a_i, W_k @ a_j  # (d_k,)
    prod = q * k  # (d_k,) element-wise
    alpha = scale * float(prod.sum())
    norm = value_norm(np.concatenate([a_i, a_j, q, k, prod]), MATRIX_CMAP)
    y_q, y_k = 1.4, -1.4
    cells = _draw_projections(ax, a_i, a_j, q, k, i, j, norm, y_q, y_k, "×")
    cells += _column(ax, prod, 4.0, 0, f"$q^{i} \\odot k^{j}$", norm=norm)
    ax.text(4.2, -len(prod) * 0.2 - 0.1, "(element-wise)", ha="center", va="top", fontsize=8)
    arrow(ax, (4.55, 0), (5.9, 0), "sum")
    ax.text(6.0, 0, f"$\\alpha_{{{i},{j}}} = {alpha:.2f}$", ha="left", va="center", fontsize=13)
    half = max(len(a_i), len(q)) * 0.2
    finish(ax, -0.3, 8.0, y_k - half - 0.4, y_q + half + 0.6, title)
    return {"cells": cells, "alpha": alpha}


def _draw_projections(ax, a_i, a_j, q, k, i, j, norm, y_q, y_k, op):
    """The front half shared by both relevance diagrams: a^i -W^q-> q^i above, a^j -W^k-> k^j below,
    both led to the operator ``op`` that combines them."""
    cells = _column(ax, a_i, 0, y_q, f"$a^{i}$", norm=norm)
    cells += _column(ax, a_j, 0, y_k, f"$a^{j}$", norm=norm)
    arrow(ax, (0.55, y_q), (1.9, y_q), "$W^q$")
    arrow(ax, (0.55, y_k), (1.9, y_k), "$W^k$")
    cells += _column(ax, q, 2.0, y_q, f"$q^{i}$", norm=norm)
    cells += _column(ax, k, 2.0, y_k, f"$k^{j}$", norm=norm)
    arrow(ax, (2.5, y_q), (3.9, 0.25))
    arrow(ax, (2.5, y_k), (3.9, -0.25))
    ax.text(3.3, 0, op, ha="center", va="center", fontsize=14)
    return cells


def draw_additive(ax, a_i, a_j, W_q, W_k, w, *, i=1, j=2, title=None):
    """The additive diagram (Bahdanau et al. 2015): alpha_{i,j} = w^T tanh(W^q a^i + W^k a^j).

    a_i, a_j: (d_in,); W_q, W_k: (d_k, d_in); w: (d_k,).  Returns ``{"cells": [...], "alpha": float}``.
    """
    a_i, a_j, w = as_array(a_i, "a_i"), as_array(a_j, "a_j"), as_array(w, "w")
    W_q, W_k = as_array(W_q, "W_q"), as_array(W_k, "W_k")
    check_dim(W_q.shape[1], a_i.shape[0], "W_q's columns vs a_i's d_in", "(d_k, d_in)", W_q.shape)
    check_dim(W_k.shape[1], a_j.shape[0], "W_k's columns vs a_j's d_in", "(d_k, d_in)", W_k.shape)
    check_dim(w.shape[0], W_q.shape[0], "w's length vs d_k", "(d_k,)", w.shape)
    q, k = W_q @ a_i, W_k @ a_j  # (d_k,)
    s = q + k
    t = np.tanh(s)
    alpha = float(w @ t)
    norm = value_norm(np.concatenate([a_i, a_j, q, k, s, t]), MATRIX_CMAP)
    y_q, y_k = 1.4, -1.4
    cells = _draw_projections(ax, a_i, a_j, q, k, i, j, norm, y_q, y_k, "+")
    cells += _column(ax, s, 4.0, 0, f"$q^{i}+k^{j}$", norm=norm)
    arrow(ax, (4.55, 0), (5.9, 0), "tanh")
    cells += _column(ax, t, 6.0, 0, "tanh", norm=norm)
    arrow(ax, (6.55, 0), (7.9, 0), r"$w^\top$")
    ax.text(8.0, 0, f"$\\alpha_{{{i},{j}}} = {alpha:.2f}$", ha="left", va="center", fontsize=13)
    half = max(len(a_i), len(q)) * 0.2
    finish(ax, -0.3, 10.0, y_k - half - 0.4, y_q + half + 0.6, title)
    return {"cells": cells, "alpha": alpha}


