"""attn_ref.input_diagrams: the drawings have one box per word, FCN and label, and 2w+1 arrows per FCN."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attn_ref.data import toy_molecule
from attn_ref.input_diagrams import draw_graph, draw_output_types, draw_tagger


@pytest.mark.parametrize("w", [0, 1, 2])
def test_draw_tagger_counts(w):
    fig, ax = plt.subplots()
    art = draw_tagger(ax, ["I", "saw", "a", "saw"], ["PRON", "VERB", "DET", "NOUN"], window=w, highlight=1)
    assert len(art["words"]) == 4 and len(art["fcn"]) == 4 and len(art["outputs"]) == 4
    assert len(art["pads"]) == 2 * w
    assert len(art["arrows"]) == 4 * (2 * w + 1) + 4
    plt.close(fig)


def test_draw_output_types_counts():
    fig, axes = plt.subplots(1, 3)
    art = draw_output_types(axes)
    assert len(art["labeling"]["outputs"]) == len(art["labeling"]["inputs"]) == 4
    assert len(art["sentiment"]["outputs"]) == 1
    assert len(art["seq2seq"]["outputs"]) != len(art["seq2seq"]["inputs"])
    plt.close(fig)


def test_draw_graph_counts():
    m = toy_molecule()
    fig, ax = plt.subplots()
    art = draw_graph(ax, m["positions"], m["edges"], m["atoms"])
    assert len(art["nodes"]) == 9 and len(art["edges"]) == 8
    np.testing.assert_allclose(art["edges"][0].get_xydata(), m["positions"][[0, 1]])
    plt.close(fig)
