"""Catalogue of ps02_sequence_labeling: a fully connected network per token, then per window.

Practises the chapter "Sequence labeling without attention" (Sequence Labeling): the window
features [a^(t-r); ...; a^t; ...; a^(t+r)] with zero padding, the same two-layer FCN on every
vector, the two combined, and how far L stacked windowed layers see (|t - s| <= L r).  Weights have
nn.Linear's shape (d_out, d_in).
References: :func:`attn_ref.seqlabel.window_features`, :func:`attn_ref.seqlabel.fcn_tag_logits`,
:func:`attn_ref.seqlabel.windowed_logits`.
"""

from __future__ import annotations

import numpy as np

from attn_ref.seqlabel import fcn_tag_logits as _fcn
from attn_ref.seqlabel import window_features as _window
from attn_ref.seqlabel import windowed_logits as _windowed

from ..checking.core import Mistake, Task
from ._shared import edited

ASSIGNMENT = "ps02_sequence_labeling"
SETUP = "import numpy as np"


def _fcn_weights(rng, d, h, k):
    return (rng.standard_normal((h, d)), rng.standard_normal(h), rng.standard_normal((k, h)), rng.standard_normal(k))


# --- task 1: window features --------------------------------------------------------------------

def _ref_window(X, r):
    return _window(np.asarray(X, dtype=float), r)


def _cases_window(rng):
    cases = []
    for n, d, r in [(6, 3, 1), (5, 2, 2), (7, 1, 3), (4, 4, 0), (1, 3, 2), (3, 2, 4)]:  # r = 0; r >= n
        cases.append((rng.standard_normal((n, d)) + 1.0, r))  # shifted: padding with 0 differs from edge copies
    return cases


WINDOW_MISTAKES = (
    Mistake("wrap_around", "the window wrapped around the sequence (the first word saw the last one as its "
            "left neighbour); positions beyond the ends must be zero vectors",
            '''def window_features(X, r):
    return np.concatenate([np.roll(X, r - k, axis=0) for k in range(2 * r + 1)], axis=1)
'''),
    Mistake("edge_padding", "the ends were padded with copies of the first and last vectors; the padding must "
            "be zero vectors",
            '''def window_features(X, r):
    n = X.shape[0]
    P = np.pad(X, ((r, r), (0, 0)), mode="edge")
    return np.concatenate([P[k:k + n] for k in range(2 * r + 1)], axis=1)
'''),
    Mistake("no_padding", "no padding: only the n - 2w positions with a full window were returned; every one "
            "of the n vectors gets a row, with zero vectors beyond the ends",
            '''def window_features(X, r):
    n = X.shape[0]
    return np.concatenate([X[k:n - 2 * r + k] for k in range(2 * r + 1)], axis=1)
'''),
    Mistake("reversed_order", "the window was concatenated right to left; the order is a(t−r), …, a(t), …, "
            "a(t+r)",
            '''def window_features(X, r):
    n, d = X.shape
    P = np.concatenate([np.zeros((r, d)), X, np.zeros((r, d))])
    return np.concatenate([P[k:k + n] for k in reversed(range(2 * r + 1))], axis=1)
'''),
    Mistake("interleaved_per_dimension", "the window's vectors were stacked on a new last axis and reshaped "
            "(np.stack(..., axis=2).reshape), which interleaves them component by component; the row is the "
            "2r + 1 whole vectors one after the other: a(t−r), …, a(t), …, a(t+r)",
            '''def window_features(X, r):
    n, d = X.shape
    P = np.concatenate([np.zeros((r, d)), X, np.zeros((r, d))])
    return np.stack([P[k:k + n] for k in range(2 * r + 1)], axis=2).reshape(n, -1)
'''),
    Mistake("window_off_by_one", "the window has 2r + 3 positions (r + 1 on each side); it has 2r + 1: "
            "r on each side plus the vector itself",
            '''def window_features(X, r):
    n, d = X.shape
    r = r + 1
    P = np.concatenate([np.zeros((r, d)), X, np.zeros((r, d))])
    return np.concatenate([P[k:k + n] for k in range(2 * r + 1)], axis=1)
'''),
)


# --- task 2: the same FCN on every vector -------------------------------------------------------

