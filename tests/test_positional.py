"""The sinusoidal encoding against Vaswani et al. (2017), sec. 3.5, written out term by term."""

import math

import numpy as np
import pytest

import attn_ref as ar


@pytest.mark.parametrize("n, d", [(1, 2), (50, 16), (7, 5)])
def test_equals_paper_formula(n, d):
    pe = ar.sinusoidal_positional_encoding(n, d)
    assert pe.shape == (n, d)
    for pos in range(n):
        for j in range(d):
            i = j // 2  # PE(pos, 2i) = sin(pos / 10000^(2i/d)); PE(pos, 2i+1) = cos(...)
            angle = pos / 10000 ** (2 * i / d)
            expected = math.sin(angle) if j % 2 == 0 else math.cos(angle)
            assert pe[pos, j] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("k", [0, 1, 5, 37])
def test_shift_is_a_linear_map_depending_on_k_only(k):
    d = 32
    pe = ar.sinusoidal_positional_encoding(200, d)
    M = ar.shift_matrix(k, d)
    for pos in (0, 3, 100, 150):
        np.testing.assert_allclose(M @ pe[pos], pe[pos + k], atol=1e-10)
    np.testing.assert_allclose(M @ M.T, np.eye(d), atol=1e-12)  # a rotation


def test_dot_product_depends_on_offset_only():
    pe = ar.sinusoidal_positional_encoding(300, 64)
    for k in (1, 10, 50):
        dots = [pe[p] @ pe[p + k] for p in range(0, 200, 17)]
        np.testing.assert_allclose(dots, dots[0], atol=1e-9)


def test_bad_arguments():
    with pytest.raises(ValueError):
        ar.sinusoidal_positional_encoding(4, 0)
    with pytest.raises(ValueError, match="even"):
        ar.shift_matrix(1, 5)
