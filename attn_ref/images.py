"""An image as a set of vectors (像素向量), so that self-attention can read it.

Lecture: 应用 — each pixel of an H x W RGB image is a 1 x 1 x 3 vector, so the image is a
set of H * W vectors of dimension 3.  Vision Transformers (Dosovitskiy et al. 2021) cut the
image into p x p patches instead and flatten each into a vector of dimension p * p * C.

Order conventions (those of ``einops.rearrange(img, "(h p1) (w p2) c -> (h w) (p1 p2 c)")``):
pixels and patches are numbered row by row (row-major), channels stay last.
"""

from __future__ import annotations

import numpy as np


def _check_image(img, name: str = "img") -> np.ndarray:
    img = np.asarray(img)
    if img.ndim != 3:
        raise ValueError(f"{name}: expected shape (H, W, C) with channels last, got {img.shape} ({img.ndim}-D)")
    return img


def image_to_vectors(img) -> np.ndarray:
    """(H, W, C) -> (H * W, C): row ``r * W + c`` is the pixel at row r, column c (channels kept last)."""
    img = _check_image(img)
    H, W, C = img.shape
    return img.reshape(H * W, C)  # (H*W, C)


def vectors_to_image(vectors, H: int, W: int) -> np.ndarray:
    """(H * W, C) -> (H, W, C): the inverse of :func:`image_to_vectors`."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or vectors.shape[0] != H * W:
        raise ValueError(f"vectors: expected shape (H*W={H * W}, C), got {vectors.shape}")
    return vectors.reshape(H, W, vectors.shape[1])  # (H, W, C)


def patchify(img, p: int) -> np.ndarray:
    """(H, W, C) -> (H/p * W/p, p * p * C): p x p patches, numbered row by row, each flattened (p1, p2, c).

    Patch ``P = a * (W/p) + b`` covers rows a*p:(a+1)*p and columns b*p:(b+1)*p;
    its vector lists the pixels row by row, each pixel's C channels together.
    """
    img = _check_image(img)
    H, W, C = img.shape
    if p < 1 or H % p or W % p:
        raise ValueError(f"p: expected a patch size dividing H={H} and W={W}, got {p} (image shape {img.shape})")
    x = img.reshape(H // p, p, W // p, p, C)  # (h, p1, w, p2, C)
    x = x.transpose(0, 2, 1, 3, 4)  # (h, w, p1, p2, C)
    return x.reshape((H // p) * (W // p), p * p * C)  # (h*w, p*p*C)


def unpatchify(patches, p: int, H: int, W: int) -> np.ndarray:
    """(H/p * W/p, p * p * C) -> (H, W, C): the inverse of :func:`patchify`."""
    patches = np.asarray(patches)
    if H % p or W % p or patches.ndim != 2 or patches.shape[0] != (H // p) * (W // p) or patches.shape[1] % (p * p):
        raise ValueError(f"patches: expected shape ({(H // p) * (W // p)}, {p}*{p}*C) for a {H}x{W} image "
                         f"and p={p}, got {patches.shape}")
    C = patches.shape[1] // (p * p)
    x = patches.reshape(H // p, W // p, p, p, C)  # (h, w, p1, p2, C)
    return x.transpose(0, 2, 1, 3, 4).reshape(H, W, C)  # (h, p1, w, p2, C) -> (H, W, C)
