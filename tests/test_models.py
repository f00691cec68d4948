"""attn_book.models: the small torch models against torch's own modules, the one training loop and accuracy."""

import math

import numpy as np
import pytest
import torch

from attn_book.models import (
    AttentionClassifier,
    GaussianAttentionClassifier,
    RNNClassifier,
    SelfAttention,
    TinyAttentionModel,
    TinyViT,
    accuracy,
    attention_spread,
    n_parameters,
    random_batches,
    train,
    train_classifier,
    train_order_model,
    train_sequence_model,
    train_with_early_stopping,
)
from attn_book.toy_data import first_token_batch
from attn_ref.positional import sinusoidal_positional_encoding

torch.set_num_threads(1)


def test_self_attention_module_equals_torch_multihead():
    torch.manual_seed(0)
    d, h = 8, 2
    mine = SelfAttention(d, h)
    ref = torch.nn.MultiheadAttention(d, h, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(mine.qkv.weight)
        ref.in_proj_bias.copy_(mine.qkv.bias)
        ref.out_proj.weight.copy_(mine.out.weight)
        ref.out_proj.bias.copy_(mine.out.bias)
        x = torch.randn(3, 5, d)
        np.testing.assert_allclose(mine(x).numpy(), ref(x, x, x)[0].numpy(), rtol=1e-5, atol=1e-5)


def test_vit_patches_row_major():
    x = torch.arange(64.0).reshape(1, 1, 8, 8)
    p = TinyViT(patch=2).patches(x)  # (1, 16, 4)
    ref = torch.nn.functional.unfold(x, 2, stride=2).transpose(1, 2)  # (1, 16, 4)
    assert torch.equal(p, ref)


def test_toy_models_have_similar_size():
    a, r = n_parameters(AttentionClassifier(8, 40)), n_parameters(RNNClassifier(8))
    assert abs(a - r) / r < 0.2


def test_gaussian_attention_heads_peak_at_their_centre():
    """Each quadratic-encoding head puts its largest weight at query + Delta, sharper as gamma grows."""
    torch.manual_seed(0)
    model = GaussianAttentionClassifier(n_heads=2, side=8, gamma0=5.0)
    with torch.no_grad():
        model.centre.copy_(torch.tensor([[0.0, 0.0], [1.0, -2.0]]))
        w = model.weights()  # (2, 64, 64)
    assert w.shape == (2, 64, 64)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 64))
    query = 3 * 8 + 4  # pixel (3, 4)
    assert int(w[0, query].argmax()) == query
    assert int(w[1, query].argmax()) == (3 + 1) * 8 + (4 - 2)
    mean_dist, in_3x3 = attention_spread(w, side=8)
    assert in_3x3[0] > 0.99 and mean_dist[0] < 0.1  # sharp head on the query itself
    assert in_3x3[1] < in_3x3[0]  # the head two columns away has less weight in the 3x3
    out = model(torch.rand(5, 1, 8, 8))
    assert out.shape == (5, 10)


def test_attention_spread_of_uniform_and_one_hot_weights():
    """Uniform weights: every pixel alike; one-hot on the query: distance 0, all in the 3x3."""
    uniform = np.full((1, 16, 16), 1 / 16)
    one_hot = np.eye(16)[None]
    d_u, near_u = attention_spread(uniform, side=4)
    d_o, near_o = attention_spread(one_hot, side=4)
    assert d_o[0] == 0 and near_o[0] == 1
    # 4x4 grid: a corner pixel has 4 of 16 in its 3x3, an edge pixel 6, an inner pixel 9
    assert math.isclose(near_u[0], (4 * 4 + 8 * 6 + 4 * 9) / 16 / 16, rel_tol=1e-6)
    assert d_u[0] > 1


def test_accuracy_ignores_unlabelled_positions_and_takes_the_logits_of_a_tuple():
    class Fixed(torch.nn.Module):
        def forward(self, x):
            return x, "weights"  # (logits, attention weights), as TinyAttentionModel

    logits = torch.tensor([[[0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]])  # argmax 1, 0, 0
    target = torch.tensor([[-100, 0, 1]])
    assert accuracy(Fixed(), logits, target) == 0.5
    assert accuracy(torch.nn.Identity(), logits[0], torch.tensor([1, 0, 0])) == 1.0


def test_train_evaluates_at_zero_every_k_steps_and_at_the_end():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    X, y = torch.randn(20, 3), torch.randint(0, 2, (20,))
    calls = []
    at, values = train(model, lambda: (X, y), steps=7, lr=0.1, every=3,
                       evaluate=lambda m: calls.append(1) or len(calls))
    assert at == [0, 3, 6, 7] and values == [1, 2, 3, 4]
    assert train(model, lambda: (X, y), steps=2, lr=0.1) == ([], [])


def test_train_clips_the_gradient_norm_before_each_step(monkeypatch):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    X, y = 100 * torch.randn(32, 4), torch.randint(0, 3, (32,))
    clip = torch.nn.utils.clip_grad_norm_
    norms = []

    def spy(params, max_norm):
        clip(params, max_norm)
        norms.append(float(torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in model.parameters()]))))

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", spy)
    train(model, lambda: (X, y), steps=3, lr=0.1, clip=0.5)
    assert len(norms) == 3 and max(norms) <= 0.5 + 1e-5
    train(model, lambda: (X, y), steps=3, lr=0.1)  # no clip: not called
    assert len(norms) == 3


