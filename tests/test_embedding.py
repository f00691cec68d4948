"""attn_ref.embedding: one-hot orthogonality, cosine similarity vs torch, the learned embedding."""

import numpy as np
import pytest

from attn_book.toy_data import EMBEDDING_GROUPS, build_vocab, embedding_corpus
from attn_ref.embedding import cooccurrence_matrix, cosine_similarity_matrix, learn_embedding, one_hot, pca_2d, ppmi


def test_one_hot_rows_and_orthogonality():
    X = one_hot(np.array([2, 0, 4]), 5)
    np.testing.assert_array_equal(X, np.eye(5)[[2, 0, 4]])
    C = cosine_similarity_matrix(one_hot(np.arange(6), 6))
    np.testing.assert_allclose(C, np.eye(6), atol=1e-12)


def test_one_hot_matches_torch():
    torch = pytest.importorskip("torch")
    idx = np.random.default_rng(0).integers(0, 7, size=11)
    np.testing.assert_array_equal(one_hot(idx, 9),
                                  torch.nn.functional.one_hot(torch.as_tensor(idx), 9).numpy())


def test_one_hot_rejects_bad_indices():
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        one_hot(np.array([0, 3]), 3)
    with pytest.raises(ValueError, match="integers"):
        one_hot(np.array([0.5]), 3)


def test_cosine_similarity_matches_torch():
    torch = pytest.importorskip("torch")
    X = np.random.default_rng(1).standard_normal((6, 4))
    t = torch.as_tensor(X)
    expected = torch.nn.functional.cosine_similarity(t[:, None, :], t[None, :, :], dim=-1).numpy()
    np.testing.assert_allclose(cosine_similarity_matrix(X), expected, atol=1e-10)


def test_cosine_similarity_zero_row_and_scale_invariance():
    X = np.array([[1.0, 0.0], [0.0, 0.0], [3.0, 3.0]])
    C = cosine_similarity_matrix(X)
    assert C[1].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(C[0, 2], 1 / np.sqrt(2), atol=1e-12)
    np.testing.assert_allclose(cosine_similarity_matrix(X * 7.5), C, atol=1e-12)


def test_cooccurrence_and_ppmi_small_example():
    vocab = {"a": 0, "b": 1, "c": 2}
    C = cooccurrence_matrix([["a", "b", "c"]], vocab, window=1)
    np.testing.assert_array_equal(C, [[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    P = ppmi(C)
    # P(a,b) = 1/4, P(a) = 1/4, P(b) = 1/2: PMI = log 2
    np.testing.assert_allclose(P[0, 1], np.log(2), atol=1e-12)
    assert P[0, 2] == 0 and (P >= 0).all()


def test_learned_embedding_groups_related_words():
    sentences = embedding_corpus(600, seed=0)
    vocab = build_vocab(sentences)
    E = learn_embedding(sentences, vocab, dim=8)
    assert E.shape == (len(vocab), 8)
    idx = {g: [vocab[w] for w in ws] for g, ws in EMBEDDING_GROUPS.items()}
    C = cosine_similarity_matrix(E)
    within = np.mean([C[i, j] for ids in idx.values() for i in ids for j in ids if i != j])
    across = np.mean([C[i, j] for g in idx for h in idx if g != h for i in idx[g] for j in idx[h]])
    assert within > 0.7 and across < 0.3, (within, across)
    np.testing.assert_array_equal(E, learn_embedding(sentences, vocab, dim=8))


def test_pca_2d_matches_sklearn():
    decomposition = pytest.importorskip("sklearn.decomposition")
    X = np.random.default_rng(2).standard_normal((20, 5))
    P = pca_2d(X)
    S = decomposition.PCA(2).fit_transform(X)
    np.testing.assert_allclose(np.abs(P), np.abs(S), atol=1e-10)
