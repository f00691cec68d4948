"""The lecture's diagrams, drawn with matplotlib patches (chapters Relevance, Step by step, Matrix form).

Lee, ML 2021 "Self-attention": the architecture (a^1..a^4 -> self-attention -> b^1..b^4 -> FCN),
the dot-product and additive relevance diagrams, the weighted sum b^1 = sum_i alpha'_{1,i} v^i,
and every product of the matrix form (Q = W^q I, A = K^T Q, O = V A') as shaded matrices.

Every function draws on a given ``ax`` and returns a dict of the artists it made, so that
tests can count them.  Vectors are drawn as columns of cells (the lecture's column vectors).
"""

from __future__ import annotations

import numpy as np
from matplotlib import colors as mcolors
from matplotlib import pyplot as plt
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from ._checks import as_array, check_dim, check_ndim
from .plotting import ATTENTION_CMAP

_LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "pad": 1.0}
MATRIX_CMAP = "RdBu_r"  # signed values (weights, inputs, Q, K, V); attention weights use ATTENTION_CMAP


def _norm(values, cmap):
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
    norm = norm or _norm(values, cmap)
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


def _arrow(ax, start, end, text=None, **kw):
    arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=kw.pop("color", "0.2"),
                            linewidth=kw.pop("linewidth", 1.2), **kw)
    ax.add_patch(arrow)
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.12, text, ha="center", va="bottom",
                fontsize=10)
    return arrow


def _finish(ax, xmin, xmax, ymin, ymax, title=None):
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title)


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
    _finish(ax, -0.2, x + 0.2, -top - 0.7, top + 0.7, title)
    return out


def draw_architecture(ax, n=4, n_blocks=1, *, title=None):
    """The lecture's architecture: a^1..a^n -> self-attention (x n_blocks) -> b^1..b^n -> FCN -> outputs.

    Every b^i is drawn with a black frame ("considers the whole sequence"); inside each block a faint
    line joins every input to every output.  Returns ``{"blocks": [...], "vectors": [...], "fcns": [...],
    "arrows": [...]}``.
    """
    if n < 1 or n_blocks < 1:
        raise ValueError(f"n, n_blocks: expected >= 1, got n={n}, n_blocks={n_blocks}")
    out = {"blocks": [], "vectors": [], "fcns": [], "arrows": []}
    xs = np.arange(n) * 1.4
    w, h = 0.5, 0.8  # a vector's box
    letters = "abcdefgh"

    def vectors(y, letter, framed):
        for i, x in enumerate(xs):
            box = Rectangle((x - w / 2, y), w, h, facecolor="#cfe3f5" if letter == "a" else "#fde3c8",
                            edgecolor="black", linewidth=2.2 if framed else 0.8)
            ax.add_patch(box)
            out["vectors"].append(box)
            ax.text(x + w / 2 + 0.08, y + h / 2, f"${letter}^{i + 1}$", ha="left", va="center", fontsize=11)

    y = 0.0
    vectors(y, "a", False)
    for blk in range(n_blocks):
        y_block = y + h + 0.6
        block = FancyBboxPatch((xs[0] - 0.6, y_block), xs[-1] - xs[0] + 1.2, 0.8, boxstyle="round,pad=0.05",
                               facecolor="#e8e8e8", edgecolor="0.2")
        ax.add_patch(block)
        out["blocks"].append(block)
        ax.text((xs[0] + xs[-1]) / 2, y_block + 0.4, "Self-attention", ha="center", va="center", fontsize=12)
        for x in xs:
            out["arrows"].append(_arrow(ax, (x, y + h), (x, y_block - 0.05)))
        for x0 in xs:  # every input reaches every output
            for x1 in xs:
                ax.plot([x0, x1], [y_block + 0.05, y_block + 0.75], color="0.6", linewidth=0.5, zorder=0.5)
        y = y_block + 0.8 + 0.6
        for x in xs:
            out["arrows"].append(_arrow(ax, (x, y_block + 0.85), (x, y)))
        vectors(y, letters[blk + 1], True)
    y_fcn = y + h + 0.5
    for x in xs:
        out["arrows"].append(_arrow(ax, (x, y + h), (x, y_fcn)))
        fcn = Rectangle((x - 0.45, y_fcn), 0.9, 0.5, facecolor="#d9f0d3", edgecolor="0.2")
        ax.add_patch(fcn)
        out["fcns"].append(fcn)
        ax.text(x, y_fcn + 0.25, "FCN", ha="center", va="center", fontsize=9)
        out["arrows"].append(_arrow(ax, (x, y_fcn + 0.5), (x, y_fcn + 1.0)))
        ax.text(x, y_fcn + 1.05, "label", ha="center", va="bottom", fontsize=9)
    _finish(ax, xs[0] - 1.0, xs[-1] + 1.2, -0.3, y_fcn + 1.5, title)
    return out


