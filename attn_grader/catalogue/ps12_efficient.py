"""Catalogue of ps12_efficient: the online softmax and attention computed block by block.

Practises the chapter "Efficient attention": the softmax of a row in one streaming pass with a
running maximum m and a running sum l (Milakov & Gimelshein 2018), one update step of the online
algorithm for one query, and blocked attention over blocks of keys (Dao et al. 2022, FlashAttention)
that never forms the (n_q, n_k) matrix.  The row of task 1 and the keys and values of task 3 come as
a one-pass stream of blocks (:class:`attn_grader.checking.harness.Blocks`): a second pass raises, and a block kept
past the next read becomes NaN, so an answer that reads all of K at once or reads a block twice fails.
References: :func:`attn_ref.efficient.blocked_attention`,
:func:`attn_ref.attention.scaled_dot_product_attention` (equal).
"""

from __future__ import annotations

import copy

import numpy as np

from attn_ref.efficient import blocked_attention

from ..checking.core import Mistake, Task
from ..checking.harness import Blocks
from . import _stability
from ._shared import edited

ASSIGNMENT = "ps12_efficient"
#: The notebook's setup cell.
SETUP = '''import numpy as np


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
'''
#: The tasks that normalise scores with a softmax: each has large-score cases, an unshifted mistake
#: (``max_not_subtracted`` for online_softmax, ``not_stabilised`` for the others) and ``shifted_by_min``
#: (tests/test_stability_cases.py).  None takes a mask.
NORMALISING = ("online_softmax", "online_step", "blocked_attention")


# --- task 1: the online softmax of one row, read as a stream of blocks ------------------------

def _whole(blocks) -> tuple:
    """The arrays a fresh copy of the stream ``blocks`` holds, joined (for the references and the tests)."""
    parts = [tuple(np.array(a) for a in (b if isinstance(b, tuple) else (b,)))  # copied before the next read
             for b in copy.deepcopy(blocks)]
    return tuple(np.concatenate(cols) for cols in zip(*parts, strict=True))


def _ref_online_softmax(blocks):
    (x,) = _whole(blocks)
    m = float(np.max(x))
    l = float(np.sum(np.exp(x - m)))  # noqa: E741
    return m, l


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
    ]
    return [(Blocks((x,), block),) for x, block in rows]


#: The right online softmax: each mistake below changes one step of it.
_ONLINE_SOFTMAX = '''def online_softmax(blocks):
    m, l = -np.inf, 0.0
    for xb in blocks:
        m_new = max(m, np.max(xb))
        l = l * np.exp(m - m_new) + np.sum(np.exp(xb - m_new))
        m = m_new
    return m, l
'''

ONLINE_SOFTMAX_MISTAKES = (
    Mistake("sum_not_rescaled", "the running sum was not rescaled when the maximum grew: "
            "l must become l * exp(m_old - m_new) + Σⱼ exp(xⱼ - m_new)",
            edited(_ONLINE_SOFTMAX, ("l = l * np.exp(m - m_new) + ", "l = l + "))),
    Mistake("max_of_block_only", "the running maximum was replaced by the maximum of the current block; "
            "it must be m_new = max(m_old, max of the block)",
            edited(_ONLINE_SOFTMAX, ("m_new = max(m, np.max(xb))", "m_new = np.max(xb)"))),
    Mistake("read_twice", "the blocks were read twice, a first pass for the maximum m and a second for the "
            "sum l: a stream is read once, and the online softmax needs one pass, rescaling the running sum "
            "by exp(m_old - m_new) whenever the maximum grows",
            '''def online_softmax(blocks):
    m = -np.inf
    for xb in blocks:
        m = max(m, np.max(xb))
    l = 0.0
    for xb in blocks:
        l = l + np.sum(np.exp(xb - m))
    return m, l
'''),
    Mistake("blocks_kept", "the blocks were kept and joined into the whole row (np.concatenate(list(blocks))) "
            "before the maximum and the sum were taken: a stream's block is gone once the next one is read "
            "(here it becomes NaN), so keep only m and l from block to block, in one pass",
            '''def online_softmax(blocks):
    x = np.concatenate(list(blocks))
    m = np.max(x)
    return m, np.sum(np.exp(x - m))
'''),
    Mistake("max_not_subtracted", "exp was taken of the raw scores (no running maximum): exp(1e4) overflows; "
            "subtract the running maximum m",
            '''def online_softmax(blocks):
    m, l = -np.inf, 0.0
    for xb in blocks:
        m = max(m, np.max(xb))
        l = l + np.sum(np.exp(xb))
    return m, l
'''),
    Mistake("shifted_by_min", "a running minimum was kept instead of the running maximum: m must be the "
            "maximum of x, and exp(x_j - min) reaches exp(max - min), which overflows once the scores spread "
            "over more than about 709; keep m_new = max(m_old, max of the block), so that every exponent is <= 0",
            '''def online_softmax(blocks):
    m, l = np.inf, 0.0
    for xb in blocks:
        m_new = min(m, np.min(xb))
        l = l * np.exp(m - m_new) if l > 0 else 0.0
        l = l + np.sum(np.exp(xb - m_new))
        m = m_new
    return m, l
'''),
)


