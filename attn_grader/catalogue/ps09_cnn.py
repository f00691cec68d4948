"""Catalogue of ps09_cnn: a convolution computed by self-attention (Cordonnier et al. 2020).

Practises the chapter "Self-attention vs CNN" (CNN 是 self-attention 的特例, 感受野): the 'same'
convolution of deep learning (a cross-correlation with zero padding), the K x K heads' centres
of attention Delta_h, the quadratic relative attention scores -alpha (||delta||^2 - 2 <delta, Delta>),
and one-hot attention heads that reproduce the convolution.  Single-channel images (H, W).
References: :func:`attn_ref.conv.conv2d_same`, :func:`attn_ref.conv.kernel_offsets`,
:func:`attn_ref.conv.relative_scores`, :func:`attn_ref.conv.relative_attention_conv`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.conv import (
    conv2d_same,
    conv_as_attention_params,
    kernel_offsets,
    relative_attention_conv,
    relative_scores,
)

from ..checking.core import Mistake, Task
from ._shared import edited

ASSIGNMENT = "ps09_cnn"
SETUP = "import numpy as np"
#: No task here normalises scores with a softmax (tests/test_stability_cases.py): attention_as_conv's heads
#: are the hard limit alpha -> infinity, one-hot rows built directly, so it has no large-score cases.
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
            "this task, compute a cross-correlation: out[r, c] = sum_ij kernel[i, j] x[r + i - p, c + j - p]",
            '''def conv2d_single(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    x_pad = np.pad(x, K // 2)
    k = kernel[::-1, ::-1]
    return np.array([[np.sum(k * x_pad[r:r + K, c:c + K]) for c in range(W)] for r in range(H)])
'''),
    Mistake("padding_forgotten", "no zero padding: this is a 'valid' convolution of shape (H - K + 1, W - K + 1); "
            "'same' pads K // 2 zeros on every side so that the output is (H, W)",
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
            "K // 2; pad K // 2 zeros on each side",
            '''def conv2d_single(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    x_pad = np.pad(x, ((0, K - 1), (0, K - 1)))
    return np.array([[np.sum(kernel * x_pad[r:r + K, c:c + K]) for c in range(W)] for r in range(H)])
'''),
)


# --- task 2: the heads' centres of attention ----------------------------------------------------

def _ref_offsets(K):
    return kernel_offsets(K)


def _cases_offsets(rng):
    return [(3,), (1,), (5,), (7,)]


OFFSETS_MISTAKES = (
    Mistake("offsets_transposed", "the heads were listed column by column (j outer, i inner), or with the two "
            "coordinates swapped; head h = i*K + j has the offset (row i - K//2, column j - K//2)",
            '''def relative_offsets(K):
    c = K // 2
    return np.array([(i - c, j - c) for j in range(K) for i in range(K)])
'''),
    Mistake("offsets_not_centred", "the offsets were not centred: kernel index (i, j) is the offset "
            "(i - K//2, j - K//2), from -K//2 to K//2, with (0, 0) at the centre of the kernel",
            '''def relative_offsets(K):
    return np.array([(i, j) for i in range(K) for j in range(K)])
'''),
    Mistake("offsets_off_by_one", "the offsets run from -(K+1)//2 to K//2 - 1 (one too far up/left): note that "
            "-K//2 in Python is (-K)//2, not -(K//2)",
            '''def relative_offsets(K):
    r = range(-K // 2, K // 2)
    return np.array([(i, j) for i in r for j in r])
'''),
)


# --- task 3: the quadratic relative attention scores --------------------------------------------

def _ref_scores(H, W, delta, alpha):
    return relative_scores(H, W, np.asarray(delta, dtype=float)[None], alpha)[0]  # (H*W, H*W)


def _cases_scores(rng):
    return [(3, 4, np.array([1, -1]), 1.0), (1, 1, np.array([0, 0]), 2.0), (4, 4, np.array([-2, 1]), 0.5),
            (2, 5, np.array([0, 1]), 3.0), (5, 3, rng.integers(-2, 3, size=2), float(rng.uniform(0.5, 4)))]


def _scores_mistake(body: str) -> str:
    return '''def relative_scores(H, W, delta, alpha):
    rows, cols = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    pos = np.stack([rows.ravel(), cols.ravel()], axis=1)
''' + body


SCORES_MISTAKES = (
    Mistake("offset_reversed", "the offset was taken as query - key; the encoding uses delta = key - query, so "
            "that the head looks at the pixel q + Delta",
            _scores_mistake('''    d = pos[:, None, :] - pos[None, :, :]
    return -alpha * (np.sum(d**2, axis=-1) - 2 * d @ delta)
''')),
    Mistake("square_term_missing", "the ||delta||² term is missing: without it the scores grow without bound "
            "in the direction of Delta instead of peaking at delta = Delta",
            _scores_mistake('''    d = pos[None, :, :] - pos[:, None, :]
    return -alpha * (-2 * d @ delta)
''')),
    Mistake("sign_flipped", "the scores have the wrong sign: v_h = -alpha (1, -2 Delta), so the score is "
            "-alpha (||delta||² - 2 <delta, Delta>), largest at delta = Delta",
            _scores_mistake('''    d = pos[None, :, :] - pos[:, None, :]
    return alpha * (np.sum(d**2, axis=-1) - 2 * d @ delta)
''')),
    Mistake("pixels_column_major", "the pixels were numbered column by column; pixel (r, c) is number r * W + c "
            "(row by row)",
            '''def relative_scores(H, W, delta, alpha):
    cols, rows = np.meshgrid(np.arange(W), np.arange(H), indexing="ij")
    pos = np.stack([rows.ravel(), cols.ravel()], axis=1)
    d = pos[None, :, :] - pos[:, None, :]
    return -alpha * (np.sum(d**2, axis=-1) - 2 * d @ delta)
'''),
)


# --- task 4: the convolution as K*K one-hot attention heads -------------------------------------

def _ref_attention_as_conv(x, kernel):
    x, kernel = np.asarray(x, dtype=float), np.asarray(kernel, dtype=float)
    params = conv_as_attention_params(kernel[None, None])
    out, _ = relative_attention_conv(x[:, :, None], params, alpha=np.inf)
    return out[:, :, 0]  # (H, W)


#: One-hot heads done right: head (i, j) reads the zero-padded image shifted by (i - K//2, j - K//2).
_SHIFTED_HEADS = '''def attention_as_conv(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    p = K // 2
    x_pad = np.pad(x, p)
    out = np.zeros((H, W))
    for i in range(K):
        for j in range(K):
            out += kernel[i, j] * x_pad[i:i + H, j:j + W]
    return out
'''

ATTENTION_CONV_MISTAKES = (
    Mistake("kernel_flipped", "head Delta was paired with kernel[-Delta] (a flipped kernel, a true convolution); "
            "the head at offset (i - K//2, j - K//2) gets kernel[i, j]",
            edited(_SHIFTED_HEADS, ("kernel[i, j]", "kernel[K - 1 - i, K - 1 - j]"))),
    Mistake("keys_inside_image_only", "the keys were only the pixels inside the image, so a head whose offset "
            "leaves the image attends to the nearest pixel inside (replicate padding); the keys must include "
            "the zero padding, as Conv2d reads zeros there",
            '''def attention_as_conv(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    p = K // 2
    rows, cols = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    out = np.zeros((H, W))
    for i in range(K):
        for j in range(K):
            r = np.clip(rows + i - p, 0, H - 1)
            c = np.clip(cols + j - p, 0, W - 1)
            out += kernel[i, j] * x[r, c]
    return out
'''),
    Mistake("offsets_transposed", "the heads' offsets were transposed: the head for kernel[i, j] must look "
            "i - K//2 rows down and j - K//2 columns right",
            edited(_SHIFTED_HEADS, ("x_pad[i:i + H, j:j + W]", "x_pad[j:j + H, i:i + W]"))),
    Mistake("soft_attention", "the heads used a softmax of the scores with alpha = 1, which spreads weight over "
            "the neighbours; the convolution is the hard limit alpha -> infinity, a one-hot on q + Delta",
            '''def attention_as_conv(x, kernel):
    H, W = x.shape
    K = kernel.shape[0]
    p = K // 2
    x_pad = np.pad(x, p).ravel()
    qr, qc = np.meshgrid(np.arange(H), np.arange(W), indexing="ij")
    kr, kc = np.meshgrid(np.arange(-p, H + p), np.arange(-p, W + p), indexing="ij")
    dr = kr.ravel()[None, :] - qr.ravel()[:, None]
    dc = kc.ravel()[None, :] - qc.ravel()[:, None]
    out = np.zeros(H * W)
    for i in range(K):
        for j in range(K):
            s = -((dr - (i - p)) ** 2 + (dc - (j - p)) ** 2)
            A = np.exp(s - s.max(axis=1, keepdims=True))
            A /= A.sum(axis=1, keepdims=True)
            out += kernel[i, j] * (A @ x_pad)
    return out.reshape(H, W)
'''),
)


TASKS = [
    Task(ASSIGNMENT, "conv2d_single", _ref_conv2d_single, _images_and_kernels, CONV_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "relative_offsets", _ref_offsets, _cases_offsets, OFFSETS_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "relative_scores", _ref_scores, _cases_scores, SCORES_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "attention_as_conv", _ref_attention_as_conv, _images_and_kernels, ATTENTION_CONV_MISTAKES,
         setup=SETUP),
]
