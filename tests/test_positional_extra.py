"""attn_ref.order_task (learned vs sinusoidal vs no positional encoding) and attn_ref.block_diagrams."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from attn_book.figures.multi_head import draw_split_merge, split_merge_example
from attn_book.figures.transformer import draw_encoder_block
from attn_ref.multihead import merge_heads, split_heads
from attn_ref.order_task import TinyAttentionModel, previous_token_batch, train_order_model
from attn_ref.positional import sinusoidal_positional_encoding

torch.set_num_threads(1)


def test_previous_token_targets():
    tokens, target = previous_token_batch(4, 6, 5, torch.Generator().manual_seed(0))
    assert tokens.shape == target.shape == (4, 6)
    assert (target[:, 0] == -100).all()
    assert torch.equal(target[:, 1:], tokens[:, :-1])


def test_without_encoding_the_model_is_permutation_equivariant():
    torch.manual_seed(0)
    model = TinyAttentionModel(vocab=7, n=6, d_model=8, encoding="none").eval()
    tokens = torch.randint(0, 7, (3, 6), generator=torch.Generator().manual_seed(1))
    perm = torch.tensor([3, 0, 5, 1, 2, 4])
    with torch.no_grad():
        out, _ = model(tokens)
        out_perm, _ = model(tokens[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=1e-5)
    # with an encoding, it is not
    model = TinyAttentionModel(vocab=7, n=6, d_model=8, encoding="sinusoidal").eval()
    with torch.no_grad():
        out, _ = model(tokens)
        out_perm, _ = model(tokens[:, perm])
    assert (out_perm - out[:, perm]).abs().max() > 1e-3


def test_sinusoidal_buffer_is_the_papers_table():
    model = TinyAttentionModel(vocab=5, n=10, d_model=6, encoding="sinusoidal")
    np.testing.assert_allclose(model.positions(10).numpy(), sinusoidal_positional_encoding(10, 6), atol=1e-6)
    with pytest.raises(ValueError, match="encoding"):
        TinyAttentionModel(vocab=5, n=10, d_model=6, encoding="rotary")


def test_order_needs_an_encoding():
    results = {e: train_order_model(e, steps=80, every=40) for e in ("none", "sinusoidal", "learned")}
    assert results["sinusoidal"].final_accuracy > 0.95
    assert results["learned"].final_accuracy > 0.95
    assert results["none"].final_accuracy < 0.6
    assert results["none"].steps.tolist() == [0, 40, 80]


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
