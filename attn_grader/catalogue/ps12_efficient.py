"""Catalogue of ps12_efficient: the online softmax and attention computed block by block.

Practises the chapter "Efficient attention": the softmax of a row in one streaming pass with a
running maximum mu and a running sum s (Milakov & Gimelshein 2018; FlashAttention's m and l), one
update step of the online algorithm for one query, blocked attention over blocks of keys (Dao et al.
2022, FlashAttention) that never forms the (n_q, n_k) matrix, causal linear attention read as an RNN
(Katharopoulos et al. 2020), and the HBM traffic of standard attention and FlashAttention counted
from their algorithms (the thinking task).  The streamed inputs come as a one-pass stream of blocks
(:class:`attn_grader.checking.harness.Stream`, fed through a pipe in the re-check): a second pass raises, no copy
of it is a stream, a block kept past the next read becomes NaN, and an answer that keeps a copy of every block
(a list, an mmap, a temporary file) runs out of memory on the long cases: in the re-check each long stream is
read by a child process capped hard far below the stream's size (:func:`~attn_grader.checking.harness.call_capped`;
in process, the stream's memory check stops it), so an answer that reads all of K at once, reads a block twice or
copies the blocks fails.
References: :func:`attn_ref.efficient.blocked_attention`,
:func:`attn_ref.attention.scaled_dot_product_attention` (equal), :func:`attn_ref.linear.causal_linear_attention_rnn`,
:mod:`attn_ref.io_model`.  Tasks 4 and 5's references, cases and mistakes are in :mod:`._ps12_linear_io`
(this module would pass the layout's 400 lines).
"""

from __future__ import annotations

import numpy as np

from attn_ref.efficient import blocked_attention

from ..checking.core import Mistake, Task
from ..checking.harness import Blocks
from . import _stability
from ._ps12_linear_io import HBM_MISTAKES, LINEAR_MISTAKES, _cases_hbm, _cases_linear, _ref_hbm, _ref_linear, _whole
from ._shared import edited

ASSIGNMENT = "ps12_efficient"
#: The notebook's setup cell.
SETUP = '''import math

import numpy as np


def stream(*arrays, size):
    """The blocks of `size` rows of the arrays, once each, in order (the last may be shorter): one array per
    block, or a tuple of blocks (one per array) when there are several. A stream, as the grader's: it is read
    in one pass, and a block is overwritten with NaN once the next one is read."""
    current = ()
    for start in range(0, len(arrays[0]), size):
        for b in current:
            b[...] = np.nan
        current = tuple(np.array(a[start:start + size], dtype=float) for a in arrays)
        yield current[0] if len(current) == 1 else current
    for b in current:
        b[...] = np.nan


def phi(x):
    """The feature map of linear attention, elu(x) + 1, entry by entry: x + 1 for x > 0, exp(x) otherwise."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
'''
#: The tasks that normalise scores with a softmax: each has large-score cases, an unshifted mistake
#: (``max_not_subtracted`` for online_softmax, ``not_stabilised`` for the others) and ``shifted_by_min``
#: (tests/test_stability_cases.py).  None takes a mask.
NORMALISING = ("online_softmax", "online_step", "blocked_attention")
#: A long stream's length in float64 numbers (64 MiB): four times the hard memory cap of the re-check's child
#: (harness.CAP_ABOVE), so an answer that keeps every block, even in float32 (in a list, an mmap, behind a released
#: ballast), runs out of memory; in process, far more than the memory check needs (harness.KEPT_CHECK_FROM).
LONG_ROW = 1 << 23


# --- task 1: the online softmax of one row, read as a stream of blocks ------------------------

def _ref_online_softmax(blocks):
    (x,) = _whole(blocks)
    mu = float(np.max(x))
    return mu, float(np.sum(np.exp(x - mu)))


def _cases_online_softmax(rng):
    rows = [
        (rng.standard_normal(7), 3),  # last block partial
        (np.array([1.0, 3.0, 2.0, 5.0, 4.0]), 2),  # the notebook's example
        (rng.standard_normal(10) * 4, 4),
        (np.array([2.5]), 1),  # n = 1
        (rng.standard_normal(6), 10),  # one block larger than the row
        (np.array([1e4, -3.0, 1e4 - 2.0, 5e3, 1e4 - 1.0]), 2),  # large scores
        (np.sort(rng.standard_normal(9)), 2),  # increasing: the maximum moves at every block
        (np.sort(rng.standard_normal(9))[::-1].copy(), 4),  # decreasing: the maximum is in the first block
        (_stability.scores(rng, 7, wide=False), 3),  # near +1000, a few units apart
        (_stability.scores(rng, 8, wide=True), 3),  # near +1000 and -1000
        (_stability.scores(rng, 7, wide=False, low=True), 3),  # all near -1000: every exp underflows to 0
        (rng.standard_normal(LONG_ROW), 1 << 15),  # 64 MiB of scores: an answer that copies the blocks is stopped
    ]
    return [(Blocks((x,), block),) for x, block in rows]