def draw_relevance_arcs(ax, scores, *, query=0, title=None):
    """The notes' first self-attention figure: how relevant is every a^j to a^query? One arc per pair.

    scores: (n,), the relevance alpha_{query+1, j} of each a^j (the query's own score included: a
    loop above it).  Arc widths grow with |score|.  Returns ``{"vectors": [...], "arcs": [...]}``.
    """
    scores = np.atleast_1d(as_array(scores, "scores"))
    check_ndim(scores, "scores", 1, "(n,)")
    n = scores.shape[0]
    if not 0 <= query < n:
        raise ValueError(f"query: expected an index in [0, {n}), got {query}")
    big = float(np.max(np.abs(scores))) or 1.0
    out = {"vectors": [], "arcs": []}
    xs = np.arange(n) * 1.5
    for j, x in enumerate(xs):
        box = Rectangle((x - 0.25, 0), 0.5, 0.9, facecolor="#cfe3f5" if j != query else "#fde3c8",
                        edgecolor="black", linewidth=0.8)
        ax.add_patch(box)
        out["vectors"].append(box)
        ax.text(x, -0.15, f"$a^{j + 1}$", ha="center", va="top", fontsize=12)
    for j, x in enumerate(xs):
        width = 0.8 + 3.0 * abs(float(scores[j])) / big
        label = f"$\\alpha_{{{query + 1},{j + 1}}} = {float(scores[j]):.2f}$"
        if j == query:  # the query's own score: a small loop above it, labelled to its left
            arc = FancyArrowPatch((x - 0.15, 0.95), (x + 0.15, 0.95), connectionstyle="arc3,rad=-1.6",
                                  arrowstyle="-", linewidth=width, color="C1")
            ax.text(x - 0.3, 1.25, label, ha="right", va="bottom", fontsize=10, bbox=_LABEL_BOX)
        else:
            dist = abs(x - xs[query])
            rad = -0.35 if j > query else 0.35
            arc = FancyArrowPatch((xs[query], 0.95), (x, 0.95), connectionstyle=f"arc3,rad={rad}",
                                  arrowstyle="-", linewidth=width, color="C0")
            ax.text((x + xs[query]) / 2, 0.95 + 0.35 * dist / 2 + 0.06, label, ha="center", va="bottom",
                    fontsize=10, bbox=_LABEL_BOX)
        ax.add_patch(arc)
        out["arcs"].append(arc)
    _finish(ax, xs[0] - 2.0, xs[-1] + 0.8, -0.6, 1.3 + 0.35 * (xs[-1] - xs[0]) / 2 + 0.4, title)
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
    norm = _norm(np.concatenate([a_i, a_j, q, k, prod]), MATRIX_CMAP)
    y_q, y_k = 1.4, -1.4
    cells = _draw_projections(ax, a_i, a_j, q, k, i, j, norm, y_q, y_k)
    _arrow(ax, (2.5, y_q), (3.9, 0.25), None)
    _arrow(ax, (2.5, y_k), (3.9, -0.25), None)
    ax.text(3.3, 0, "×", ha="center", va="center", fontsize=14)
    cells += _column(ax, prod, 4.0, 0, f"$q^{i} \\odot k^{j}$", norm=norm)
    ax.text(4.2, -len(prod) * 0.2 - 0.1, "(element-wise)", ha="center", va="top", fontsize=8)
    _arrow(ax, (4.55, 0), (5.9, 0), "sum")
    ax.text(6.0, 0, f"$\\alpha_{{{i},{j}}} = {alpha:.2f}$", ha="left", va="center", fontsize=13)
    half = max(len(a_i), len(q)) * 0.2
    _finish(ax, -0.3, 8.0, y_k - half - 0.4, y_q + half + 0.6, title)
    return {"cells": cells, "alpha": alpha}


