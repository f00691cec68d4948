"""Catalogue of ps09_cnn: a convolution computed by self-attention (Cordonnier et al. 2020).

Practises the chapter "Self-attention vs CNN" (自注意力与 CNN; CNN 是自注意力的特例, 感受野), in the book's
notation: the 'same' convolution of deep learning (a cross-correlation with zero padding) with a κ x κ
kernel, the quadratic relative attention scores α^(ℓ) = u^(ℓ)ᵀ ρ_δ = -γ^(ℓ) (||δ||² - 2 <δ, Δ^(ℓ)>) of head ℓ
(centre Δ^(ℓ), given by the set-up's kernel_offsets), one-hot attention heads that reproduce the convolution
(task 3 receives the heads' scores, in the notebook from task 2, and returns the heads' hard-limit attention
matrices with the output; its cases include other scores, so an answer that computes the convolution without
forming the heads' attention from the scores fails, issue 29), and the receptive field of L stacked
convolutions against one self-attention layer's.  Single-channel images (n_y, n_x); everything is counted
from 0, as array indices.
References: :func:`attn_ref.conv.conv2d_same`, :func:`attn_ref.conv.kernel_offsets`,
:func:`attn_ref.conv.relative_scores`, :func:`attn_ref.conv.relative_attention_conv`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.conv import (
    conv2d_same,
    kernel_offsets,
    relative_scores,
)

from ..checking.core import Mistake, Task
from ._shared import edited

ASSIGNMENT = "ps09_cnn"
#: The notebook's setup cell: NumPy and the heads' centres of attention (tests/test_ps07_ps08_ps09_setups.py compares
#: kernel_offsets with attn_ref's).
SETUP = '''import numpy as np


def kernel_offsets(kappa):
    """The kappa^2 heads' centres of attention Delta^(l) = (i - kappa // 2, j - kappa // 2), head l = i * kappa + j
    (rows down first, then columns right). kappa odd -> (kappa * kappa, 2) int."""
    c = kappa // 2
    return np.array([(i - c, j - c) for i in range(kappa) for j in range(kappa)])'''
#: No task here normalises scores with a softmax (tests/test_stability_cases.py): attention_as_conv's heads
#: are the hard limit gamma -> infinity of the softmax of the scores it receives, one-hot rows on each row's
#: largest score (an argmax), so it has no large-score cases.
NORMALISING = ()


# --- task 1: the 'same' convolution (cross-correlation) -------------------------------------------

def _ref_conv2d_single(x, kernel):
    x, kernel = np.asarray(x, dtype=float), np.asarray(kernel, dtype=float)
    return conv2d_same(x[:, :, None], kernel[None, None])[:, :, 0]  # (H, W)


def _images_and_kernels(rng):
    shapes = [((5, 6), 3), ((7, 7), 5), ((1, 1), 3), ((4, 3), 1), ((3, 8), 3), ((2, 2), 5), ((6, 4), 3)]
    return [(rng.standard_normal(hw), rng.standard_normal((K, K))) for hw, K in shapes]


CONV_MISTAKES = (
    Mistake("kernel_flipped", "the kernel was flipped (a true mathematical convolution); torch.nn.Conv2d, and "
            "this task, compute a cross-correlation: out[y, x] = sum_ij kernel[i, j] img[y + i - κ//2, x + j - κ//2]",
            '''def conv2d_single(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    x_pad = np.pad(x, K // 2)
    k = kernel[::-1, ::-1]
    return np.array([[np.sum(k * x_pad[r:r + K, c:c + K]) for c in range(W)] for r in range(H)])
'''),
    Mistake("padding_forgotten", "no zero padding: this is a 'valid' convolution of shape (n_y - κ + 1, n_x - κ + 1); "
            "'same' pads κ // 2 zeros on every side so that the output is (n_y, n_x)",
            '''def conv2d_single(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    return np.array([[np.sum(kernel * x[r:r + K, c:c + K]) for c in range(W - K + 1)] for r in range(H - K + 1)])
'''),
    Mistake("kernel_transposed", "the kernel was transposed: kernel[i, j] multiplies the pixel i rows down and "
            "j columns right of the window's corner (row offset first)",
            '''def conv2d_single(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    x_pad = np.pad(x, K // 2)
    k = kernel.T
    return np.array([[np.sum(k * x_pad[r:r + K, c:c + K]) for c in range(W)] for r in range(H)])
'''),
    Mistake("padding_one_side", "all the padding was put at the bottom and right, so the output is shifted by "
            "κ // 2; pad κ // 2 zeros on each side",
            '''def conv2d_single(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    x_pad = np.pad(x, ((0, K - 1), (0, K - 1)))
    return np.array([[np.sum(kernel * x_pad[r:r + K, c:c + K]) for c in range(W)] for r in range(H)])
'''),
)


# --- task 2: the quadratic relative attention scores --------------------------------------------

def _ref_scores(n_y, n_x, Delta, gamma):
    return relative_scores(n_y, n_x, np.asarray(Delta, dtype=float)[None], gamma)[0]  # (H*W, H*W)


def _cases_scores(rng):
    return [(3, 4, np.array([1, -1]), 1.0), (1, 1, np.array([0, 0]), 2.0), (4, 4, np.array([-2, 1]), 0.5),
            (2, 5, np.array([0, 1]), 3.0), (5, 3, rng.integers(-2, 3, size=2), float(rng.uniform(0.5, 4)))]


def _scores_mistake(body: str) -> str:
    return '''def relative_scores(n_y, n_x, Delta, gamma):
    rows, cols = np.meshgrid(np.arange(n_y), np.arange(n_x), indexing="ij")
    pos = np.stack([rows.ravel(), cols.ravel()], axis=1)
''' + body


SCORES_MISTAKES = (
    Mistake("offset_reversed", "the offset was taken as query - key; the encoding uses δ = key - query, so "
            "that the head looks at the pixel q + Δ^(ℓ)",
            _scores_mistake('''    d = pos[:, None, :] - pos[None, :, :]
    return -gamma * (np.sum(d**2, axis=-1) - 2 * d @ Delta)
''')),
    Mistake("square_term_missing", "the ||δ||² term is missing: without it the scores grow without bound "
            "in the direction of Δ^(ℓ) instead of peaking at δ = Δ^(ℓ)",
            _scores_mistake('''    d = pos[None, :, :] - pos[:, None, :]
    return -gamma * (-2 * d @ Delta)
''')),
    Mistake("sign_flipped", "the scores have the wrong sign: u^(ℓ) = -γ (1, -2 Δ^(ℓ)), so the score is "
            "-γ (||δ||² - 2 <δ, Δ^(ℓ)>), largest at δ = Δ^(ℓ)",
            _scores_mistake('''    d = pos[None, :, :] - pos[:, None, :]
    return gamma * (np.sum(d**2, axis=-1) - 2 * d @ Delta)
''')),
    Mistake("pixels_column_major", "the pixels were numbered column by column; pixel (y, x) is number y * n_x + x "
            "(row by row)",
            '''def relative_scores(n_y, n_x, Delta, gamma):
    cols, rows = np.meshgrid(np.arange(n_x), np.arange(n_y), indexing="ij")
    pos = np.stack([rows.ravel(), cols.ravel()], axis=1)
    d = pos[None, :, :] - pos[:, None, :]
    return -gamma * (np.sum(d**2, axis=-1) - 2 * d @ Delta)
'''),
)


# --- task 3: the convolution as κ² hard-limit attention heads, from the heads' scores ------------

def _query_pixels(H, W, p):
    """The numbers of the image's pixels among the padded image's, (H*W,), row by row."""
    rows, cols = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    return ((rows + p) * (W + 2 * p) + (cols + p)).ravel()


def _ref_attention_as_conv(x, kernel, S):
    """(out, A): each head's hard-limit attention (one-hot on the largest of its scores S[h] of each image
    pixel over the padded pixels) and the sum of the heads' outputs times the kernel.  With the scores of
    :func:`attn_ref.conv.relative_scores` it is :func:`attn_ref.conv.relative_attention_conv` at gamma = inf
    (tests/test_conv.py)."""
    x, kernel, S = (np.asarray(a, dtype=float) for a in (x, kernel, S))
    (H, W), K = x.shape, kernel.shape[0]
    p = K // 2
    scores = S[:, _query_pixels(H, W, p), :]  # (K*K, H*W, N)
    A = np.zeros_like(scores)
    np.put_along_axis(A, np.argmax(scores, axis=-1)[..., None], 1.0, axis=-1)  # the hard limit
    out = np.einsum("h,hqk,k->q", kernel.ravel(), A, np.pad(x, p).ravel())
    return out.reshape(H, W), A


def _padded_scores(H, W, K, gamma=1.0):
    """The heads' relative scores over all the pixels of the padded image: what the notebook passes."""
    p = K // 2
    return relative_scores(H + 2 * p, W + 2 * p, kernel_offsets(K), gamma)  # (K*K, N, N)