#: The right online softmax: each mistake below changes one step of it.
_ONLINE_SOFTMAX = '''def online_softmax(blocks):
    mu, s = -np.inf, 0.0
    for xb in blocks:
        mu_new = max(mu, np.max(xb))
        s = s * np.exp(mu - mu_new) + np.sum(np.exp(xb - mu_new))
        mu = mu_new
    return mu, s
'''

ONLINE_SOFTMAX_MISTAKES = (
    Mistake("sum_not_rescaled", "the running sum was not rescaled when the maximum grew: "
            "s must become s * exp(μ_old - μ_new) + Σⱼ exp(xⱼ - μ_new)",
            edited(_ONLINE_SOFTMAX, ("s = s * np.exp(mu - mu_new) + ", "s = s + "))),
    Mistake("max_of_block_only", "the running maximum was replaced by the maximum of the current block; "
            "it must be μ_new = max(μ_old, max of the block)",
            edited(_ONLINE_SOFTMAX, ("mu_new = max(mu, np.max(xb))", "mu_new = np.max(xb)"))),
    Mistake("read_twice", "the blocks were read twice, a first pass for the maximum μ and a second for the "
            "sum s: a stream is read once, and the online softmax needs one pass, rescaling the running sum "
            "by exp(μ_old - μ_new) whenever the maximum grows",
            '''def online_softmax(blocks):
    mu = -np.inf
    for xb in blocks:
        mu = max(mu, np.max(xb))
    s = 0.0
    for xb in blocks:
        s = s + np.sum(np.exp(xb - mu))
    return mu, s
'''),
    Mistake("blocks_kept", "the blocks were kept past the next read (a list of them, np.concatenate, "
            "itertools.tee) to use them after the loop: a stream's block is gone once the next one is read "
            "(here it becomes NaN), so keep only μ and s from block to block, in one pass",
            '''def online_softmax(blocks):
    x = np.concatenate(list(blocks))
    mu = np.max(x)
    return mu, np.sum(np.exp(x - mu))
'''),
    Mistake("blocks_copied", "a copy of every block was kept (b.copy()) to join the whole row after the loop: "
            "the stream stops an answer whose memory grows with the blocks it has read; keep only μ and s "
            "from block to block",
            '''def online_softmax(blocks):
    x = np.concatenate([xb.copy() for xb in blocks])
    mu = np.max(x)
    return mu, np.sum(np.exp(x - mu))
'''),
    Mistake("block_max_not_rescaled", "each block's sum was taken relative to the block's own maximum and "
            "added as it was: sums relative to different maxima cannot be added; rescale the running sum by "
            "exp(μ_old - μ_new) and take the block's terms relative to μ_new = max(μ_old, max of the block)",
            '''def online_softmax(blocks):
    mu, s = -np.inf, 0.0
    for xb in blocks:
        s = s + np.sum(np.exp(xb - np.max(xb)))
        mu = max(mu, np.max(xb))
    return mu, s
'''),
    Mistake("max_not_subtracted", "exp was taken of the raw scores (no running maximum): exp(1e4) overflows; "
            "subtract the running maximum μ",
            '''def online_softmax(blocks):
    mu, s = -np.inf, 0.0
    for xb in blocks:
        mu = max(mu, np.max(xb))
        s = s + np.sum(np.exp(xb))
    return mu, s
'''),
    Mistake("shifted_by_min", "a running minimum was kept instead of the running maximum: μ must be the "
            "maximum of x, and exp(x_j - min) reaches exp(max - min), which overflows once the scores spread "
            "over more than about 709; keep μ_new = max(μ_old, max of the block), so that every exponent is <= 0",
            '''def online_softmax(blocks):
    mu, s = np.inf, 0.0
    for xb in blocks:
        mu_new = min(mu, np.min(xb))
        s = s * np.exp(mu - mu_new) if s > 0 else 0.0
        s = s + np.sum(np.exp(xb - mu_new))
        mu = mu_new
    return mu, s
'''),
)


# --- task 2: one step of the online algorithm for one query ------------------------------------

def _ref_online_step(mu, s, acc, scores, V):
    scores, V, acc = (np.asarray(a, dtype=float) for a in (scores, V, acc))
    mu_new = max(float(mu), float(np.max(scores)))
    c = np.exp(mu - mu_new)
    p = np.exp(scores - mu_new)
    return mu_new, float(s * c + p.sum()), acc * c + p @ V


