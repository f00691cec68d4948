"""attn_ref.softmax: normalised, shift invariant, stable, and defined for fully masked rows."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attn_ref import softmax

finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite),
       st.sampled_from([0, 1, -1]))
def test_sums_to_one_and_in_unit_interval(x, axis):
    p = softmax(x, axis=axis)
    np.testing.assert_allclose(p.sum(axis=axis), 1.0, rtol=1e-10)
    assert np.all((p >= 0) & (p <= 1))


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=st.floats(-50, 50)),
       st.floats(-1e3, 1e3))
def test_shift_invariant(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-10)


def test_matches_torch(rng):
    x = rng.normal(size=(3, 5, 7)) * 10
    for axis in (0, 1, 2):
        np.testing.assert_allclose(softmax(x, axis=axis), torch.softmax(torch.tensor(x), dim=axis).numpy(),
                                   atol=1e-12)


def test_stable_for_huge_scores():
    x = np.array([[1e4, 1e4 - 1.0, -1e4], [1e4, 0.0, 0.0]], dtype=np.float32)
    p = softmax(x)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p[0, :2], [1 / (1 + np.exp(-1.0)), np.exp(-1.0) / (1 + np.exp(-1.0))], rtol=1e-6)
    np.testing.assert_allclose(p[1], [1, 0, 0])


def test_fully_masked_row_is_zero_not_nan():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]])
    p = softmax(x)
    assert not np.isnan(p).any()
    np.testing.assert_array_equal(p[1], 0.0)
    np.testing.assert_allclose(p[0].sum(), 1.0)
    assert p[0, 1] == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_keeps_dtype(dtype):
    assert softmax(np.ones((2, 3), dtype=dtype)).dtype == dtype


def test_rejects_non_numeric():
    with pytest.raises(ValueError, match="numeric"):
        softmax(np.array(["a", "b"]))