def _ref_fcn(X, W1, beta1, W2, beta2):
    return _fcn(np.asarray(X, dtype=float), W1, beta1, W2, beta2)


def _cases_fcn(rng):
    cases = []
    for n, d, h, k in [(4, 5, 6, 3), (1, 3, 4, 2), (7, 2, 8, 5), (3, 6, 3, 1), (5, 4, 4, 3)]:  # d = d_hid: W1 square
        cases.append((rng.standard_normal((n, d)), *_fcn_weights(rng, d, h, k)))
    return cases


FCN_MISTAKES = (
    Mistake("no_relu", "the ReLU between the two layers is missing: zᵗ = W2 max(0, W1 aᵗ + β₁) + β₂",
            '''def fcn_tag_logits(X, W1, beta1, W2, beta2):
    return (X @ W1.T + beta1) @ W2.T + beta2
'''),
    Mistake("relu_on_output", "a ReLU was also applied to the output scores; the tag scores "
            "zᵗ = W2 max(0, W1 aᵗ + β₁) + β₂ are not clipped (they may be negative)",
            '''def fcn_tag_logits(X, W1, beta1, W2, beta2):
    H = np.maximum(X @ W1.T + beta1, 0.0)
    return np.maximum(H @ W2.T + beta2, 0.0)
'''),
    Mistake("w1_not_transposed", "X @ W1 was computed without transposing W1; W1 has nn.Linear's shape "
            "(d_hid, d_in), so the rows aᵗ of X are mapped by X @ W1.T (with a square W1 the untransposed product "
            "runs and is wrong)",
            '''def fcn_tag_logits(X, W1, beta1, W2, beta2):
    H = np.maximum(X @ W1 + beta1, 0.0)
    return H @ W2.T + beta2
'''),
    Mistake("bias_after_relu", "β₁ was added after the ReLU; it belongs inside: max(0, W1 aᵗ + β₁)",
            '''def fcn_tag_logits(X, W1, beta1, W2, beta2):
    H = np.maximum(X @ W1.T, 0.0) + beta1
    return H @ W2.T + beta2
'''),
    Mistake("softmax_applied", "a softmax was applied to the scores; the task asks for the raw scores "
            "(logits) zᵗ = W2 max(0, W1 aᵗ + β₁) + β₂",
            '''def fcn_tag_logits(X, W1, beta1, W2, beta2):
    Y = np.maximum(X @ W1.T + beta1, 0.0) @ W2.T + beta2
    E = np.exp(Y - Y.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)
'''),
)


# --- task 3: the windowed tagger ----------------------------------------------------------------

def _ref_windowed(X, r, W1, beta1, W2, beta2):
    return _windowed(np.asarray(X, dtype=float), r, W1, beta1, W2, beta2)


def _cases_windowed(rng):
    cases = []
    for n, d, r, h, k in [(5, 3, 1, 4, 3), (6, 2, 2, 5, 4), (1, 2, 1, 3, 2), (4, 3, 0, 2, 3), (3, 1, 3, 6, 2)]:
        cases.append((rng.standard_normal((n, d)) + 1.0, r, *_fcn_weights(rng, (2 * r + 1) * d, h, k)))
    return cases


_FCN = '''
def _fcn(F, W1, beta1, W2, beta2):
    return np.maximum(F @ W1.T + beta1, 0.0) @ W2.T + beta2
'''

