"""The helpers that ps07, ps08 and ps09 give in their set-up cells (issue 29: a tested softmax instead of a task
that rewrites it) compute what attn_ref computes, on random inputs, large scores and fully masked rows."""

import numpy as np
import pytest

from attn_ref.attention import self_attention
from attn_ref.conv import kernel_offsets
from attn_ref.softmax import softmax
from solutions import cells


def _setup(assignment: str) -> dict:
    namespace: dict = {}
    exec(cells(assignment)["setup"], namespace)  # noqa: S102 - our own notebook
    return namespace


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_ps07_softmax_and_self_attention_are_attn_refs(scale):
    ns = _setup("ps07_positional")
    rng = np.random.default_rng(0)
    scores = scale * rng.standard_normal((5, 7))
    np.testing.assert_allclose(ns["softmax"](scores), softmax(scores), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ns["softmax"](scores, axis=0), softmax(scores, axis=0), rtol=1e-12, atol=1e-15)
    X, W_q, W_k, W_v = (rng.standard_normal(s) for s in [(6, 4), (3, 4), (3, 4), (2, 4)])
    np.testing.assert_allclose(ns["self_attention"](X, W_q, W_k, W_v), self_attention(X, W_q, W_k, W_v)[0],
                               rtol=1e-12)


def test_ps08_masked_softmax_is_attn_refs_with_empty_rows_and_large_scores():
    masked_softmax = _setup("ps08_speech_images")["masked_softmax"]
    rng = np.random.default_rng(1)
    scores = 1000.0 * rng.standard_normal((6, 6))
    mask = rng.random((6, 6)) < 0.5
    mask[2] = False  # a query that may attend to nothing: zeros, not NaN
    expected = softmax(np.where(mask, scores, -np.inf))
    got = masked_softmax(scores, mask)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    assert not np.isnan(got).any() and np.all(got[2] == 0)


@pytest.mark.parametrize("kappa", [1, 3, 5])
def test_ps09_kernel_offsets_are_attn_refs(kappa):
    np.testing.assert_array_equal(_setup("ps09_cnn")["kernel_offsets"](kappa), kernel_offsets(kappa))


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_ps06_softmax_is_attn_refs_on_a_batch_of_heads(scale):
    scores = scale * np.random.default_rng(2).standard_normal((3, 5, 5))  # (H, n, n)
    np.testing.assert_allclose(_setup("ps06_multi_head")["softmax"](scores), softmax(scores), rtol=1e-12, atol=1e-15)
