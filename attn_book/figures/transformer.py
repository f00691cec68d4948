"""Figures of chapter "Toward the Transformer": the encoder block (Vaswani et al. 2017, fig. 1, left),
post-norm or pre-norm, in the chapter's notation.
"""

from __future__ import annotations

from .draw import arrow, box, finish
from .multi_head import BLOCK_ARROW


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
        boxes.append(box(ax, 0, y, text, colors[kind], w=w, h=h, pad=0.05, edgecolor="0.2",
                         linewidth=1.2))
        ys.append((y - h / 2, y + h / 2, kind))
        y += h / 2 + 0.45
    # the vertical flow
    arrows.append(arrow(ax, (0, 0.2), (0, ys[0][0]), **BLOCK_ARROW))
    x_label = r"input $X$: rows $\sqrt{d_{\mathrm{model}}}\,a^i + e^i$ (after dropout), $(n, d_{\mathrm{model}})$"
    ax.text(0, 0.05, x_label, ha="center", va="top", fontsize=10)
    for (_, hi0, _), (lo1, _, _) in zip(ys[:-1], ys[1:], strict=True):
        arrows.append(arrow(ax, (0, hi0), (0, lo1), **BLOCK_ARROW))
    arrows.append(arrow(ax, (0, ys[-1][1]), (0, ys[-1][1] + 0.6), **BLOCK_ARROW))
    ax.text(0, ys[-1][1] + 0.65, r"output $(n, d_{\mathrm{model}})$", ha="center", va="bottom", fontsize=10)
    # residual paths: from before each sub-layer (and its norm, if pre-norm) to the "+"
    adds = [i for i, (kind, _) in enumerate(order) if kind == "add"]
    # pre-norm: the residual leaves before the norm; post-norm: after the previous norm
    y_froms = [ys[0][0] - 0.2, ys[adds[0] + 1][0] - 0.22 if norm_first else ys[adds[0] + 1][1] + 0.22]
    for y_from, a in zip(y_froms, adds, strict=True):
        y_to = (ys[a][0] + ys[a][1]) / 2
        xs = 1.9
        line = ax.plot([0, xs, xs, 0.25], [y_from, y_from, y_to, y_to], color="#c0392b", linewidth=1.5)[0]
        residuals.append(line)
        arrows.append(arrow(ax, (0.5, y_to), (0.24, y_to), **BLOCK_ARROW))
    ax.text(2.0, (ys[0][0] + ys[adds[0]][1]) / 2, "residual\n(He et al.)", fontsize=9, color="#c0392b",
            va="center")
    default = "Pre-norm encoder block" if norm_first else "Encoder block (post-norm, as in the paper)"
    finish(ax, -2.2, 3.2, -0.6, ys[-1][1] + 1.2, title or default)
    return {"boxes": boxes, "arrows": arrows, "residuals": residuals}

