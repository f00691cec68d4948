"""Diagrams of chapters "Vector sets as input" and "Sequence labeling without attention".

Lee, ML 2021 "Self-attention", 序列与模型 and Sequence Labeling:

- :func:`draw_output_types`: the three kinds of output (one label per vector, one label per
  sequence, a length the model decides: seq2seq), one concrete example each;
- :func:`draw_tagger`: the same FCN applied to every word (``window=0``, the notes' first
  figure) or to a window of 2w+1 words (the notes' "交叉" figure), padding drawn dashed;
- :func:`draw_graph`: nodes (labelled circles at given positions) and edges (lines).

Each function draws on a given ``ax`` and returns a dict of the artists it made (tests count them).
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from .diagrams import _finish

WORD_COLOR = "#dbe9f6"
FCN_COLOR = "#fde0c5"
LABEL_COLOR = "#d9f0d3"
PAD_COLOR = "#eeeeee"


def _box(ax, x, y, text, color, w=1.0, h=0.5, dashed=False, fontsize=10):
    """A rounded box centred at (x, y)."""
    patch = FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.03", facecolor=color,
                           edgecolor="0.3", linewidth=1.0, linestyle="--" if dashed else "-")
    ax.add_patch(patch)
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)
    return patch


def _arrow(ax, start, end, color="0.35", lw=1.0):
    arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color=color, linewidth=lw,
                            shrinkA=0, shrinkB=0)
    ax.add_patch(arrow)
    return arrow


def draw_sequence_task(ax, inputs, outputs, links, *, title=None, model="model", spacing=1.3):
    """Inputs in a row at the bottom, a model box across the middle, outputs on top.

    links: list of (input index or None, output index): an arrow from the model above input i to
    output j; ``None`` means the arrow starts from the model's centre.  Returns the artists.
    """
    n_in, n_out = len(inputs), len(outputs)
    width = max(n_in, n_out) * spacing
    xs_in = (np.arange(n_in) - (n_in - 1) / 2) * spacing
    xs_out = (np.arange(n_out) - (n_out - 1) / 2) * spacing
    boxes = [_box(ax, x, 0, t, WORD_COLOR) for x, t in zip(xs_in, inputs, strict=True)]
    model_box = _box(ax, 0, 1.5, model, FCN_COLOR, w=width, h=0.6)
    outs = [_box(ax, x, 3.0, t, LABEL_COLOR) for x, t in zip(xs_out, outputs, strict=True)]
    arrows = [_arrow(ax, (x, 0.27), (x, 1.18)) for x in xs_in]
    for i, j in links:
        x0 = 0.0 if i is None else xs_in[i]
        arrows.append(_arrow(ax, (x0, 1.82), (xs_out[j], 2.73)))
    _finish(ax, -width / 2 - 0.3, width / 2 + 0.3, -0.5, 3.5, title)
    return {"inputs": boxes, "model": model_box, "outputs": outs, "arrows": arrows}


def draw_output_types(axes):
    """Three panels (axes of length 3): sequence labeling, one label per sequence, seq2seq."""
    tag = draw_sequence_task(axes[0], ["I", "saw", "a", "saw"], ["PRON", "VERB", "DET", "NOUN"],
                             [(i, i) for i in range(4)], model="tagger",
                             title="n vectors -> n labels\n(sequence labeling: POS tagging)")
    senti = draw_sequence_task(axes[1], ["this", "film", "is", "great"], ["positive"], [(None, 0)],
                               model="classifier", title="n vectors -> 1 label\n(sentiment analysis)")
    s2s = draw_sequence_task(axes[2], ["thank", "you", "very", "much"], ["merci", "beaucoup"],
                             [(None, 0), (None, 1)], model="seq2seq",
                             title="n vectors -> n' labels, model decides n'\n(translation)")
    return {"labeling": tag, "sentiment": senti, "seq2seq": s2s}


def draw_tagger(ax, words, tags, window: int = 0, *, title=None, highlight=None, pad_label="pad"):
    """The same FCN on every word; with ``window = w`` each FCN also sees w words on each side.

    words, tags: the sentence and the predicted (or true) tags, one per word; ``highlight``: an
    index whose window is drawn in colour (default: all windows in grey, the centre word bold).
    Padding positions (beyond the ends) are dashed boxes.  Returns the artists.
    """
    n = len(words)
    xs = np.arange(-window, n + window) * 1.4
    word_boxes, pad_boxes = [], []
    for k, x in enumerate(xs):
        i = k - window
        if 0 <= i < n:
            word_boxes.append(_box(ax, x, 0, words[i], WORD_COLOR))
        else:
            pad_boxes.append(_box(ax, x, 0, pad_label, PAD_COLOR, dashed=True))
    label = "FCN" if window == 0 else f"FCN\n({2 * window + 1} in)"
    fcn = [_box(ax, i * 1.4, 1.6, label, FCN_COLOR, h=0.7, fontsize=9) for i in range(n)]
    out = [_box(ax, i * 1.4, 3.1, t, LABEL_COLOR, w=1.1) for i, t in enumerate(tags)]
    arrows = []
    for i in range(n):
        for j in range(i - window, i + window + 1):
            colour = "tab:red" if highlight == i else "0.55"
            lw = 1.6 if highlight == i else 0.8
            arrows.append(_arrow(ax, (j * 1.4, 0.27), (i * 1.4 + 0.25 * (j - i) / max(window, 1), 1.23),
                                 color=colour, lw=lw))
        arrows.append(_arrow(ax, (i * 1.4, 1.97), (i * 1.4, 2.83)))
    _finish(ax, xs[0] - 0.8, xs[-1] + 0.8, -0.5, 3.6, title)
    return {"words": word_boxes, "pads": pad_boxes, "fcn": fcn, "outputs": out, "arrows": arrows}


def draw_graph(ax, positions, edges, labels, *, colors=None, radius=0.28, title=None):
    """Nodes as labelled circles at ``positions`` (n, 2), edges (m, 2) as lines between them."""
    positions = np.asarray(positions, dtype=float)
    lines = [ax.plot(*positions[[a, b]].T, color="0.4", linewidth=2, zorder=1)[0] for a, b in np.asarray(edges)]
    circles = []
    for k, (x, y) in enumerate(positions):
        face = colors[k] if colors is not None else WORD_COLOR
        c = Circle((x, y), radius, facecolor=face, edgecolor="0.2", zorder=2)
        ax.add_patch(c)
        circles.append(c)
        ax.text(x, y, labels[k], ha="center", va="center", fontsize=10, zorder=3)
    lo, hi = positions.min(axis=0) - 0.6, positions.max(axis=0) + 0.6
    _finish(ax, lo[0], hi[0], lo[1], hi[1], title)
    return {"nodes": circles, "edges": lines}
