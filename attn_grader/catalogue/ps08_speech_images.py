"""Catalogue of ps08_speech_images: truncated self-attention for speech, images as vectors.

Practises the chapter "Speech and images" (应用): the band mask |i - j| <= w of truncated
self-attention (截断自注意力), attention restricted to it (row layout, 1/sqrt(d_k) scale), an
image (H, W, C) as H*W pixel vectors (像素向量) of dimension C, and p x p patches as vectors.
References: :func:`attn_ref.attention.band_mask`, :func:`attn_ref.truncated.truncated_attention`,
:func:`attn_ref.images.image_to_vectors`, :func:`attn_ref.images.patchify`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import band_mask as _band_mask
from attn_ref.images import image_to_vectors as _image_to_vectors
from attn_ref.images import patchify as _patchify
from attn_ref.truncated import truncated_attention as _truncated

from ..checking.core import Mistake, Task
from . import _stability

ASSIGNMENT = "ps08_speech_images"
EXAMPLE = '''# A tiny 2 x 3 RGB image: pixel (r, c) has the colour (r, c, 10 + r * 3 + c).
img = np.zeros((2, 3, 3))
for r in range(2):
    for c in range(3):
        img[r, c] = [r, c, 10 + r * 3 + c]
'''
#: The notebook's setup cell: the imports and the small example image.
SETUP = "import numpy as np\n\n" + EXAMPLE
#: The tasks that normalise scores with a softmax: each has large-score cases, ``not_stabilised`` and
#: ``shifted_by_min`` (tests/test_stability_cases.py).  truncated_attention takes no mask: every row keeps its
#: diagonal, so no row is fully masked and it has no ``nan_on_masked_row``.
NORMALISING = ("truncated_attention",)


# --- task 1: the band mask ----------------------------------------------------------------------

def _ref_band_mask(n, w):
    return _band_mask(n, w)


def _cases_band_mask(rng):
    return [(6, 2), (1, 0), (5, 0), (4, 7), (int(rng.integers(8, 15)), int(rng.integers(1, 4))), (9, 1)]


BAND_MISTAKES = (
    Mistake("band_off_by_one", "the band used |i - j| < w, one too narrow on each side: a query sees "
            "the keys with |i - j| <= w (w = 0 still lets each position see itself)",
            '''def band_mask(n, w):
    idx = np.arange(n)
    return np.abs(idx[:, None] - idx[None, :]) < w
'''),
    Mistake("mask_inverted", "the mask is inverted: True must mark the pairs that MAY attend (|i - j| <= w)",
            '''def band_mask(n, w):
    idx = np.arange(n)
    return np.abs(idx[:, None] - idx[None, :]) > w
'''),
    Mistake("band_one_sided", "only the past was kept (0 <= i - j <= w); truncated self-attention looks "
            "w frames to each side",
            '''def band_mask(n, w):
    idx = np.arange(n)
    d = idx[:, None] - idx[None, :]
    return (d >= 0) & (d <= w)
'''),
    Mistake("band_too_wide", "the band used |i - j| <= w + 1, one too wide on each side",
            '''def band_mask(n, w):
    idx = np.arange(n)
    return np.abs(idx[:, None] - idx[None, :]) <= w + 1
'''),
)


# --- task 2: truncated self-attention ------------------------------------------------------------

def _ref_truncated(Q, K, V, w):
    return _truncated(Q, K, V, w)[0]


def _cases_truncated(rng):
    cases = []
    for n, d_k, d_v, w in [(7, 4, 3, 2), (1, 2, 2, 0), (6, 3, 5, 0), (5, 2, 3, 9), (12, 8, 4, 3)]:
        cases.append((rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)), rng.standard_normal((n, d_v)), w))
    # large scores: exp overflows unless the row maximum is subtracted
    cases.append((30 * rng.standard_normal((6, 4)), 30 * rng.standard_normal((6, 4)), rng.standard_normal((6, 2)), 1))
    # scores near +1000, a few units apart (a min-shift still works); then near +1000 and -1000: some query's
    # band holds both, since neighbouring positions differ in sign somewhere
    for n, w, wide in [(7, 2, False), (8, 1, True)]:
        Q, K = _stability.query_keys(rng, n, n, 4, wide=wide)
        cases.append((Q, K, _stability.small(rng, (n, 3)), w))
    # each query's band all near -1000 or all near +1000, the masked keys beside it
    Q, K = _stability.query_keys(rng, 7, 7, 4, wide=False, rows_signed=True)
    cases.append((Q, K, _stability.small(rng, (7, 3)), 1))
    return cases


def _trunc_mistake(body: str) -> str:
    return '''def truncated_attention(Q, K, V, w):
    n, d_k = Q.shape
    idx = np.arange(n)
    dist = np.abs(idx[:, None] - idx[None, :])
    scores = Q @ K.T / np.sqrt(d_k)
''' + body


TRUNCATED_MISTAKES = (
    Mistake("mask_ignored", "no mask was applied: every query attended to the whole sequence, "
            "not only to |i - j| <= w",
            _trunc_mistake('''    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("mask_after_softmax", "the weights outside the band were set to zero after the softmax, so the "
            "remaining weights no longer sum to 1; mask the scores (with -inf) before the softmax",
            _trunc_mistake('''    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True) * (dist <= w)
    return weights @ V
''')),
    Mistake("masked_with_zero", "the scores outside the band were set to 0 instead of -inf: a score of 0 "
            "still gets weight exp(0) in the softmax",
            _trunc_mistake('''    scores = np.where(dist <= w, scores, 0.0)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("band_off_by_one", "the band used |i - j| < w, one too narrow on each side: a query sees "
            "the keys with |i - j| <= w",
            _trunc_mistake('''    scores = np.where(dist < w, scores, -np.inf)
    m = np.where(np.isinf(scores).all(axis=1, keepdims=True), 0, scores.max(axis=1, keepdims=True))
    e = np.exp(scores - m)
    s = e.sum(axis=1, keepdims=True)
    return (e / np.where(s == 0, 1, s)) @ V
''')),
    Mistake("no_scaling", "the scores were not divided by sqrt(d_k)",
            _trunc_mistake('''    scores = np.where(dist <= w, scores * np.sqrt(d_k), -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("softmax_over_columns", "the softmax normalised each column (over the queries) instead of each "
            "row: query i's weights over the keys j must sum to 1",
            _trunc_mistake('''    scores = np.where(dist <= w, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=0, keepdims=True))
    return (e / e.sum(axis=0, keepdims=True)) @ V
''')),
    Mistake("not_stabilised", _stability.not_stabilised(),
            _trunc_mistake('''    e = np.exp(np.where(dist <= w, scores, -np.inf))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("shifted_by_min", _stability.shifted_by_min(),
            _trunc_mistake('''    scores = scores - scores.min(axis=1, keepdims=True)
    e = np.exp(np.where(dist <= w, scores, -np.inf))
    return (e / e.sum(axis=1, keepdims=True)) @ V
''')),
    Mistake("masked_by_multiplying", "the scores outside the band were masked by multiplying with the mask "
            "(softmax(scores · mask) · mask, renormalised with a small epsilon): a masked score then counts as 0, "
            "not −∞, so when a query's scores inside the band are all far below 0 the masked zeros take nearly "
            "all the weight and the keys in the band get almost none; set the scores outside the band to −∞ "
            "before the softmax",
            _trunc_mistake('''    band = dist <= w
    s = scores * band
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True) * band
    return (p / (p.sum(axis=1, keepdims=True) + 1e-13)) @ V
''')),
)


# --- task 3: image to pixel vectors --------------------------------------------------------------

def _ref_image_to_vectors(img):
    return _image_to_vectors(np.asarray(img))


def _cases_images(rng):
    return [(rng.random((2, 3, 3)),), (rng.random((4, 5, 3)),), (rng.random((3, 2, 1)),),
            (rng.random((5, 10, 3)),), (rng.random((2, 4, 4)),)]


VECTORS_MISTAKES = (
    Mistake("channels_not_last", "the array was reshaped channel-major (as if it were (C, H, W)): each "
            "row must hold the C values of one pixel, img[r, c, :]",
            '''def image_to_vectors(img):
    H, W, C = img.shape
    return img.transpose(2, 0, 1).reshape(H * W, C)
'''),
    Mistake("column_major_order", "the pixels were listed column by column; pixel (r, c) must be row r * W + c "
            "(row by row)",
            '''def image_to_vectors(img):
    H, W, C = img.shape
    return img.transpose(1, 0, 2).reshape(H * W, C)
'''),
    Mistake("transposed_output", "the result has shape (C, H*W): one column per pixel; the task asks for one "
            "row per pixel, (H*W, C)",
            '''def image_to_vectors(img):
    H, W, C = img.shape
    return img.reshape(H * W, C).T
'''),
)


# --- task 4: patches ------------------------------------------------------------------------------

def _ref_patchify(img, p):
    return _patchify(np.asarray(img), p)


def _cases_patchify(rng):
    return [(rng.random((4, 6, 3)), 2), (rng.random((8, 8, 3)), 4), (rng.random((6, 9, 2)), 3),
            (rng.random((3, 3, 3)), 1), (rng.random((4, 4, 1)), 4), (rng.random((6, 4, 3)), 2)]


PATCHIFY_MISTAKES = (
    Mistake("patches_column_major", "the patches were numbered column by column; patch (a, b) must be "
            "number a * (W/p) + b (row by row)",
            '''def patchify(img, p):
    H, W, C = img.shape
    x = img.reshape(H // p, p, W // p, p, C).transpose(2, 0, 1, 3, 4)
    return x.reshape((H // p) * (W // p), p * p * C)
'''),
    Mistake("reshape_without_transpose", "the image was reshaped directly to (H/p * W/p, p*p*C): the rows "
            "are then runs of consecutive pixels, not p x p squares; split the axes and transpose first",
            '''def patchify(img, p):
    H, W, C = img.shape
    return img.reshape((H // p) * (W // p), p * p * C)
'''),
    Mistake("channels_first_in_patch", "each patch was flattened channel-major (c, p1, p2), as torch's unfold "
            "does; the task asks for (p1, p2, c): the C values of each pixel together",
            '''def patchify(img, p):
    H, W, C = img.shape
    x = img.reshape(H // p, p, W // p, p, C).transpose(0, 2, 4, 1, 3)
    return x.reshape((H // p) * (W // p), p * p * C)
'''),
    Mistake("patch_transposed", "inside each patch the pixels were listed column by column (p2 before p1)",
            '''def patchify(img, p):
    H, W, C = img.shape
    x = img.reshape(H // p, p, W // p, p, C).transpose(0, 2, 3, 1, 4)
    return x.reshape((H // p) * (W // p), p * p * C)
'''),
)


TASKS = [
    Task(ASSIGNMENT, "band_mask", _ref_band_mask, _cases_band_mask, BAND_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "truncated_attention", _ref_truncated, _cases_truncated, TRUNCATED_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "image_to_vectors", _ref_image_to_vectors, _cases_images, VECTORS_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "patchify", _ref_patchify, _cases_patchify, PATCHIFY_MISTAKES, setup=SETUP),
]
