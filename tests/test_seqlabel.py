"""attn_ref.seqlabel: window features vs a hand example and torch's F.pad + unfold, the FCN vs the trained
taggers of attn_book.models (nn.Sequential)."""

import numpy as np
import pytest
import torch

from attn_book.models import make_tagger, predict_tags, tagger_weights, train_tagger
from attn_book.toy_data import TAGS, encode, tagging_corpus, tagging_vocab
from attn_ref.seqlabel import fcn_tag_logits, n_tagger_params, token_dataset, window_features, windowed_logits


def test_window_features_hand_example():
    X = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    F = window_features(X, 1)
    expected = np.array([[0, 0, 1, 10, 2, 20],
                         [1, 10, 2, 20, 3, 30],
                         [2, 20, 3, 30, 0, 0]], dtype=float)
    np.testing.assert_array_equal(F, expected)
    np.testing.assert_array_equal(window_features(X, 0), X)
    F2 = window_features(X, 1, pad=-1.0)
    assert F2[0, :2].tolist() == [-1.0, -1.0]


@pytest.mark.parametrize("n,d,w", [(1, 3, 2), (5, 4, 1), (7, 2, 3), (3, 5, 6)])
def test_window_features_matches_torch_pad_unfold(n, d, w):
    X = np.random.default_rng(n * 10 + w).standard_normal((2, n, d))
    t = torch.as_tensor(X)
    padded = torch.nn.functional.pad(t, (0, 0, w, w))  # (2, n + 2w, d)
    windows = padded.unfold(1, 2 * w + 1, 1)  # (2, n, d, 2w+1)
    expected = windows.transpose(-1, -2).reshape(2, n, (2 * w + 1) * d).numpy()
    np.testing.assert_allclose(window_features(X, w), expected, atol=1e-12)


def test_window_features_matches_functional_unfold_2d():
    n, d, w = 6, 3, 2
    X = np.random.default_rng(0).standard_normal((n, d))
    img = torch.as_tensor(X.T)[None, :, :, None]  # (1, d, n, 1): positions along the height
    cols = torch.nn.functional.unfold(img, kernel_size=(2 * w + 1, 1), padding=(w, 0))  # (1, d (2w+1), n)
    expected = cols[0].reshape(d, 2 * w + 1, n).permute(2, 1, 0).reshape(n, -1).numpy()
    np.testing.assert_allclose(window_features(X, w), expected, atol=1e-12)


def test_window_features_rejects_bad_input():
    with pytest.raises(ValueError, match=r"\(\.\.\., n, d\)"):
        window_features(np.zeros(3), 1)
    with pytest.raises(ValueError, match="radius"):
        window_features(np.zeros((3, 2)), -1)


def test_fcn_matches_torch_sequential():
    model = make_tagger(6, 4, hidden=5, seed=3)
    X = np.random.default_rng(1).standard_normal((3, 7, 6))
    expected = model(torch.as_tensor(X, dtype=torch.float32)).detach().numpy()
    np.testing.assert_allclose(fcn_tag_logits(X, *tagger_weights(model)), expected, atol=1e-5)
    assert sum(p.numel() for p in model.parameters()) == n_tagger_params(6, 0, 5, 4)


def test_windowed_logits_and_param_count():
    d, w, h, k = 4, 2, 3, 5
    model = make_tagger((2 * w + 1) * d, k, hidden=h, seed=0)
    assert sum(p.numel() for p in model.parameters()) == n_tagger_params(d, w, h, k)
    X = np.random.default_rng(2).standard_normal((6, d))
    expected = model(torch.as_tensor(window_features(X, w), dtype=torch.float32)).detach().numpy()
    np.testing.assert_allclose(windowed_logits(X, w, *tagger_weights(model)), expected, atol=1e-5)
    with pytest.raises(ValueError, match="W1's columns"):
        windowed_logits(X, w + 1, *tagger_weights(model))


def test_per_token_fcn_confuses_the_two_saws_and_a_window_fixes_it():
    torch.set_num_threads(1)
    vocab = tagging_vocab()
    corpus = tagging_corpus(300, seed=0)
    sents = encode([s for s, _ in corpus], vocab)
    tags = [np.array([TAGS.index(t) for t in ts]) for _, ts in corpus]
    E = np.eye(len(vocab))
    preds = {}
    for w in (0, 1):
        X, y = token_dataset(sents, E, tags, w)
        model, curves = train_tagger(X, y, n_tags=len(TAGS), steps=150, seed=0)
        assert curves["train_loss"][-1] < curves["train_loss"][0]
        assert curves["step"] == list(range(0, 150, 10)) + [150] and curves["val_acc"] == []
        preds[w] = predict_tags(model, token_dataset(sents[:1], E, tags[:1], w)[0])
    assert preds[0][1] == preds[0][3]  # identical inputs, identical outputs
    assert [TAGS[i] for i in preds[1]] == ["PRON", "VERB", "DET", "NOUN"]