WINDOWED_MISTAKES = (
    Mistake("window_wraps_around", "the window wrapped around the sequence; positions beyond the ends must be "
            "zero vectors",
            _FCN + '''
def windowed_logits(X, r, W1, beta1, W2, beta2):
    F = np.concatenate([np.roll(X, r - k, axis=0) for k in range(2 * r + 1)], axis=1)
    return _fcn(F, W1, beta1, W2, beta2)
'''),
    Mistake("window_reversed", "the window was concatenated right to left; W1's columns expect a(t−r) first "
            "and a(t+r) last",
            _FCN + '''
def windowed_logits(X, r, W1, beta1, W2, beta2):
    n, d = X.shape
    P = np.concatenate([np.zeros((r, d)), X, np.zeros((r, d))])
    F = np.concatenate([P[k:k + n] for k in reversed(range(2 * r + 1))], axis=1)
    return _fcn(F, W1, beta1, W2, beta2)
'''),
    Mistake("edge_padding", "the ends were padded with copies of the first and last vectors instead of zeros",
            _FCN + '''
def windowed_logits(X, r, W1, beta1, W2, beta2):
    n = X.shape[0]
    P = np.pad(X, ((r, r), (0, 0)), mode="edge")
    F = np.concatenate([P[k:k + n] for k in range(2 * r + 1)], axis=1)
    return _fcn(F, W1, beta1, W2, beta2)
'''),
    Mistake("window_summed", "the 2r + 1 vectors of the window were added up instead of concatenated "
            "(then repeated to fit W1); the FCN reads [a(t−r); …; a(t+r)], one block of W1's columns "
            "per position",
            _FCN + '''
def windowed_logits(X, r, W1, beta1, W2, beta2):
    n, d = X.shape
    P = np.concatenate([np.zeros((r, d)), X, np.zeros((r, d))])
    S = sum(P[k:k + n] for k in range(2 * r + 1))
    return _fcn(np.tile(S, 2 * r + 1), W1, beta1, W2, beta2)
'''),
)



# --- task 4: how far a stack of windowed layers sees --------------------------------------------

def _ref_reach(n, r, L):
    t = np.arange(n)
    return np.abs(t[:, None] - t[None, :]) <= L * r


def _cases_reach(rng):
    fixed = [(9, 1, 3), (12, 2, 2), (6, 3, 1), (5, 0, 4), (7, 2, 0), (1, 2, 3), (20, 1, 5), (8, 4, 3)]
    # issue 41: drawn sizes too, so that the self-check (fresh draws only) and the re-check get cases of their own
    drawn = [(int(rng.integers(2, 25)), int(rng.integers(1, 5)), int(rng.integers(1, 6))) for _ in range(6)]
    return fixed + drawn


#: The right answer; each mistake below edits it.
_REACH = '''def stacked_reach(n, r, L):
    t = np.arange(n)
    return np.abs(t[:, None] - t[None, :]) <= L * r
'''

REACH_MISTAKES = (
    Mistake("one_layer_only", "the reach of one layer was returned whatever L; a layer above reads positions that "
            "themselves read their neighbours in the layer below: follow how far the reach grows with each layer you "
            "add",
            edited(_REACH, ("<= L * r", "<= r"))),
    Mistake("window_width_times_layers", "the reach was taken as the window's whole width times L; the width counts "
            "both sides and the centre, but a distance |t − s| is measured to one side only: count what each layer "
            "adds on one side",
            edited(_REACH, ("<= L * r", "<= (2 * r + 1) * L"))),
    Mistake("radius_plus_layers", "the number of layers was added to the radius, as if each further layer reached one "
            "position more; each layer widens the reach by its whole radius, not by one: count what L layers add up to",
            edited(_REACH, ("<= L * r", "<= r + L - 1"))),
    Mistake("reach_to_the_power", "the reach was taken as r to the power L, as if each layer multiplied the radius; a "
            "layer adds its radius to the reach of the layer below, it does not multiply it",
            edited(_REACH, ("<= L * r", "<= r ** L"))),
    Mistake("reach_doubled", "the reaches to the left and to the right were added up, so the distance allowed is twice "
            "too large; the reach is how far each side goes, measured from t",
            edited(_REACH, ("<= L * r", "<= 2 * L * r"))),
    Mistake("one_sided_reach", "only the positions at or before t were counted, as if each window looked back only; "
            "a window of radius r reads positions on both sides of t: count how far that goes after L layers",
            edited(_REACH, ("return np.abs(t[:, None] - t[None, :]) <= L * r",
                            "d = t[:, None] - t[None, :]\n    return (d >= 0) & (d <= L * r)"))),
)

TASKS = [
    Task(ASSIGNMENT, "window_features", _ref_window, _cases_window, WINDOW_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "fcn_tag_logits", _ref_fcn, _cases_fcn, FCN_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "windowed_logits", _ref_windowed, _cases_windowed, WINDOWED_MISTAKES, setup=SETUP),
    Task(ASSIGNMENT, "stacked_reach", _ref_reach, _cases_reach, REACH_MISTAKES, setup=SETUP),
]
