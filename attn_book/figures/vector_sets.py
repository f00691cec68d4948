"""Figures of chapter "Vector sets as input": the three kinds of output and a graph's nodes and edges.

Lee, ML 2021 "Self-attention", 序列与模型: one label per vector, one label per sequence, or a length the
model decides (seq2seq), one concrete example each; a molecule as nodes (labelled circles) and bonds
(lines).  The colours of words, FCNs and labels are shared with chapter "Sequence labeling".
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Circle

from .draw import arrow, box, finish

WORD_COLOR = "#dbe9f6"
FCN_COLOR = "#fde0c5"
LABEL_COLOR = "#d9f0d3"
PAD_COLOR = "#eeeeee"


#: the style of :func:`~attn_book.figures.draw.arrow` in the input diagrams (here and the tagger's): thin, grey,
#: from point to point (no shrinking)
FLOW_ARROW = {"color": "0.35", "linewidth": 1.0, "mutation_scale": 10, "shrinkA": 0, "shrinkB": 0}


def draw_sequence_task(ax, inputs, outputs, links, *, title=None, model="model", spacing=1.3):
    """Inputs in a row at the bottom, a model box across the middle, outputs on top.

    links: list of (input index or None, output index): an arrow from the model above input i to
    output j; ``None`` means the arrow starts from the model's centre.  Returns the artists.
    """
    n_in, n_out = len(inputs), len(outputs)
    width = max(n_in, n_out) * spacing
    xs_in = (np.arange(n_in) - (n_in - 1) / 2) * spacing
    xs_out = (np.arange(n_out) - (n_out - 1) / 2) * spacing
    boxes = [box(ax, x, 0, t, WORD_COLOR) for x, t in zip(xs_in, inputs, strict=True)]
    model_box = box(ax, 0, 1.5, model, FCN_COLOR, w=width, h=0.6)
    outs = [box(ax, x, 3.0, t, LABEL_COLOR) for x, t in zip(xs_out, outputs, strict=True)]
    arrows = [arrow(ax, (x, 0.27), (x, 1.18), **FLOW_ARROW) for x in xs_in]
    for i, j in links:
        x0 = 0.0 if i is None else xs_in[i]
        arrows.append(arrow(ax, (x0, 1.82), (xs_out[j], 2.73), **FLOW_ARROW))
    finish(ax, -width / 2 - 0.3, width / 2 + 0.3, -0.5, 3.5, title)
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


def draw_undirected_graph(ax, positions, edges, labels, *, colors=None, radius=0.28, title=None):
    """Nodes as labelled circles at ``positions`` (n, 2), edges (m, 2) as lines between them (no direction).

    For the directed, weighted graphs of chapter "Graphs" see :func:`attn_book.figures.graphs.draw_graph`.
    Returns ``{"nodes": [...], "edges": [...]}``.
    """
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
    finish(ax, lo[0], hi[0], lo[1], hi[1], title)
    return {"nodes": circles, "edges": lines}