def _draw_projections(ax, a_i, a_j, q, k, i, j, norm, y_q, y_k):
    """The front half shared by both relevance diagrams: a^i -W^q-> q^i above, a^j -W^k-> k^j below."""
    cells = _column(ax, a_i, 0, y_q, f"$a^{i}$", norm=norm)
    cells += _column(ax, a_j, 0, y_k, f"$a^{j}$", norm=norm)
    _arrow(ax, (0.55, y_q), (1.9, y_q), "$W^q$")
    _arrow(ax, (0.55, y_k), (1.9, y_k), "$W^k$")
    cells += _column(ax, q, 2.0, y_q, f"$q^{i}$", norm=norm)
    cells += _column(ax, k, 2.0, y_k, f"$k^{j}$", norm=norm)
    return cells


def draw_additive(ax, a_i, a_j, W_q, W_k, w, *, i=1, j=2, title=None):
    """The additive diagram (Bahdanau et al. 2015): alpha_{i,j} = w^T tanh(W^q a^i + W^k a^j).

    a_i, a_j: (d_in,); W_q, W_k: (d_h, d_in); w: (d_h,).  Returns ``{"cells": [...], "alpha": float}``.
    """
    a_i, a_j, w = as_array(a_i, "a_i"), as_array(a_j, "a_j"), as_array(w, "w")
    W_q, W_k = as_array(W_q, "W_q"), as_array(W_k, "W_k")
    check_dim(W_q.shape[1], a_i.shape[0], "W_q's columns vs a_i's d_in", "(d_h, d_in)", W_q.shape)
    check_dim(W_k.shape[1], a_j.shape[0], "W_k's columns vs a_j's d_in", "(d_h, d_in)", W_k.shape)
    check_dim(w.shape[0], W_q.shape[0], "w's length vs d_h", "(d_h,)", w.shape)
    q, k = W_q @ a_i, W_k @ a_j  # (d_h,)
    s = q + k
    t = np.tanh(s)
    alpha = float(w @ t)
    norm = _norm(np.concatenate([a_i, a_j, q, k, s, t]), MATRIX_CMAP)
    y_q, y_k = 1.4, -1.4
    cells = _draw_projections(ax, a_i, a_j, q, k, i, j, norm, y_q, y_k)
    _arrow(ax, (2.5, y_q), (3.9, 0.25))
    _arrow(ax, (2.5, y_k), (3.9, -0.25))
    ax.text(3.3, 0, "+", ha="center", va="center", fontsize=14)
    cells += _column(ax, s, 4.0, 0, f"$q^{i}+k^{j}$", norm=norm)
    _arrow(ax, (4.55, 0), (5.9, 0), "tanh")
    cells += _column(ax, t, 6.0, 0, "tanh", norm=norm)
    _arrow(ax, (6.55, 0), (7.9, 0), "$W$")
    ax.text(8.0, 0, f"$\\alpha_{{{i},{j}}} = {alpha:.2f}$", ha="left", va="center", fontsize=13)
    half = max(len(a_i), len(q)) * 0.2
    _finish(ax, -0.3, 10.0, y_k - half - 0.4, y_q + half + 0.6, title)
    return {"cells": cells, "alpha": alpha}


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
        out["v"].append(_arrow(ax, (0, 0), tuple(v), color="0.7", linewidth=1.0, linestyle="--"))
        ax.text(v[0], v[1], f" $v^{j + 1}$", fontsize=10, color="0.4")
    tip = np.zeros(2)
    for j in range(n):
        step = weights[j] * vectors[:, j]
        out["scaled"].append(_arrow(ax, tuple(tip), tuple(tip + step), color=colours(j), linewidth=2.0,
                                    label=f"$\\alpha'_{{{query},{j + 1}}}\\,v^{j + 1}$ ({weights[j]:.2f})"))
        tip = tip + step
    out["b"] = _arrow(ax, (0, 0), tuple(tip), color="black", linewidth=2.5, label=f"$b^{query}$")
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
    from .attention import attend_one  # local: attention does not import diagrams

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

