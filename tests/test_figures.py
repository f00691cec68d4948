"""attn_book.figures: the shared primitives (draw) and the figures of chapters Relevance and Step by step
produce the right artists, shapes and numbers."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import Rectangle

from attn_book.figures import draw, relevance, step_by_step
from attn_ref.attention import attend_one
from attn_ref.scores import additive_score


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


@pytest.mark.parametrize("r,m,c", [(2, 3, 4), (1, 1, 1), (5, 2, 3)])
def test_draw_matmul_cells_and_dimensions(ax, r, m, c):
    rng = np.random.default_rng(r * 100 + m * 10 + c)
    L, R = rng.normal(size=(r, m)), rng.normal(size=(m, c))
    out = draw.draw_matmul(ax, L, R, L @ R, names=("$W^q$", "$I$", "$Q$"))
    assert [len(cells) for cells in out["cells"]] == [r * m, m * c, r * c]
    assert [t.get_text() for t in out["dims"]] == [f"{r}×{m}", f"{m}×{c}", f"{r}×{c}"]
    assert [t.get_text() for t in out["names"]] == ["$W^q$", "$I$", "$Q$"]
    assert sum(isinstance(p, Rectangle) for p in ax.patches) == r * m + m * c + r * c
    # each cell is the same size and the three matrices do not overlap horizontally
    rights = [max(p.get_x() + p.get_width() for p in cells) for cells in out["cells"]]
    lefts = [min(p.get_x() for p in cells) for cells in out["cells"]]
    assert rights[0] < lefts[1] and rights[1] < lefts[2]


def test_draw_matmul_cell_colours_follow_values(ax):
    L = np.array([[-1.0, 0.0, 1.0]])
    out = draw.draw_matmul(ax, L, np.ones((3, 1)), L @ np.ones((3, 1)))
    faces = [c.get_facecolor() for c in out["cells"][0]]
    assert faces[0] != faces[2]  # -1 and +1 get different shades
    assert faces[1][:3] == pytest.approx((0.97, 0.97, 0.97), abs=0.03)  # 0 is the map's white middle


def test_draw_matmul_rejects_shapes_that_do_not_chain(ax):
    with pytest.raises(ValueError, match=r"\(m, c\)"):
        draw.draw_matmul(ax, np.ones((2, 3)), np.ones((4, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"\(r, c\)"):
        draw.draw_matmul(ax, np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="3 labels"):
        draw.draw_matmul(ax, np.ones((2, 3)), np.ones((3, 2)), np.ones((2, 2)), names=("A", "B"))


@pytest.mark.parametrize("n,blocks", [(4, 1), (4, 2), (1, 1)])
def test_draw_architecture_counts(ax, n, blocks):
    out = relevance.draw_architecture(ax, n=n, n_blocks=blocks)
    assert len(out["blocks"]) == blocks
    assert len(out["vectors"]) == n * (blocks + 1)  # inputs plus each block's outputs
    assert len(out["fcns"]) == n * blocks  # one row of FCNs after every self-attention block
    # self-attention and FCN alternate (the lecture's stack), drawn bottom to top in that order
    assert out["order"] == ["self-attention", "FCN"] * blocks
    block_tops = [b.get_y() for b in out["blocks"]]
    fcn_rows = sorted({f.get_y() for f in out["fcns"]})
    assert len(fcn_rows) == blocks
    for k in range(blocks):  # every FCN row lies above its own block and below the next one
        assert block_tops[k] < fcn_rows[k]
        if k + 1 < blocks:
            assert fcn_rows[k] < block_tops[k + 1]
    framed = [v for v in out["vectors"] if v.get_linewidth() > 2]
    assert len(framed) == n * blocks  # the outputs that "consider the whole sequence"
    with pytest.raises(ValueError):
        relevance.draw_architecture(ax, n=0)


def test_draw_dot_product_value_and_cells(ax):
    rng = np.random.default_rng(0)
    a1, a2 = rng.normal(size=3), rng.normal(size=3)
    Wq, Wk = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    out = relevance.draw_dot_product(ax, a1, a2, Wq, Wk)
    assert out["alpha"] == pytest.approx(float(np.dot(Wq @ a1, Wk @ a2)), abs=1e-12)
    assert len(out["cells"]) == 3 + 3 + 2 + 2 + 2  # a^1, a^2, q, k, q*k


def test_draw_additive_matches_the_formula(ax):
    rng = np.random.default_rng(1)
    a1, a2 = rng.normal(size=3), rng.normal(size=3)
    Wq, Wk, w = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=4)
    out = relevance.draw_additive(ax, a1, a2, Wq, Wk, w)
    # Bahdanau et al. (2015), written out here: w^T tanh(W_q a1 + W_k a2)
    assert out["alpha"] == pytest.approx(float(w @ np.tanh(Wq @ a1 + Wk @ a2)), abs=1e-12)
    assert out["alpha"] == pytest.approx(float(additive_score(a1, a2, Wq, Wk, w)), abs=1e-12)
    assert len(out["cells"]) == 3 + 3 + 4 * 4


def test_draw_weighted_sum_ends_at_b(ax):
    rng = np.random.default_rng(2)
    V, w = rng.normal(size=(2, 5)), rng.dirichlet(np.ones(5))
    out = step_by_step.draw_weighted_sum(ax, w, V)
    np.testing.assert_allclose(out["b_value"], V @ w, atol=1e-12)
    assert len(out["v"]) == 5 and len(out["scaled"]) == 5
    with pytest.raises(ValueError, match=r"\(2, n\)"):
        step_by_step.draw_weighted_sum(ax, w, rng.normal(size=(3, 5)))


def test_draw_query_panel_returns_attend_one():
    rng = np.random.default_rng(3)
    a, Wq, Wk, Wv = rng.normal(size=(3, 4)), rng.normal(size=(2, 3)), rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    fig, axes = plt.subplots(1, 3)
    step = step_by_step.draw_query_panel(axes, a, 2, Wq, Wk, Wv)
    ref = attend_one(a, 2, Wq, Wk, Wv, scale=1.0)
    np.testing.assert_allclose(step.b, ref.b, atol=1e-12)
    heights = [p.get_height() for p in axes[1].patches]
    np.testing.assert_allclose(heights, ref.alpha_prime, atol=1e-12)
    plt.close(fig)


def test_lecture_example_scores_by_hand():
    from attn_ref.examples import lecture_example

    a, W_q, W_k, W_v = lecture_example()
    assert a.shape == (3, 4) and W_q.shape == W_k.shape == W_v.shape == (2, 3)
    # q^1 = W^q a^1 = (0, 1); k^j = W^k a^j; alpha_{1,j} = q^1 . k^j, worked out by hand
    np.testing.assert_array_equal(W_q @ a[:, 0], [0.0, 1.0])
    np.testing.assert_array_equal(attend_one(a, 0, W_q, W_k, W_v, scale=1.0).alpha, [1.0, 2.0, 0.0, -1.0])
    a[0, 0] = 99.0  # a fresh copy each call
    assert lecture_example().a[0, 0] == 1.0


def test_draw_relevance_arcs(ax):
    scores = np.array([1.0, -3.0, 0.5, 2.0])
    out = relevance.draw_relevance_arcs(ax, scores, to=2)
    assert len(out["vectors"]) == 4 and len(out["arcs"]) == 4
    widths = [a.get_linewidth() for a in out["arcs"]]
    assert int(np.argmax(widths)) == 1  # the largest |score| gets the thickest arc
    labels = [t.get_text() for t in ax.texts if "alpha" in t.get_text()]
    assert "$\\alpha_{3,2} = -3.00$" in labels and len(labels) == 4
    with pytest.raises(ValueError, match="to: expected an index"):
        relevance.draw_relevance_arcs(ax, scores, to=4)


def test_arrow_one_argument_order_and_its_text(ax):
    a = draw.arrow(ax, (0, 0), (2, 1), "label", text_offset=0.5, fontsize=7, text_color="red")
    assert a in ax.patches and a.get_linewidth() == 1.2 and a.get_mutation_scale() == 12
    (t,) = ax.texts
    assert t.get_text() == "label" and t.get_position() == (1.0, 1.0) and t.get_fontsize() == 7
    plain = draw.arrow(ax, (0, 0), (1, 0), color="0.35", linewidth=None, shrinkA=0, linestyle="--")
    assert len(ax.texts) == 1  # no text, no label drawn
    assert plain.get_linewidth() == matplotlib.rcParams["patch.linewidth"] and plain.get_linestyle() == "--"


def test_box_is_centred_and_dashed_on_request(ax):
    b = draw.box(ax, 1.0, 2.0, "FCN", "#ffffff", w=2.0, h=1.0, dashed=True)
    assert (b.get_x(), b.get_y(), b.get_width(), b.get_height()) == (0.0, 1.5, 2.0, 1.0)
    assert b.get_linestyle() == "--" and ax.texts[0].get_position() == (1.0, 2.0)


def test_heatmap_numbers_and_labels(ax):
    values = np.array([[0.1, 0.9], [0.6, 0.4]])
    im = draw.heatmap(ax, values, xlabels=["a", "b"], colorbar=False)
    assert im.get_cmap().name == draw.ATTENTION_CMAP
    assert [t.get_text() for t in ax.texts] == ["0.10", "0.90", "0.60", "0.40"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