def _cases_attention_as_conv(rng):
    cases = [(x, kernel, _padded_scores(*x.shape, len(kernel), float(rng.uniform(0.5, 3))))
             for x, kernel in _images_and_kernels(rng)]
    # other scores, whose maxima lie anywhere: an answer that does not take its heads from S fails here
    for (H, W), K in [((3, 4), 3), ((2, 2), 1), ((4, 4), 5)]:
        N = (H + 2 * (K // 2)) * (W + 2 * (K // 2))
        cases.append((rng.standard_normal((H, W)), rng.standard_normal((K, K)), rng.standard_normal((K * K, N, N))))
    return cases


#: The right answer: the mistakes below change one line of it.
_HEADS = '''def attention_as_conv(x, kernel, S):
    H, W = x.shape
    K = kernel.shape[0]
    p = K // 2
    x_pad = np.pad(x, p)
    rows, cols = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    queries = ((rows + p) * (W + 2 * p) + (cols + p)).ravel()
    A = np.zeros((K * K, H * W, x_pad.size))
    out = np.zeros(H * W)
    for h in range(K * K):
        best = np.argmax(S[h][queries], axis=1)
        A[h, np.arange(H * W), best] = 1.0
        out += kernel.ravel()[h] * (A[h] @ x_pad.ravel())
    return out.reshape(H, W), A
'''

ATTENTION_CONV_MISTAKES = (
    Mistake("kernel_flipped", "the head at offset Δ was paired with kernel[-Δ] (a flipped kernel, a true convolution); "
            "the head at offset (i - κ//2, j - κ//2), number ℓ = i*κ + j, gets kernel[i, j]",
            edited(_HEADS, ("kernel.ravel()[h]", "kernel[::-1, ::-1].ravel()[h]"))),
    Mistake("kernel_transposed", "head ℓ was paired with kernel[j, i] (the heads numbered column by column); "
            "head ℓ = i*κ + j, at offset (i - κ//2, j - κ//2), gets kernel[i, j]",
            edited(_HEADS, ("kernel.ravel()[h]", "kernel.T.ravel()[h]"))),
    Mistake("keys_inside_image_only", "the keys were only the pixels inside the image, so a head whose offset "
            "leaves the image attends to the nearest pixel inside (replicate padding); the keys are all the "
            "pixels of the zero-padded image, as Conv2d reads zeros there, and A has "
            "N = (n_y + 2⌊κ/2⌋)(n_x + 2⌊κ/2⌋) columns",
            edited(_HEADS, ("A = np.zeros((K * K, H * W, x_pad.size))", "A = np.zeros((K * K, H * W, H * W))"),
                   ("S[h][queries]", "S[h][queries][:, queries]"),
                   ("(A[h] @ x_pad.ravel())", "(A[h] @ x.ravel())"))),
    Mistake("queries_include_padding", "the queries were all the pixels of the padded image; the queries are "
            "the image's own n_y*n_x pixels (padded pixel (y + κ//2, x + κ//2) for image "
            "pixel (y, x)), the keys all the "
            "padded ones",
            edited(_HEADS, ("queries = ((rows + p) * (W + 2 * p) + (cols + p)).ravel()",
                            "queries = np.arange(x_pad.size)"),
                   ("A = np.zeros((K * K, H * W, x_pad.size))", "A = np.zeros((K * K, x_pad.size, x_pad.size))"),
                   ("A[h, np.arange(H * W), best]", "A[h, queries, best]"),
                   ("out = np.zeros(H * W)", "out = np.zeros(x_pad.size)"),
                   ("out.reshape(H, W)", "out.reshape(x_pad.shape)"))),
    Mistake("scores_ignored", "each head was put at its kernel offset by index arithmetic and the scores S were never "
            "read; head ℓ attends, from each query, to the key with the largest of its scores S[ℓ] (the hard limit), "
            "wherever that is: with the relative-position scores it is the offset's pixel, with other scores not",
            edited(_HEADS, ("best = np.argmax(S[h][queries], axis=1)",
                            "best = queries + (h // K - p) * (W + 2 * p) + (h % K - p)"))),
    Mistake("scores_as_weights", "the scores themselves were used as the attention weights; the hard limit "
            "γ -> infinity of the softmax of the scores is a one-hot row on the key with the largest score",
            edited(_HEADS, ("        A[h, np.arange(H * W), best] = 1.0\n", "        A[h] = S[h][queries]\n"))),
)


# --- task 4: the receptive field of stacked convolutions ------------------------------------------

def _ref_receptive_field(n_y, n_x, kappa, L, y, x):
    c = kappa // 2  # each 'same' layer widens the field by kappa // 2 pixels on every side
    rows = min(n_y - 1, y + L * c) - max(0, y - L * c) + 1
    cols = min(n_x - 1, x + L * c) - max(0, x - L * c) + 1
    farthest = max(y, n_y - 1 - y, x, n_x - 1 - x)  # the image pixel farthest from (y, x), along one axis
    layers = max(1, -(-farthest // c))  # ceil(farthest / c), and at least one layer
    return np.array([rows * cols, layers])


def _cases_receptive_field(rng):
    cases = [(9, 12, 3, 2, 1, 7),   # first: near the top border, every mistake differs
             (5, 5, 3, 1, 2, 2),    # the centre of a 5 x 5 image: one 3 x 3 layer sees 9 pixels
             (7, 7, 5, 3, 0, 0),    # a corner: the field is cut by two borders
             (1, 1, 3, 1, 0, 0),    # a single pixel
             (16, 4, 3, 4, 15, 3),  # the bottom-right corner of a tall image
             (30, 30, 7, 2, 14, 20)]
    n_y, n_x = (int(v) for v in rng.integers(2, 25, size=2))
    cases.append((n_y, n_x, int(rng.choice([3, 5])), int(rng.integers(1, 6)), int(rng.integers(n_y)),
                  int(rng.integers(n_x))))
    return cases


_FIELD = '''def receptive_field(n_y, n_x, kappa, L, y, x):
    c = kappa // 2
    rows = min(n_y - 1, y + L * c) - max(0, y - L * c) + 1
    cols = min(n_x - 1, x + L * c) - max(0, x - L * c) + 1
    farthest = max(y, n_y - 1 - y, x, n_x - 1 - x)
    layers = max(1, -(-farthest // c))
    return np.array([rows * cols, layers])
'''

FIELD_MISTAKES = (
    Mistake("border_ignored", "the field was counted as a full square even where the image ends; near a border the "
            "field is cut off (the zero padding is not pixels of the image)",
            edited(_FIELD, ("rows = min(n_y - 1, y + L * c) - max(0, y - L * c) + 1", "rows = 2 * L * c + 1"),
                   ("cols = min(n_x - 1, x + L * c) - max(0, x - L * c) + 1", "cols = 2 * L * c + 1"))),
    Mistake("grows_by_kappa", "each layer was taken to widen the field by κ - 1 pixels on each side; a centred κ x κ "
            "kernel shares its width between both sides of its centre: count how far one layer reaches to one side, "
            "then L layers",
            edited(_FIELD, ("c = kappa // 2", "c = kappa - 1"))),
    Mistake("layers_not_stacked", "the field of one layer was returned whatever L is; stacking L layers lets an output "
            "see what its inputs saw, so the field grows with every layer",
            edited(_FIELD, ("y + L * c) - max(0, y - L * c)", "y + c) - max(0, y - c)"),
                   ("x + L * c) - max(0, x - L * c)", "x + c) - max(0, x - c)"))),
    Mistake("layers_for_the_centre", "the layers needed were counted for a pixel at the centre of the image; the pixel "
            "(y, x) must reach the pixel of the image farthest from it, which for a pixel near a border is farther",
            edited(_FIELD, ("farthest = max(y, n_y - 1 - y, x, n_x - 1 - x)",
                            "farthest = max(n_y - 1, n_x - 1) // 2"))),
)


TASKS = [
    Task(ASSIGNMENT, "conv2d_single", _ref_conv2d_single, _images_and_kernels, CONV_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "relative_scores", _ref_scores, _cases_scores, SCORES_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "attention_as_conv", _ref_attention_as_conv, _cases_attention_as_conv,
         ATTENTION_CONV_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "receptive_field", _ref_receptive_field, _cases_receptive_field, FIELD_MISTAKES, setup=SETUP),
]