def test_random_batches_are_seeded_rows_of_the_data():
    X, y = torch.arange(10.0)[:, None], torch.arange(10)
    a, b = random_batches(X, y, 4, seed=1), random_batches(X, y, 4, seed=1)
    xa, ya = a()
    xb, yb = b()
    assert torch.equal(xa, xb) and torch.equal(ya, yb) and torch.equal(xa[:, 0].long(), ya)
    assert random_batches(X, y, 64, seed=0)()[0].shape == (10, 1)  # never more rows than the data


def test_train_classifier_fits_a_separable_set():
    torch.manual_seed(0)
    X = torch.randn(200, 2)
    y = (X[:, 0] > 0).long()
    model = train_classifier(torch.nn.Linear(2, 2), X, y, steps=100, batch_size=32, lr=0.05)
    assert accuracy(model, X, y) > 0.95


def test_early_stopping_returns_the_best_round_and_stops_after_patience_rounds(monkeypatch):
    import attn_book.models.training as training

    X, y = torch.randn(60, 2), torch.zeros(60, dtype=torch.long)
    val_acc = iter([0.5, 0.8, 0.7, 0.8, 0.6, 0.9])  # best after round 2; rounds 3-5 bring nothing new
    rounds = []
    monkeypatch.setattr(training, "train_classifier", lambda model, *a, **k: rounds.append(model.weight.clone())
                        or model.weight.data.add_(1.0))
    monkeypatch.setattr(training, "accuracy", lambda *a: next(val_acc))
    model = train_with_early_stopping(lambda: torch.nn.Linear(2, 2), X, y, X, y, seed=0, patience=3)
    assert len(rounds) == 5  # stopped when three rounds in a row did not beat round 2
    torch.testing.assert_close(model.weight, rounds[1] + 1.0)  # the weights after round 2


def test_attention_beats_rnn_on_the_first_token_at_distance_40():
    def make_batch(rng, batch_size):
        return first_token_batch(rng, batch_size, n=40, vocab=8)

    torch.manual_seed(0)
    steps, acc = train_sequence_model(AttentionClassifier(8, 40), make_batch, steps=90, lr=1e-2, eval_every=30)
    assert steps.tolist() == [0, 30, 60, 90] and acc[-1] > 0.95


def test_previous_token_needs_an_encoding():
    results = {e: train_order_model(e, steps=80, every=40) for e in ("none", "sinusoidal", "learned")}
    assert results["sinusoidal"].final_accuracy > 0.95
    assert results["learned"].final_accuracy > 0.95
    assert results["none"].final_accuracy < 0.6
    assert results["none"].steps.tolist() == [0, 40, 80]


def test_without_encoding_the_order_model_is_permutation_equivariant():
    torch.manual_seed(0)
    model = TinyAttentionModel(vocab=7, n=6, d_model=8, encoding="none").eval()
    tokens = torch.randint(0, 7, (3, 6), generator=torch.Generator().manual_seed(1))
    perm = torch.tensor([3, 0, 5, 1, 2, 4])
    with torch.no_grad():
        out, _ = model(tokens)
        out_perm, _ = model(tokens[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=1e-5)
    model = TinyAttentionModel(vocab=7, n=6, d_model=8, encoding="sinusoidal").eval()
    with torch.no_grad():
        out, _ = model(tokens)
        out_perm, _ = model(tokens[:, perm])
    assert (out_perm - out[:, perm]).abs().max() > 1e-3
    np.testing.assert_allclose(model.positions(6).numpy(), sinusoidal_positional_encoding(6, 8), atol=1e-6)
    with pytest.raises(ValueError, match="encoding"):
        TinyAttentionModel(vocab=5, n=10, d_model=6, encoding="rotary")

def test_sinusoidal_buffer_is_the_papers_table():
    model = TinyAttentionModel(vocab=5, n=10, d_model=6, encoding="sinusoidal")
    np.testing.assert_allclose(model.positions(10).numpy(), sinusoidal_positional_encoding(10, 6), atol=1e-6)
    with pytest.raises(ValueError, match="encoding"):
        TinyAttentionModel(vocab=5, n=10, d_model=6, encoding="rotary")
