"""Figures of chapter "Sequence labeling without attention": the same FCN applied to every word
(``window=0``, the notes' first figure) or to a window of radius r, 2r+1 words (the notes' "交叉" figure).
"""

from __future__ import annotations

import numpy as np

from .draw import arrow, box, finish
from .vector_sets import FCN_COLOR, FLOW_ARROW, LABEL_COLOR, PAD_COLOR, WORD_COLOR


def draw_tagger(ax, words, tags, window: int = 0, *, title=None, highlight=None, pad_label="pad"):
    """The same FCN on every word; with ``window = r`` (the radius r) each FCN also sees r words on each side.

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
            word_boxes.append(box(ax, x, 0, words[i], WORD_COLOR))
        else:
            pad_boxes.append(box(ax, x, 0, pad_label, PAD_COLOR, dashed=True))
    label = "FCN" if window == 0 else f"FCN\n({2 * window + 1} in)"
    fcn = [box(ax, i * 1.4, 1.6, label, FCN_COLOR, h=0.7, fontsize=9) for i in range(n)]
    out = [box(ax, i * 1.4, 3.1, t, LABEL_COLOR, w=1.1) for i, t in enumerate(tags)]
    arrows = []
    for i in range(n):
        for j in range(i - window, i + window + 1):
            colour = "tab:red" if highlight == i else "0.55"
            lw = 1.6 if highlight == i else 0.8
            arrows.append(arrow(ax, (j * 1.4, 0.27), (i * 1.4 + 0.25 * (j - i) / max(window, 1), 1.23),
                                **{**FLOW_ARROW, "color": colour, "linewidth": lw}))
        arrows.append(arrow(ax, (i * 1.4, 1.97), (i * 1.4, 2.83), **FLOW_ARROW))
    finish(ax, xs[0] - 0.8, xs[-1] + 0.8, -0.5, 3.6, title)
    return {"words": word_boxes, "pads": pad_boxes, "fcn": fcn, "outputs": out, "arrows": arrows}

