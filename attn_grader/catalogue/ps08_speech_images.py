"""Catalogue of ps08_speech_images: truncated self-attention for speech, patches as vectors, and the memory it saves.

Practises the chapter "Speech and images" (语音与图像), in the book's notation: the band mask |i - j| <= r of
truncated self-attention (截断自注意力, radius r), attention restricted to it (row layout, 1/sqrt(d_k) scale),
an n_y x n_x image with d_in channels cut into p x p patches as vectors, and the memory of the score
matrix with and without truncation (n = seconds x frames per second).
References: :func:`attn_ref.attention.band_mask`, :func:`attn_ref.truncated.truncated_attention`,
:func:`attn_ref.images.patchify`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.attention import band_mask as _band_mask
from attn_ref.images import patchify as _patchify
from attn_ref.truncated import truncated_attention as _truncated

from ..checking.core import Mistake, Task
from . import _stability

ASSIGNMENT = "ps08_speech_images"
#: The notebook's setup cell: NumPy and the tested masked softmax the tasks may call
#: (tests/test_ps07_ps08_ps09_setups.py compares it with attn_ref).
SETUP = '''import numpy as np


def masked_softmax(scores, mask):
    """Softmax of each row of `scores` over the entries where `mask` is True, 0 elsewhere (safe for large
    scores; a row with no True entry gets zeros). scores, mask: (n, m) -> (n, m)."""
    s = np.where(mask, scores, -np.inf)
    row_max = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(row_max), 0.0, row_max))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)'''
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
    Mistake("band_off_by_one", "the band used |i - j| < r, one too narrow on each side: a query sees "
            "the keys with |i - j| <= r (r = 0 still lets each position see itself)",
            '''def band_mask(n, w):
    idx = np.arange(n)
    return np.abs(idx[:, None] - idx[None, :]) < w
'''),
    Mistake("mask_inverted", "the mask is inverted: True must mark the pairs that MAY attend (|i - j| <= r)",
            '''def band_mask(n, w):
    idx = np.arange(n)
    return np.abs(idx[:, None] - idx[None, :]) > w
'''),
    Mistake("band_one_sided", "only the past was kept (0 <= i - j <= r); truncated self-attention looks "
            "r frames to each side",
            '''def band_mask(n, w):
    idx = np.arange(n)
    d = idx[:, None] - idx[None, :]
    return (d >= 0) & (d <= w)
'''),
    Mistake("band_too_wide", "the band used |i - j| <= r + 1, one too wide on each side",
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
    # scores near +1000 outside the band beside small ones inside it (Q = I, so scores[i, j] = K[j, i] / sqrt(n)):
    # a softmax over every key, the band applied to the weights afterwards, loses the band's weights (issue 41)
    for n, w in [(4, 1), (16, 2)]:
        d = np.arange(n)
        S = _stability.blocked_high(rng, np.abs(d[:, None] - d[None, :]) <= w)
        cases.append((np.eye(n), np.sqrt(n) * S.T, _stability.small(rng, (n, 2)), w))
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
            "not only to |i - j| <= r",
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
    Mistake("band_off_by_one", "the band used |i - j| < r, one too narrow on each side: a query sees "
            "the keys with |i - j| <= r",
            _trunc_mistake('''    scores = np.where(dist < w, scores, -np.inf)
    m = np.where(np.isinf(scores).all(axis=1, keepdims=True), 0, scores.max(axis=1, keepdims=True))
    e = np.exp(scores - m)
    s = e.sum(axis=1, keepdims=True)
    return (e / np.where(s == 0, 1, s)) @ V
''')),
    Mistake("band_one_sided", "only the past was kept (0 <= i - j <= r): query i attended to itself and the r "
            "frames before it; truncated self-attention looks r frames to each side, |i - j| <= r",
            _trunc_mistake('''    d = np.arange(n)[:, None] - np.arange(n)[None, :]
    scores = np.where((d >= 0) & (d <= w), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ V
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
    Mistake("renormalised_after_softmax", _stability.renormalised_after_softmax("key", "out-of-band"),
            _trunc_mistake('''    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True) * (dist <= w)
    t = p.sum(axis=1, keepdims=True)
    return np.divide(p, t, out=np.zeros_like(p), where=t > 0) @ V
''')),
)


# --- task 3: patches ------------------------------------------------------------------------------

def _ref_patchify(img, p):
    return _patchify(np.asarray(img), p)


def _cases_patchify(rng):
    return [(rng.random((4, 6, 3)), 2), (rng.random((8, 8, 3)), 4), (rng.random((6, 9, 2)), 3),
            (rng.random((3, 3, 3)), 1), (rng.random((4, 4, 1)), 4), (rng.random((6, 4, 3)), 2)]


PATCHIFY_MISTAKES = (
    Mistake("patches_column_major", "the patches were numbered column by column; the patch whose top-left pixel "
            "is img[y * p, x * p] must be "
            "number y * (n_x / p) + x (row by row)",
            '''def patchify(img, p):
    H, W, C = img.shape
    x = img.reshape(H // p, p, W // p, p, C).transpose(2, 0, 1, 3, 4)
    return x.reshape((H // p) * (W // p), p * p * C)
'''),
    Mistake("reshape_without_transpose", "the image was reshaped directly to (n_y/p * n_x/p, p*p*d_in): the rows "
            "are then runs of consecutive pixels, not p x p squares; split the axes and transpose first",
            '''def patchify(img, p):
    H, W, C = img.shape
    return img.reshape((H // p) * (W // p), p * p * C)
'''),
    Mistake("channels_first_in_patch", "each patch was flattened channel-major (channel, row, column), as "
            "torch's unfold "
            "does; the task asks for (row, column, channel): the d_in values of each pixel together",
            '''def patchify(img, p):
    H, W, C = img.shape
    x = img.reshape(H // p, p, W // p, p, C).transpose(0, 2, 4, 1, 3)
    return x.reshape((H // p) * (W // p), p * p * C)
'''),
    Mistake("patch_transposed", "inside each patch the pixels were listed column by column (row by row is asked)",
            '''def patchify(img, p):
    H, W, C = img.shape
    x = img.reshape(H // p, p, W // p, p, C).transpose(0, 2, 3, 1, 4)
    return x.reshape((H // p) * (W // p), p * p * C)
'''),
)


# --- task 4: the memory of the scores, with and without truncation -------------------------------

def _ref_memory(seconds, frames_per_second, r, bytes_per_score):
    n = seconds * frames_per_second
    band = n * n if r >= n - 1 else n * (2 * r + 1) - r * (r + 1)  # |i - j| <= r: minus the corners the border cuts
    return np.array([n * n * bytes_per_score, band * bytes_per_score], dtype=np.int64)


def _cases_memory(rng):
    return [
        (60, 100, 50, 4),          # first: one minute of audio at 100 frames/s, r = 50 (every mistake differs)
        (1, 4, 1, 1),              # n = 4, r = 1: band_mask(4, 1) has 10 True entries
        (3600, 100, 200, 2),       # an hour of audio: n = 360000, a band_mask would need 130 GB
        (1, 5, 10, 4),             # r >= n - 1: the band is the whole matrix
        (2, 3, 0, 8),              # r = 0: the diagonal only
        (int(rng.integers(1, 120)), int(rng.integers(10, 200)), int(rng.integers(1, 64)), 4),
    ]


def _memory_mistake(band: str) -> str:
    return ("def score_memory(seconds, frames_per_second, r, bytes_per_score=4):\n"
            "    n = seconds * frames_per_second\n"
            f"    band = {band}\n"
            "    return np.array([n * n * bytes_per_score, band * bytes_per_score])\n")


MEMORY_MISTAKES = (
    Mistake("border_ignored", "every query was given the full window of keys; near the two ends of the sequence the "
            "band is cut short (the first query has no keys before it): count how many keys the queries near each end "
            "lose",
            _memory_mistake("n * (2 * r + 1)")),
    Mistake("band_one_sided", "only the keys on one side of each query were counted (r + 1 each); truncated "
            "self-attention keeps the r frames on each side and the query's own",
            _memory_mistake("n * n if r >= n - 1 else n * (r + 1) - r * (r + 1) // 2")),
    Mistake("diagonal_forgotten", "the query's own frame was not counted: the band is the frames within r of the "
            "query, its own frame included",
            _memory_mistake("n * (n - 1) if r >= n - 1 else n * 2 * r - r * (r + 1)")),
    Mistake("band_not_capped", "the band was not capped at the whole matrix: when the radius reaches across the whole "
            "sequence every pair is in the band, and a band never holds more pairs than the matrix has",
            _memory_mistake("n * (2 * r + 1) - r * (r + 1)")),
    Mistake("count_not_bytes", "the scores were counted but not multiplied by bytes_per_score (4 for float32)",
            "def score_memory(seconds, frames_per_second, r, bytes_per_score=4):\n"
            "    n = seconds * frames_per_second\n"
            "    band = n * n if r >= n - 1 else n * (2 * r + 1) - r * (r + 1)\n"
            "    return np.array([n * n, band])\n"),
)


TASKS = [
    Task(ASSIGNMENT, "band_mask", _ref_band_mask, _cases_band_mask, BAND_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "truncated_attention", _ref_truncated, _cases_truncated, TRUNCATED_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "patchify", _ref_patchify, _cases_patchify, PATCHIFY_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "score_memory", _ref_memory, _cases_memory, MEMORY_MISTAKES, setup=SETUP),
]
