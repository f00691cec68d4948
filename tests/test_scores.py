"""Relevance scores: dot product, and Bahdanau et al.'s additive score w^T tanh(W_q a_i + W_k a_j)."""

import numpy as np
import pytest
import torch

import attn_ref as ar


def test_dot_product_matches_definition(rng):
    q, k = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    s = ar.dot_product_score(q, k)
    assert s.shape == (3, 5)
    np.testing.assert_allclose(s, [[sum(a * b for a, b in zip(qi, kj, strict=True)) for kj in k] for qi in q],
                               atol=1e-12)
    assert float(ar.dot_product_score(q[0], k[1])) == pytest.approx(s[0, 1])
    np.testing.assert_allclose(ar.dot_product_score(q[None], k[None])[0], s)


def test_additive_matches_formula_and_torch(rng):
    x_i, x_j = rng.normal(size=(3, 4)), rng.normal(size=(5, 6))  # raw vectors, one per row
    W_q, W_k, w = rng.normal(size=(7, 4)), rng.normal(size=(7, 6)), rng.normal(size=7)
    s = ar.additive_score(x_i, x_j, W_q, W_k, w)
    assert s.shape == (3, 5)
    for i in range(3):
        for j in range(5):
            assert s[i, j] == pytest.approx(w @ np.tanh(W_q @ x_i[i] + W_k @ x_j[j]), abs=1e-12)
    lin_q = torch.nn.Linear(4, 7, bias=False).double()
    lin_k = torch.nn.Linear(6, 7, bias=False).double()
    with torch.no_grad():
        lin_q.weight.copy_(torch.from_numpy(W_q))
        lin_k.weight.copy_(torch.from_numpy(W_k))
        t = torch.tanh(lin_q(torch.from_numpy(x_i))[:, None] + lin_k(torch.from_numpy(x_j))[None]) @ torch.from_numpy(w)
    np.testing.assert_allclose(s, t.numpy(), atol=1e-12)
    assert float(ar.additive_score(x_i[1], x_j[2], W_q, W_k, w)) == pytest.approx(s[1, 2])


def test_shapes_checked(rng):
    with pytest.raises(ValueError, match=r"expected shape \(\.\.\., n_k, d\), got \(3, 5\)"):
        ar.dot_product_score(rng.normal(size=(3, 4)), rng.normal(size=(3, 5)))
    with pytest.raises(ValueError, match=r"W_k's columns"):
        ar.additive_score(rng.normal(size=4), rng.normal(size=4), np.ones((2, 4)), np.ones((2, 3)), np.ones(2))