# --- task 2: one step of the online algorithm for one query ------------------------------------

def _ref_online_step(m, l, acc, s, V):  # noqa: E741
    s, V, acc = np.asarray(s, dtype=float), np.asarray(V, dtype=float), np.asarray(acc, dtype=float)
    m_new = max(float(m), float(np.max(s)))
    c = np.exp(m - m_new)
    p = np.exp(s - m_new)
    return m_new, float(l * c + p.sum()), acc * c + p @ V


def _cases_online_step(rng):
    cases = [(-np.inf, 0.0, np.zeros(3), rng.standard_normal(4), rng.standard_normal((4, 3)))]  # first block
    for c, d_v, m_shift in [(5, 2, 2.0), (3, 4, -1.5), (1, 1, 0.5), (6, 3, 3.0), (4, 5, -4.0)]:
        s = rng.standard_normal(c)
        m = float(s.max() + m_shift)  # m_shift > 0: the old maximum stays; < 0: the block brings a new one
        cases.append((m, float(rng.uniform(1, 4)), rng.standard_normal(d_v), s, rng.standard_normal((c, d_v))))
    s = np.array([1e4, 1e4 - 1.0, 0.0])
    cases.append((1e4 - 0.5, 1.3, np.array([0.2, -0.4]), s, rng.standard_normal((3, 2))))  # large scores
    # scores near +1000, a few units apart, the old maximum among them; then near +1000 and -1000; then all near -1000
    for c, wide, low in [(5, False, False), (6, True, False), (5, False, True)]:
        s = _stability.scores(rng, c, wide=wide, low=low)
        cases.append((float(s.max()) - 0.75, 1.5, _stability.small(rng, 2), s, _stability.small(rng, (c, 2))))
    return cases


#: The right online step: the mistakes below change one line of it.
_ONLINE_STEP = '''def online_step(m, l, acc, s, V):
    m_new = max(m, np.max(s))
    c = np.exp(m - m_new)
    p = np.exp(s - m_new)
    return m_new, l * c + np.sum(p), acc * c + p @ V
'''