def _cases_online_step(rng):
    cases = [(-np.inf, 0.0, np.zeros(3), rng.standard_normal(4), rng.standard_normal((4, 3)))]  # first block
    for c, d_v, mu_shift in [(5, 2, 2.0), (3, 4, -1.5), (1, 1, 0.5), (6, 3, 3.0), (4, 5, -4.0)]:
        scores = rng.standard_normal(c)
        mu = float(scores.max() + mu_shift)  # mu_shift > 0: the old maximum stays; < 0: the block brings a new one
        cases.append((mu, float(rng.uniform(1, 4)), rng.standard_normal(d_v), scores, rng.standard_normal((c, d_v))))
    scores = np.array([1e4, 1e4 - 1.0, 0.0])
    cases.append((1e4 - 0.5, 1.3, np.array([0.2, -0.4]), scores, rng.standard_normal((3, 2))))  # large scores
    # scores near +1000, a few units apart, the old maximum among them; then near +1000 and -1000; then all near -1000
    for c, wide, low in [(5, False, False), (6, True, False), (5, False, True)]:
        scores = _stability.scores(rng, c, wide=wide, low=low)
        cases.append((float(scores.max()) - 0.75, 1.5, _stability.small(rng, 2), scores,
                      _stability.small(rng, (c, 2))))
    return cases


#: The right online step: the mistakes below change one line of it.
_ONLINE_STEP = '''def online_step(mu, s, acc, scores, V):
    mu_new = max(mu, np.max(scores))
    c = np.exp(mu - mu_new)
    p = np.exp(scores - mu_new)
    return mu_new, s * c + np.sum(p), acc * c + p @ V
'''

ONLINE_STEP_MISTAKES = (
    Mistake("acc_not_rescaled", "the running output acc was not rescaled by exp(μ_old - μ_new) when the "
            "maximum grew (only s was): both must be rescaled by the same factor",
            '''def online_step(mu, s, acc, scores, V):
    mu_new = max(mu, np.max(scores))
    p = np.exp(scores - mu_new)
    return mu_new, s * np.exp(mu - mu_new) + np.sum(p), acc + p @ V
'''),
    Mistake("sum_not_rescaled", "the running sum s was not rescaled by exp(μ_old - μ_new) when the "
            "maximum grew: s_new = s * exp(μ_old - μ_new) + Σⱼ exp(scoresⱼ - μ_new)",
            edited(_ONLINE_STEP, ("s * c + np.sum(p)", "s + np.sum(p)"))),
    Mistake("max_of_block_only", "the new maximum was the block's maximum alone; it must be "
            "max(μ_old, maxⱼ scoresⱼ)",
            edited(_ONLINE_STEP, ("mu_new = max(mu, np.max(scores))", "mu_new = np.max(scores)"))),
    Mistake("block_normalised", "the block's weights were normalised by their own sum before being added; "
            "acc stays unnormalised and is divided by s only at the very end",
            edited(_ONLINE_STEP, ("acc * c + p @ V", "acc * c + (p / np.sum(p)) @ V"))),
    Mistake("not_stabilised", "exp was taken of the raw scores (exp(scoresⱼ), and s and acc kept unscaled) "
            "instead of exp(scoresⱼ - μ_new): exp overflows for large scores (exp(710) is already inf); s and "
            "acc hold sums of exp(scoresⱼ - μ_new), rescaled by exp(μ_old - μ_new) when the maximum grows",
            '''def online_step(mu, s, acc, scores, V):
    mu_new = max(mu, np.max(scores))
    p = np.exp(scores)
    return mu_new, s + np.sum(p), acc + p @ V
'''),
    Mistake("shifted_by_min", "the running minimum was kept instead of the running maximum (μ_new = min(μ_old, "
            "minⱼ scoresⱼ)): exp(scoresⱼ - μ_new) then exceeds 1 and overflows once the scores spread over more "
            "than about 709; μ_new = max(μ_old, maxⱼ scoresⱼ), so that every exponent is <= 0",
            edited(_ONLINE_STEP, ("mu_new = max(mu, np.max(scores))", "mu_new = min(mu, np.min(scores))"))),
    Mistake("output_kept_normalised", "the running output was kept normalised, divided by s at every step "
            "(acc′ = (s · exp(μ − μ′) · acc + Σⱼ pⱼ vʲ) / s′, the FlashAttention-1 form): a different state from "
            "this task's, where acc stays unnormalised, acc′ = acc · exp(μ − μ′) + Σⱼ pⱼ vʲ, and is divided by s "
            "only once, after the last block",
            edited(_ONLINE_STEP, ("return mu_new, s * c + np.sum(p), acc * c + p @ V",
                                  "s_new = s * c + np.sum(p)\n"
                                  "    return mu_new, s_new, (s * c * acc + p @ V) / s_new"))),
)


