"""attn_book.figures of chapters Vector sets, Sequence labeling, Multi-head, RNN, Graphs and Transformer:
the drawings have the artists they promise (one box per word, 2w+1 arrows per FCN, one arrow per edge ...)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attn_book.figures.graphs import draw_graph
from attn_book.figures.multi_head import draw_split_merge, split_merge_example
from attn_book.figures.rnn import draw_dependency_graph, draw_path_lengths
from attn_book.figures.sequence_labeling import draw_tagger
from attn_book.figures.transformer import draw_encoder_block
from attn_book.figures.vector_sets import draw_output_types, draw_undirected_graph
from attn_ref.graph import gat_layer, init_gat_params
from attn_ref.multihead import merge_heads, split_heads


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


def test_draw_undirected_graph_counts():
    positions = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    fig, ax = plt.subplots()
    art = draw_undirected_graph(ax, positions, edges, ["C0", "C1", "O2", "H3"])
    assert len(art["nodes"]) == 4 and len(art["edges"]) == 3
    np.testing.assert_allclose(art["edges"][0].get_xydata(), positions[[0, 1]])
    assert [t.get_text() for t in ax.texts] == ["C0", "C1", "O2", "H3"]
    plt.close(fig)


# node 5 is isolated; edges are directed (0->1 but not 1->0); 3->3 is an explicit self-loop
EDGES = np.array([[0, 1, 2, 3, 0, 2, 4, 3],
                  [1, 2, 0, 0, 3, 3, 2, 3]])
N = 6


def test_draw_graph_draws_one_arrow_per_edge_with_width_by_weight():
    params = init_gat_params(5, 3, rng=np.random.default_rng(0))
    _, weights = gat_layer(np.random.default_rng(1).standard_normal((N, 5)), EDGES, params)
    fig, ax = plt.subplots()
    arrows = draw_graph(ax, EDGES, N, weights=weights[0])
    non_loops = [(s, t) for s, t in EDGES.T if s != t]
    assert len(arrows) == len(non_loops)
    widths = np.array([a.get_linewidth() for a in arrows])
    expected = np.array([weights[0, t, s] for s, t in non_loops])
    assert np.argmax(widths) == np.argmax(expected) and np.argmin(widths) == np.argmin(expected)
    plt.close(fig)


def test_split_merge_labels_are_in_the_books_notation():
    fig, ax = plt.subplots()
    draw_split_merge(ax, n=4, d_model=8, n_heads=2)
    texts = [t.get_text() for t in ax.texts]
    assert "$W^O$" in texts and "$q^{i,2}$ $(n, d_k)$" in texts
    assert not any("W_o" in t or "d_h" in t or "d_{model}" in t for t in texts)
    plt.close(fig)


def test_encoder_block_labels_are_in_the_chapters_notation():
    fig, ax = plt.subplots()
    draw_encoder_block(ax)
    texts = [t.get_text() for t in ax.texts]
    assert any(t.startswith("input $X$") for t in texts) and "output $(n, d_{\\mathrm{model}})$" in texts
    plt.close(fig)


@pytest.mark.parametrize("kind, k, length", [("recurrent", 3, 8), ("attention", 3, 1)])
def test_dependency_graph_titles_the_path_length(kind, k, length):
    fig, ax = plt.subplots()
    draw_dependency_graph(ax, kind, 8, k)
    assert ax.get_title().endswith(f"path length {length}")
    red = [a for a in ax.texts if a.arrow_patch.get_linewidth() == 2]  # the path's arrows
    assert len(red) == length
    plt.close(fig)


@pytest.mark.parametrize("kappa", [2, 3])
def test_path_length_panels_use_one_kernel_size_for_both_convolutions(kappa):
    """rnn's figure and its table share the kernel size kappa: both convolution panels are titled
    with it and their red paths have path_length's number of edges for that kappa."""
    from attn_ref.recurrent import path_length

    fig, axes = plt.subplots(2, 2)
    draw_path_lengths(axes.ravel(), 8, kappa)
    for ax, kind in zip(axes.ravel()[2:], ("conv", "dilated_conv"), strict=True):
        length = path_length(kind, 8, kappa)
        assert ax.get_title().endswith(f", $\\kappa = {kappa}$: path length {length}")
        assert len([a for a in ax.texts if a.arrow_patch.get_linewidth() == 2]) == length
    plt.close(fig)


@pytest.mark.parametrize("n_heads", [1, 2, 4])
def test_split_merge_drawing_has_every_cell(n_heads):
    fig, ax = plt.subplots()
    drawn = draw_split_merge(ax, n=3, d_model=8, n_heads=n_heads)
    # Q, the h heads, the h outputs, the concatenation, the W_o output: five times n * d_model cells
    assert len(drawn["cells"]) == 5 * 3 * 8
    assert len(drawn["arrows"]) == 3 * n_heads + 1
    plt.close(fig)
    with pytest.raises(ValueError, match="divisor"):
        draw_split_merge(plt.subplots()[1], d_model=8, n_heads=3)
    plt.close("all")


def test_split_merge_example_matches_split_heads():
    labels = split_merge_example(3, 8, 4).astype(float)  # column c coloured by its head
    heads = split_heads(labels, 4)  # (4, 3, 2)
    for h in range(4):
        assert (heads[h] == h).all()
    np.testing.assert_array_equal(merge_heads(heads), labels)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_block_diagram(norm_first):
    fig, ax = plt.subplots()
    drawn = draw_encoder_block(ax, norm_first=norm_first)
    assert len(drawn["boxes"]) == 6 and len(drawn["residuals"]) == 2
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("Layer norm") == 2 and texts.count("+") == 2
    plt.close(fig)
