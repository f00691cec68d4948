"""Images as vectors: attn_ref.images vs torch's unfold and the einops-style reshape written by hand."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_ref.images import image_to_vectors, patchify, unpatchify, vectors_to_image


def test_image_to_vectors_rows_are_pixels_row_major():
    rng = np.random.default_rng(0)
    img = rng.random((5, 10, 3))
    vec = image_to_vectors(img)
    assert vec.shape == (50, 3)
    for r in range(5):
        for c in range(10):
            np.testing.assert_array_equal(vec[r * 10 + c], img[r, c])  # the 1x1x3 vector of pixel (r, c)
    np.testing.assert_array_equal(vectors_to_image(vec, 5, 10), img)


@pytest.mark.parametrize("H,W,C,p", [(8, 12, 3, 4), (4, 4, 1, 2), (6, 9, 2, 3), (5, 5, 3, 1), (4, 8, 3, 4)])
def test_patchify_matches_torch_unfold(H, W, C, p):
    rng = np.random.default_rng(H * W + p)
    img = rng.random((H, W, C))
    patches = patchify(img, p)
    L = (H // p) * (W // p)
    assert patches.shape == (L, p * p * C)
    # F.unfold takes (B, C, H, W) and returns (B, C*p*p, L), channel-major; patches row by row
    t = F.unfold(torch.from_numpy(img).permute(2, 0, 1)[None], kernel_size=p, stride=p)[0]  # (C*p*p, L)
    t = t.reshape(C, p, p, L).permute(3, 1, 2, 0).reshape(L, p * p * C)  # (L, p1*p2*C)
    np.testing.assert_array_equal(patches, t.numpy())
    np.testing.assert_array_equal(unpatchify(patches, p, H, W), img)


def test_patchify_matches_explicit_loops():
    rng = np.random.default_rng(3)
    img = rng.random((6, 8, 2))
    patches = patchify(img, 2)
    idx = 0
    for a in range(3):
        for b in range(4):
            np.testing.assert_array_equal(patches[idx], img[2 * a:2 * a + 2, 2 * b:2 * b + 2, :].reshape(-1))
            idx += 1


def test_bad_inputs_raise_value_error_naming_shapes():
    with pytest.raises(ValueError, match=r"\(5, 10\)"):
        image_to_vectors(np.zeros((5, 10)))
    with pytest.raises(ValueError, match=r"\(6, 9, 3\)"):
        patchify(np.zeros((6, 9, 3)), 2)