ONLINE_STEP_MISTAKES = (
    Mistake("acc_not_rescaled", "the running output acc was not rescaled by exp(m_old - m_new) when the "
            "maximum grew (only l was): both must be rescaled by the same factor",
            '''def online_step(m, l, acc, s, V):
    m_new = max(m, np.max(s))
    p = np.exp(s - m_new)
    return m_new, l * np.exp(m - m_new) + np.sum(p), acc + p @ V
'''),
    Mistake("sum_not_rescaled", "the running sum l was not rescaled by exp(m_old - m_new) when the "
            "maximum grew: l_new = l * exp(m_old - m_new) + Σⱼ exp(sⱼ - m_new)",
            edited(_ONLINE_STEP, ("l * c + np.sum(p)", "l + np.sum(p)"))),
    Mistake("max_of_block_only", "the new maximum was the block's maximum alone; it must be "
            "max(m_old, max_j s_j)",
            edited(_ONLINE_STEP, ("m_new = max(m, np.max(s))", "m_new = np.max(s)"))),
    Mistake("block_normalised", "the block's weights were normalised by their own sum before being added; "
            "acc stays unnormalised and is divided by l only at the very end",
            edited(_ONLINE_STEP, ("acc * c + p @ V", "acc * c + (p / np.sum(p)) @ V"))),
    Mistake("not_stabilised", "exp was taken of the raw scores (exp(s_j), and l and acc kept unscaled) "
            "instead of exp(s_j - m_new): exp overflows for large scores (exp(710) is already inf); l and acc "
            "hold sums of exp(s_j - m_new), rescaled by exp(m_old - m_new) when the maximum grows",
            '''def online_step(m, l, acc, s, V):
    m_new = max(m, np.max(s))
    p = np.exp(s)
    return m_new, l + np.sum(p), acc + p @ V
'''),
    Mistake("shifted_by_min", "the running minimum was kept instead of the running maximum (m_new = min(m_old, "
            "min_j s_j)): exp(s_j - m_new) then exceeds 1 and overflows once the scores spread over more than "
            "about 709; m_new = max(m_old, max_j s_j), so that every exponent is <= 0",
            edited(_ONLINE_STEP, ("m_new = max(m, np.max(s))", "m_new = min(m, np.min(s))"))),
    Mistake("output_kept_normalised", "the running output was kept normalised, divided by ℓ at every step "
            "(acc′ = (ℓ · e^(m − m′) · acc + Σⱼ pⱼ vʲ) / ℓ′, the FlashAttention-1 form): a different state from "
            "this task's, where acc stays unnormalised, acc′ = acc · e^(m − m′) + Σⱼ pⱼ vʲ, and is divided by ℓ "
            "only once, after the last block",
            edited(_ONLINE_STEP, ("return m_new, l * c + np.sum(p), acc * c + p @ V",
                                  "l_new = l * c + np.sum(p)\n"
                                  "    return m_new, l_new, (l * c * acc + p @ V) / l_new"))),
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
    return [(Q, Blocks((K, V), block)) for Q, K, V, block in cases]


_BLOCKED_TEMPLATE = '''def blocked_attention(Q, blocks):
    n_q, d_k = Q.shape
    Q = Q / np.sqrt(d_k)
    m = np.full((n_q, 1), -np.inf)
    l = np.zeros((n_q, 1))
    acc = 0.0
    for K_B, V_B in blocks:
        S = Q @ K_B.T
        m_new = np.maximum(m, S.max(axis=1, keepdims=True))
        c = np.exp(m - m_new)
        P = np.exp(S - m_new)
        l = l * c + P.sum(axis=1, keepdims=True)
        acc = acc * c + P @ V_B
        m = m_new
    return acc / l
'''


def _blocked_with(*changes: tuple[str, str]) -> str:
    return edited(_BLOCKED_TEMPLATE, *changes)


BLOCKED_MISTAKES = (
    Mistake("acc_not_rescaled", "the running output was not rescaled by exp(m_old - m_new) when a block "
            "raised the maximum (only the sum was)",
            _blocked_with(("acc = acc * c + P", "acc = acc + P"))),
    Mistake("sum_not_rescaled", "the running sum was not rescaled by exp(m_old - m_new) when a block raised "
            "the maximum (only the output was)",
            _blocked_with(("l = l * c + P", "l = l + P"))),
    Mistake("scale_missing", "the scores were not divided by sqrt(d_k): softmax(Q Kᵀ / sqrt(d_k)) V",
            _blocked_with(("    Q = Q / np.sqrt(d_k)\n", ""))),
    Mistake("not_normalised", "the output was not divided by the running sum l at the end",
            _blocked_with(("return acc / l", "return acc"))),
    Mistake("not_stabilised", "exp was taken of the raw scores (no running maximum: P = exp(S)), so exp "
            "overflows for large scores (exp(710) is already inf) and the output becomes NaN; keep the running "
            "maximum m, take exp(S - m_new) and rescale l and acc by exp(m_old - m_new)",
            _blocked_with(("P = np.exp(S - m_new)", "P = np.exp(S)"), ("c = np.exp(m - m_new)", "c = 1.0"))),
    Mistake("shifted_by_min", "a running minimum of the scores was subtracted instead of the running maximum: "
            "exp(S - m) then reaches exp(max - min), which overflows once a query's scores spread over more than "
            "about 709; keep the running maximum, so that every exponent is <= 0",
            _blocked_with(("m_new = np.maximum(m, S.max(axis=1, keepdims=True))",
                           "m_new = np.minimum(m, S.min(axis=1, keepdims=True))"),
                          ("m = np.full((n_q, 1), -np.inf)", "m = np.full((n_q, 1), np.inf)"),
                          ("c = np.exp(m - m_new)", "c = np.where(np.isinf(m), 0.0, np.exp(m - m_new))"))),
    Mistake("read_twice", "the blocks were read twice, a first pass for each query's maximum and a second for "
            "the sums and the output: a stream of keys is read once; keep the running m, l and acc and rescale "
            "l and acc by exp(m_old - m_new) when a block raises the maximum",
            '''def blocked_attention(Q, blocks):
    Q = Q / np.sqrt(Q.shape[1])
    m = np.full((Q.shape[0], 1), -np.inf)
    for K_B, V_B in blocks:
        m = np.maximum(m, (Q @ K_B.T).max(axis=1, keepdims=True))
    l, acc = 0.0, 0.0
    for K_B, V_B in blocks:
        P = np.exp(Q @ K_B.T - m)
        l = l + P.sum(axis=1, keepdims=True)
        acc = acc + P @ V_B
    return acc / l
'''),
    Mistake("blocks_kept", "the blocks were kept and joined into the whole K and V, and the full (n_q, n_k) "
            "matrix of scores was formed: a stream's block is gone once the next one is read (here it becomes "
            "NaN); compute one (n_q, c) tile of scores per block and keep only m, l and acc",
            '''def blocked_attention(Q, blocks):
    pairs = list(blocks)
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
]
