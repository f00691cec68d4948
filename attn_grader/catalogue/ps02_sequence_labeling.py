"""Catalogue of ps02_sequence_labeling: a fully connected network per token, then per window.

Practises the chapter "Sequence labeling without attention" (Sequence Labeling): the window
features [x_{t-w}; ...; x_t; ...; x_{t+w}] with zero padding, the same two-layer FCN on every
vector, and the two combined.  Weights have nn.Linear's shape (d_out, d_in).
References: :func:`attn_ref.seqlabel.window_features`, :func:`attn_ref.seqlabel.fcn_tag_logits`,
:func:`attn_ref.seqlabel.windowed_logits`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.seqlabel import fcn_tag_logits as _fcn
from attn_ref.seqlabel import window_features as _window
from attn_ref.seqlabel import windowed_logits as _windowed

from ..checking.core import Mistake, Task

ASSIGNMENT = "ps02_sequence_labeling"
SETUP = "import numpy as np"


def _fcn_weights(rng, d, h, k):
    return (rng.standard_normal((h, d)), rng.standard_normal(h), rng.standard_normal((k, h)), rng.standard_normal(k))


# --- task 1: window features --------------------------------------------------------------------

def _ref_window(X, w):
    return _window(np.asarray(X, dtype=float), w)


def _cases_window(rng):
    cases = []
    for n, d, w in [(6, 3, 1), (5, 2, 2), (7, 1, 3), (4, 4, 0), (1, 3, 2), (3, 2, 4)]:  # w = 0; w >= n
        cases.append((rng.standard_normal((n, d)) + 1.0, w))  # shifted: padding with 0 differs from edge copies
    return cases


WINDOW_MISTAKES = (
    Mistake("wrap_around", "the window wrapped around the sequence (the first word saw the last one as its "
            "left neighbour); positions beyond the ends must be zero vectors",
            '''def window_features(X, w):
    return np.concatenate([np.roll(X, w - k, axis=0) for k in range(2 * w + 1)], axis=1)
'''),
    Mistake("edge_padding", "the ends were padded with copies of the first and last vectors; the padding must "
            "be zero vectors",
            '''def window_features(X, w):
    n = X.shape[0]
    P = np.pad(X, ((w, w), (0, 0)), mode="edge")
    return np.concatenate([P[k:k + n] for k in range(2 * w + 1)], axis=1)
'''),
    Mistake("no_padding", "no padding: only the n - 2w positions with a full window were returned; every one "
            "of the n vectors gets a row, with zero vectors beyond the ends",
            '''def window_features(X, w):
    n = X.shape[0]
    return np.concatenate([X[k:n - 2 * w + k] for k in range(2 * w + 1)], axis=1)
'''),
    Mistake("reversed_order", "the window was concatenated right to left; the order is x(t−w), …, x(t), …, "
            "x(t+w)",
            '''def window_features(X, w):
    n, d = X.shape
    P = np.concatenate([np.zeros((w, d)), X, np.zeros((w, d))])
    return np.concatenate([P[k:k + n] for k in reversed(range(2 * w + 1))], axis=1)
'''),
    Mistake("window_off_by_one", "the window has 2w + 3 positions (w + 1 on each side); it has 2w + 1: "
            "w on each side plus the vector itself",
            '''def window_features(X, w):
    n, d = X.shape
    w = w + 1
    P = np.concatenate([np.zeros((w, d)), X, np.zeros((w, d))])
    return np.concatenate([P[k:k + n] for k in range(2 * w + 1)], axis=1)
'''),
)


# --- task 2: the same FCN on every vector -------------------------------------------------------

def _ref_fcn(X, W1, b1, W2, b2):
    return _fcn(np.asarray(X, dtype=float), W1, b1, W2, b2)


def _cases_fcn(rng):
    cases = []
    for n, d, h, k in [(4, 5, 6, 3), (1, 3, 4, 2), (7, 2, 8, 5), (3, 6, 3, 1)]:
        cases.append((rng.standard_normal((n, d)), *_fcn_weights(rng, d, h, k)))
    return cases


FCN_MISTAKES = (
    Mistake("no_relu", "the ReLU between the two layers is missing: hₜ = max(0, W1 xₜ + b1)",
            '''def fcn_tag_logits(X, W1, b1, W2, b2):
    return (X @ W1.T + b1) @ W2.T + b2
'''),
    Mistake("relu_on_output", "a ReLU was also applied to the output scores; the tag scores yₜ = W2 hₜ + b2 "
            "are not clipped (they may be negative)",
            '''def fcn_tag_logits(X, W1, b1, W2, b2):
    H = np.maximum(X @ W1.T + b1, 0.0)
    return np.maximum(H @ W2.T + b2, 0.0)
'''),
    Mistake("bias_after_relu", "b1 was added after the ReLU; it belongs inside: max(0, W1 xₜ + b1)",
            '''def fcn_tag_logits(X, W1, b1, W2, b2):
    H = np.maximum(X @ W1.T, 0.0) + b1
    return H @ W2.T + b2
'''),
    Mistake("softmax_applied", "a softmax was applied to the scores; the task asks for the raw scores "
            "(logits) yₜ = W2 hₜ + b2",
            '''def fcn_tag_logits(X, W1, b1, W2, b2):
    Y = np.maximum(X @ W1.T + b1, 0.0) @ W2.T + b2
    E = np.exp(Y - Y.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)
'''),
)


# --- task 3: the windowed tagger ----------------------------------------------------------------

def _ref_windowed(X, w, W1, b1, W2, b2):
    return _windowed(np.asarray(X, dtype=float), w, W1, b1, W2, b2)


def _cases_windowed(rng):
    cases = []
    for n, d, w, h, k in [(5, 3, 1, 4, 3), (6, 2, 2, 5, 4), (1, 2, 1, 3, 2), (4, 3, 0, 2, 3), (3, 1, 3, 6, 2)]:
        cases.append((rng.standard_normal((n, d)) + 1.0, w, *_fcn_weights(rng, (2 * w + 1) * d, h, k)))
    return cases


_FCN = '''
def _fcn(F, W1, b1, W2, b2):
    return np.maximum(F @ W1.T + b1, 0.0) @ W2.T + b2
'''

WINDOWED_MISTAKES = (
    Mistake("window_wraps_around", "the window wrapped around the sequence; positions beyond the ends must be "
            "zero vectors",
            _FCN + '''
def windowed_logits(X, w, W1, b1, W2, b2):
    F = np.concatenate([np.roll(X, w - k, axis=0) for k in range(2 * w + 1)], axis=1)
    return _fcn(F, W1, b1, W2, b2)
'''),
    Mistake("window_reversed", "the window was concatenated right to left; W1's columns expect x(t−w) first "
            "and x(t+w) last",
            _FCN + '''
def windowed_logits(X, w, W1, b1, W2, b2):
    n, d = X.shape
    P = np.concatenate([np.zeros((w, d)), X, np.zeros((w, d))])
    F = np.concatenate([P[k:k + n] for k in reversed(range(2 * w + 1))], axis=1)
    return _fcn(F, W1, b1, W2, b2)
'''),
    Mistake("edge_padding", "the ends were padded with copies of the first and last vectors instead of zeros",
            _FCN + '''
def windowed_logits(X, w, W1, b1, W2, b2):
    n = X.shape[0]
    P = np.pad(X, ((w, w), (0, 0)), mode="edge")
    F = np.concatenate([P[k:k + n] for k in range(2 * w + 1)], axis=1)
    return _fcn(F, W1, b1, W2, b2)
'''),
    Mistake("window_summed", "the 2w + 1 vectors of the window were added up instead of concatenated "
            "(then repeated to fit W1); the FCN reads [x(t−w); …; x(t+w)], one block of W1's columns "
            "per position",
            _FCN + '''
def windowed_logits(X, w, W1, b1, W2, b2):
    n, d = X.shape
    P = np.concatenate([np.zeros((w, d)), X, np.zeros((w, d))])
    S = sum(P[k:k + n] for k in range(2 * w + 1))
    return _fcn(np.tile(S, 2 * w + 1), W1, b1, W2, b2)
'''),
)


TASKS = [
    Task(ASSIGNMENT, "window_features", _ref_window, _cases_window, WINDOW_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "fcn_tag_logits", _ref_fcn, _cases_fcn, FCN_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "windowed_logits", _ref_windowed, _cases_windowed, WINDOWED_MISTAKES, setup=SETUP),
]