# --- task 3: blocked attention over a stream of blocks of keys and values ----------------------

def _ref_blocked(Q, blocks):
    K, V = _whole(blocks)
    return blocked_attention(Q, K, V, block=len(K) or 1)  # equals scaled_dot_product_attention(Q, K, V)[0]


def _cases_blocked(rng):
    cases = []
    for n_q, n_k, d_k, d_v, block in [(5, 7, 4, 3, 3), (1, 1, 2, 2, 4), (6, 10, 8, 5, 4), (4, 9, 3, 2, 2),
                                      (3, 8, 2, 6, 8), (7, 11, 5, 1, 5)]:
        cases.append((rng.standard_normal((n_q, d_k)), rng.standard_normal((n_k, d_k)),
                      rng.standard_normal((n_k, d_v)), block))
    Q = rng.standard_normal((3, 4)) * 60  # large scores: exp overflows without the running maximum
    cases.append((Q, rng.standard_normal((9, 4)) * 60, rng.standard_normal((9, 3)), 4))
    # scores near +1000, a few units apart (a shift by the minimum still works); then near +1000 and -1000
    for n_q, n_k, wide in [(3, 9, False), (4, 10, True)]:
        Q, K = _stability.query_keys(rng, n_q, n_k, 4, wide=wide)
        cases.append((Q, K, _stability.small(rng, (n_k, 3)), 4))
    Q, K = _stability.query_keys(rng, 4, 7, 4, wide=False, rows_signed=True)  # rows all near -1000 or +1000
    cases.append((Q, K, _stability.small(rng, (7, 3)), 3))
    # 64 MiB of keys and values (524288 x (8 + 8) floats): an answer that copies the blocks is stopped
    cases.append((rng.standard_normal((3, 8)), rng.standard_normal((LONG_ROW // 16, 8)),
                  rng.standard_normal((LONG_ROW // 16, 8)), 1 << 13))
    return [(Q, Blocks((K, V), block)) for Q, K, V, block in cases]


_BLOCKED_TEMPLATE = '''def blocked_attention(Q, blocks):
    n_q, d_k = Q.shape
    Q = Q / np.sqrt(d_k)
    mu = np.full((n_q, 1), -np.inf)
    s = np.zeros((n_q, 1))
    acc = 0.0
    for K_B, V_B in blocks:
        S = Q @ K_B.T
        mu_new = np.maximum(mu, S.max(axis=1, keepdims=True))
        c = np.exp(mu - mu_new)
        P = np.exp(S - mu_new)
        s = s * c + P.sum(axis=1, keepdims=True)
        acc = acc * c + P @ V_B
        mu = mu_new
    return acc / s
'''


def _blocked_with(*changes: tuple[str, str]) -> str:
    return edited(_BLOCKED_TEMPLATE, *changes)


BLOCKED_MISTAKES = (
    Mistake("acc_not_rescaled", "the running output was not rescaled by exp(μ_old - μ_new) when a block "
            "raised the maximum (only the sum was)",
            _blocked_with(("acc = acc * c + P", "acc = acc + P"))),
    Mistake("sum_not_rescaled", "the running sum was not rescaled by exp(μ_old - μ_new) when a block raised "
            "the maximum (only the output was)",
            _blocked_with(("s = s * c + P", "s = s + P"))),
    Mistake("block_max_not_rescaled", "each block's weights were taken relative to the block's own maximum "
            "and added to the running sum and output as they were: terms relative to different maxima cannot be "
            "added; keep the running maximum μ and rescale s and acc by exp(μ_old - μ_new) when it grows",
            _blocked_with(("P = np.exp(S - mu_new)", "P = np.exp(S - S.max(axis=1, keepdims=True))"),
                          ("c = np.exp(mu - mu_new)", "c = 1.0"))),
    Mistake("blocks_normalised_separately", "each block was normalised by its own sum (a softmax per block) "
            "and the blocks' outputs were averaged: the weights of one query sum to 1 over all keys, not over "
            "each block; keep the unnormalised acc and s across the blocks and divide once at the end",
            '''def blocked_attention(Q, blocks):
    Q = Q / np.sqrt(Q.shape[1])
    out, count = 0.0, 0
    for K_B, V_B in blocks:
        S = Q @ K_B.T
        P = np.exp(S - S.max(axis=1, keepdims=True))
        out = out + (P / P.sum(axis=1, keepdims=True)) @ V_B
        count += 1
    return out / count
'''),
    Mistake("scale_missing", "the scores were not divided by sqrt(d_k): softmax(Q @ K.T / sqrt(d_k)) @ V",
            _blocked_with(("    Q = Q / np.sqrt(d_k)\n", ""))),
    Mistake("not_normalised", "the output was not divided by the running sum s at the end",
            _blocked_with(("return acc / s", "return acc"))),
    Mistake("not_stabilised", "exp was taken of the raw scores (no running maximum: P = exp(S)), so exp "
            "overflows for large scores (exp(710) is already inf) and the output becomes NaN; keep the running "
            "maximum μ, take exp(S - μ_new) and rescale s and acc by exp(μ_old - μ_new)",
            _blocked_with(("P = np.exp(S - mu_new)", "P = np.exp(S)"), ("c = np.exp(mu - mu_new)", "c = 1.0"))),
    Mistake("shifted_by_min", "a running minimum of the scores was subtracted instead of the running maximum: "
            "exp(S - μ) then reaches exp(max - min), which overflows once a query's scores spread over more than "
            "about 709; keep the running maximum, so that every exponent is <= 0",
            _blocked_with(("mu_new = np.maximum(mu, S.max(axis=1, keepdims=True))",
                           "mu_new = np.minimum(mu, S.min(axis=1, keepdims=True))"),
                          ("mu = np.full((n_q, 1), -np.inf)", "mu = np.full((n_q, 1), np.inf)"),
                          ("c = np.exp(mu - mu_new)", "c = np.where(np.isinf(mu), 0.0, np.exp(mu - mu_new))"))),
    Mistake("read_twice", "the blocks were read twice, a first pass for each query's maximum and a second for "
            "the sums and the output: a stream of keys is read once; keep the running μ, s and acc and rescale "
            "s and acc by exp(μ_old - μ_new) when a block raises the maximum",
            '''def blocked_attention(Q, blocks):
    Q = Q / np.sqrt(Q.shape[1])
    mu = np.full((Q.shape[0], 1), -np.inf)
    for K_B, V_B in blocks:
        mu = np.maximum(mu, (Q @ K_B.T).max(axis=1, keepdims=True))
    s, acc = 0.0, 0.0
    for K_B, V_B in blocks:
        P = np.exp(Q @ K_B.T - mu)
        s = s + P.sum(axis=1, keepdims=True)
        acc = acc + P @ V_B
    return acc / s
'''),
    Mistake("blocks_kept", "the blocks of keys and values were kept past the next read (a list of them, "
            "np.concatenate, itertools.tee) to use them after the loop: a stream's block is gone once the next one "
            "is read (here it becomes NaN); compute one (n_q, c) tile of scores per block and keep only μ, s and acc",
            '''def blocked_attention(Q, blocks):
    pairs = list(blocks)
    K = np.concatenate([K_B for K_B, V_B in pairs])
    V = np.concatenate([V_B for K_B, V_B in pairs])
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True) @ V
'''),
    Mistake("blocks_copied", "a copy of every block was kept (K_B.copy(), V_B.copy()) to form the full (n_q, n_k) "
            "matrix of scores after the loop: the stream stops an answer whose memory grows with the blocks it "
            "has read; compute one (n_q, c) tile of scores per block and keep only μ, s and acc",
            '''def blocked_attention(Q, blocks):
    pairs = [(K_B.copy(), V_B.copy()) for K_B, V_B in blocks]
    K = np.concatenate([K_B for K_B, V_B in pairs])
    V = np.concatenate([V_B for K_B, V_B in pairs])
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True) @ V
'''),
)


TASKS = [
    Task(ASSIGNMENT, "online_softmax", _ref_online_softmax, _cases_online_softmax, ONLINE_SOFTMAX_MISTAKES,
         setup=SETUP),
    Task(ASSIGNMENT, "online_step", _ref_online_step, _cases_online_step, ONLINE_STEP_MISTAKES,
         setup=SETUP),
    Task(ASSIGNMENT, "blocked_attention", _ref_blocked, _cases_blocked, BLOCKED_MISTAKES,
         setup=SETUP),
    Task(ASSIGNMENT, "causal_linear_attention", _ref_linear, _cases_linear, LINEAR_MISTAKES,
         setup=SETUP),
    Task(ASSIGNMENT, "hbm_bytes", _ref_hbm, _cases_hbm, HBM_MISTAKES, rtol=0.0, atol=0.5,  # whole bytes
         setup=SETUP),
]
